"""The house (doc/design.md 8 and 9.1): the layers are the map in
design.md, imports run down them, every module has its mirrored test
file, and a module over the size is one concept listed with its reason.

These read the package's source with ``ast``; nothing is imported.
"""

import ast
import collections
import os
import re

import pytest

from tests import paths

PACKAGE = os.path.join(paths.REPO, 'kvmtune')
UNIT = os.path.join(paths.REPO, 'tests', 'unit')

DESIGN = os.path.join(paths.REPO, 'doc', 'design.md')

# doc/design.md 9.1's map, top to bottom (test_the_map_is_these_layers). A
# group may import from the lines above it and from its own line, as long
# as the groups of one line form no cycle.
LAYERS = (
    {'kvmtune', 'errors', 'fileio', 'inputs', 'jsonout', 'extras', 'conf',
     'privileged', 'nova_releases', 'yamlinput', 'textfile',
     'venvs', 'pagesize', 'stats'},
    {'facts'},
    {'tuning'},
    {'openstack', 'boot'},
    {'verify', 'capacity', 'rollout'},
    {'workloads'},
    {'results'},
    {'image', 'bench', 'report', 'rally'},
    {'testcloud'},
    {'cli', 'cmd', 'mainjob', 'devstack', 'tempest_plugin'},
)
LAYER = {group: n for n, line in enumerate(LAYERS) for group in line}

# Not modules of kvmtune's own code: files the test cloud installs into
# its services (run by them, tested by tests/functional/testcloud) and
# Tempest's tests, which are tests themselves.
NOT_MIRRORED = ('testcloud/files/', 'tempest_plugin/tests/')

# Test files that mirror no single module, each with what it tests.
TOPICS = {
    'test_accel.py': 'tests/accel.py, the accelerator the functional tier '
                     'finds',
    'test_docs.py': 'README and the guides against the CLI parser',
    'test_guestwatch.py': 'tests/guestwatch.py, the host\'s watch over a '
                          'guest',
    'test_hang.py': 'the test run\'s hang bound',
    'test_hacking.py': 'tools/hacking/checks.py, the local flake8 checks',
    'test_hostile.py': 'hostile input across every reader',
    'test_house.py': 'this file: the layers, the cycles, the mirror, '
                     'module size',
    'test_install.py': 'README\'s Install lines, run as written',
    'test_prometheus_rules.py': 'kvmtune/data/prometheus/kvmtune.rules.yml '
                                'through promtool',
    'test_strict.py': 'tests/strict.py, CI\'s strict mode',
    'test_timing_asserts.py': 'no timing assertion in the tests',
    'test_trees.py': 'tests/trees.py, the pinned upstream checkouts',
    'boot/test_agreement.py': 'plan, verify, boot apply and rollout '
                              '--check agree on every fixture host',
    'cmd/test_formats.py': '-f on every reading command (the command table)',
    'devstack/test_plugin.py': 'devstack/plugin.sh, the DevStack contract',
    'devstack/test_shim.py': 'tests/devstack_shim, DevStack\'s functions',
    'facts/test_fixtures.py': 'the captured hosts under tests/fixtures',
    'facts/test_gather.py': 'facts.gather over whole host trees',
    'facts/test_load.py': 'facts.load of a facts file',
    'facts/test_real_hosts.py': 'gather on captures of real machines',
    'image/test_guestlib.py': 'kvmtune/image/guestlib.sh, the guest side',
    'mainjob/test_profile.py': 'the main job\'s tuned profile on hosts',
    'rally/test_tasks.py': 'the task files through Rally\'s task engine',
    'tuning/novaconf/test_rules_cpu_models.py': 'the cpu_models rule '
                                                'against Nova',
    'tuning/tuners/test_tuners.py': 'every tuner through stevedore',
    'workloads/test_workloads.py': 'the workload definitions',
}


# One concept per module (doc/design.md 8), whatever its length: there is
# no line ceiling, and a module is neither split nor trimmed to meet a
# count. A module past SECOND_LOOK lines gets a second look: it is listed
# here with the reason it is one concept (none is, today).
SECOND_LOOK = 1000
OVERSIZE: dict[str, str] = {}


# Package data, not kvmtune's modules: the kvmtune.fleet collection's
# plugins are Ansible's (imported by ansible-core, held by ansible-test
# sanity; tested by tests/unit/rollout/test_events.py, test_playbook.py).
PACKAGE_DATA = ('data/ansible_collections/',)


def _modules():
    for root, _dirs, files in os.walk(PACKAGE):
        if os.path.relpath(root, PACKAGE).replace(os.sep, '/') \
                .startswith(tuple(d.rstrip('/') for d in PACKAGE_DATA)):
            continue
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(root, name)
                yield os.path.relpath(path, PACKAGE).replace(os.sep, '/')


def _group(module):
    parts = module.split('.')
    if parts[0] != 'kvmtune':
        return None
    if len(parts) == 1:
        return 'kvmtune'
    return parts[1]


def _imports(rel):
    """(group, line, imported module) of every kvmtune import in ``rel``,
    those inside functions included."""
    with open(os.path.join(PACKAGE, rel), encoding='utf-8') as f:
        tree = ast.parse(f.read(), rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == 'kvmtune':
                names = [f'kvmtune.{alias.name}' for alias in node.names]
        else:
            continue
        for name in names:
            if _group(name):
                yield _group(name), node.lineno, name


def _own_group(rel):
    return _group(_module(rel))


def _module(rel):
    """The dotted name of the module at ``rel`` (a package: its name)."""
    return 'kvmtune' + ''.join(
        '.' + part for part in rel[:-3].split('/')).removesuffix('.__init__')


def _edges():
    edges = collections.defaultdict(list)
    for rel in _modules():
        src = _own_group(rel)
        for dst, line, name in _imports(rel):
            if dst != src:
                edges[src, dst].append(f'kvmtune/{rel}:{line} imports {name}')
    return edges


def test_every_group_has_a_layer():
    groups = {_own_group(rel) for rel in _modules()}
    assert groups - set(LAYER) == set(), (
        'put the new package or top-level module on a line of LAYERS '
        '(and of doc/design.md 9.1)')


def test_imports_run_down_the_layers():
    upward = [where for (src, dst), sites in _edges().items()
              if LAYER.get(dst, -1) > LAYER.get(src, -1) for where in sites]
    assert upward == []


def _cycles(edges):
    """Groups of one line that reach themselves through that line. A
    ``__main__`` module is a program that nothing imports (``python -m
    kvmtune.mainjob`` calls the CLI): its imports close no cycle."""
    line = {(src, dst) for (src, dst), sites in edges.items()
            if LAYER.get(src) == LAYER.get(dst)
            and not all('/__main__.py:' in site for site in sites)}
    return sorted(group for members in _module_cycles(line)
                  for group in members)


def test_no_cycle_between_the_groups_of_one_line():
    assert _cycles(_edges()) == []


def test_the_checks_see_an_upward_import(tmp_path, monkeypatch):
    """The checks can fail: a module of the base importing the shells, a
    lazy import up, and two groups of one line importing each other."""
    base = tmp_path / 'kvmtune'
    (base / 'facts').mkdir(parents=True)
    (base / 'errors.py').write_text('from kvmtune import cli\n')
    (base / 'facts' / 'x.py').write_text(
        'def f():\n    from kvmtune.tuning import plan\n')
    (base / 'cli.py').write_text('')
    (base / 'bench').mkdir()
    (base / 'bench' / 'a.py').write_text('import kvmtune.report.b\n')
    (base / 'report').mkdir()
    (base / 'report' / 'b.py').write_text('from kvmtune.bench import a\n')
    monkeypatch.setattr(__import__(__name__, fromlist=['x']), 'PACKAGE',
                        str(base))
    found = [where for (src, dst), sites in _edges().items()
             if LAYER[dst] > LAYER[src] for where in sites]
    assert sorted(found) == ['kvmtune/errors.py:1 imports kvmtune.cli',
                             'kvmtune/facts/x.py:2 imports kvmtune.tuning']
    assert _cycles(_edges()) == ['bench', 'report']


def _module_edges():
    """{(module, imported module): [sites]} between modules of one group
    (package), imports inside functions and under TYPE_CHECKING included:
    ``from kvmtune.a import b`` is an edge to module ``kvmtune.a.b`` when
    there is one, else to the package ``kvmtune.a``. A ``__main__`` module
    (a program nothing imports) closes no cycle."""
    names = {_module(rel) for rel in _modules()}
    edges = collections.defaultdict(list)
    for rel in _modules():
        if rel.endswith('__main__.py'):
            continue
        src = _module(rel)
        with open(os.path.join(PACKAGE, rel), encoding='utf-8') as f:
            tree = ast.parse(f.read(), rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                found = [f'{node.module}.{alias.name}'
                         if f'{node.module}.{alias.name}' in names
                         else node.module for alias in node.names]
            else:
                continue
            for name in found:
                while name and name not in names:
                    name = name.rpartition('.')[0]
                if name and name != src and _group(name) == _group(src):
                    edges[src, name].append(
                        f'kvmtune/{rel}:{node.lineno} imports {name}')
    return edges


def _module_cycles(edges):
    """The nodes of ``edges`` ((src, dst) pairs: modules of one package,
    or groups of one line) that reach themselves, each cycle as its sorted
    members (Tarjan's strongly connected components)."""
    graph = collections.defaultdict(set)
    for src, dst in edges:
        graph[src].add(dst)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_cycle_between_the_modules_of_one_package():
    """No import circle inside a package, hidden behind an import inside
    a function or not (doc/design.md 9.1): each cycle with the lines that
    close it."""
    edges = _module_edges()
    cycles = _module_cycles(edges)
    assert [(members, [site for (src, dst), sites in sorted(edges.items())
                       if src in members and dst in members
                       for site in sites])
            for members in cycles] == []


def test_the_module_check_sees_a_circle_behind_a_lazy_import(
        tmp_path, monkeypatch):
    """It can fail: two modules of one package, one importing the other at
    the top and the other importing it back inside a function; a third
    pair across two packages is no cycle of one package."""
    base = tmp_path / 'kvmtune'
    (base / 'rollout').mkdir(parents=True)
    (base / 'rollout' / '__init__.py').write_text('')
    (base / 'rollout' / 'preflight.py').write_text(
        'from kvmtune.rollout import density\n')
    (base / 'rollout' / 'density.py').write_text(
        'def f():\n    from kvmtune.rollout.preflight import x\n')
    (base / 'rollout' / 'gate.py').write_text(
        'from kvmtune.rollout import density\n')
    (base / 'verify').mkdir()
    (base / 'verify' / 'a.py').write_text(
        'from kvmtune.rollout import gate\n')
    (base / 'rollout' / 'check.py').write_text(
        'from kvmtune.verify import a\n')
    monkeypatch.setattr(__import__(__name__, fromlist=['x']), 'PACKAGE',
                        str(base))
    assert _module_cycles(_module_edges()) == [
        ['kvmtune.rollout.density', 'kvmtune.rollout.preflight']]
    assert _module_edges()['kvmtune.rollout.density',
                           'kvmtune.rollout.preflight'] == [
        'kvmtune/rollout/density.py:2 imports kvmtune.rollout.preflight']


def _mirror(rel):
    folder, name = os.path.split(rel)
    return os.path.join(folder, 'test_' + name).replace(os.sep, '/')


def _mirrored():
    return [rel for rel in _modules()
            if not rel.endswith('__init__.py')
            and not rel.startswith(NOT_MIRRORED)]


@pytest.mark.parametrize('rel', sorted(_mirrored()))
def test_module_has_its_mirrored_test_file(rel):
    test = os.path.join(UNIT, _mirror(rel))
    assert os.path.isfile(test), (
        f'kvmtune/{rel}: its tests belong in tests/unit/{_mirror(rel)}')


def test_every_test_file_mirrors_a_module_or_names_its_topic():
    expected = {_mirror(rel) for rel in _mirrored()}
    packages = {os.path.dirname(rel) for rel in _modules()
                if rel.endswith('__init__.py')}
    expected |= {f'{pkg}/test_init.py'.lstrip('/') for pkg in packages}
    found = set()
    for root, _dirs, files in os.walk(UNIT):
        for name in files:
            if name.startswith('test_') and name.endswith('.py'):
                found.add(os.path.relpath(os.path.join(root, name), UNIT)
                          .replace(os.sep, '/'))
    assert sorted(found - expected - set(TOPICS)) == []
    assert sorted(set(TOPICS) - found) == []


def _map(text):
    """The layers of doc/design.md 9.1's table, top to bottom: a set of
    groups per row (each group a `name`), checked to be numbered 0..n."""
    section = text.split('### 9.1 ', 1)[1].split('\n### ', 1)[0]
    rows = re.findall(r'^\| *(\d+) *\| *([^|]*)\|', section, re.M)
    assert [int(n) for n, _ in rows] == list(range(len(rows))), rows
    return [set(re.findall(r'`(\w+)`', groups)) for _, groups in rows]


def _named_modules(text, package):
    """The modules doc/design.md 9.1's table names for ``package``: the
    `words` after `package/`: in its row, up to the row's end (a
    `module.Type` names its module)."""
    section = text.split('### 9.1 ', 1)[1].split('\n### ', 1)[0]
    row = next(line for line in section.splitlines()
               if f'`{package}/`:' in line)
    words = re.findall(r'`([\w.]+)`', row.split(f'`{package}/`:', 1)[1])
    return {word.split('.')[0] for word in words}


@pytest.mark.parametrize('package', ['mainjob', 'rollout'])
def test_the_map_names_each_module_of_the_main_job_and_the_rollout(package):
    """design.md 9.1 says where each module of the main job and of the
    rollout holds its concept: every module is named there, and every
    name is a module."""
    with open(DESIGN, encoding='utf-8') as f:
        named = _named_modules(f.read(), package)
    modules = {rel[len(package) + 1:-3] for rel in _modules()
               if rel.startswith(package + '/') and '/' not in
               rel[len(package) + 1:] and not rel.endswith('__init__.py')
               and not rel.endswith('__main__.py')}
    assert named == modules


def test_the_module_map_check_sees_a_missing_module():
    text = ('### 9.1 The house\n| 4 | `rollout` | batch by batch '
            '(`rollout/`: `gate`, `state.State`) |\n### 9.2 x\n')
    assert _named_modules(text, 'rollout') == {'gate', 'state'}


def test_the_map_is_these_layers():
    with open(DESIGN, encoding='utf-8') as f:
        assert _map(f.read()) == [set(line) for line in LAYERS], (
            'doc/design.md 9.1 and LAYERS here must list the same groups '
            'on the same layers: change both')


def test_the_map_check_sees_a_difference():
    text = """### 9.1 The house

| layer | groups | what |
|---|---|---|
| 0 | `errors` `fileio` | the base |
| 1 | `facts` | what a host has |

### 9.2 Next
| 7 | `ignored` | another section |
"""
    assert _map(text) == [{'errors', 'fileio'}, {'facts'}]
    assert _map(text) != [{'errors'}, {'fileio', 'facts'}]
    with pytest.raises(AssertionError):
        _map(text.replace('| 1 |', '| 2 |'))


def _lines(path):
    with open(path, 'rb') as f:
        return f.read().count(b'\n')


def _oversize(root):
    """{path relative to root: lines} of the .py files over SECOND_LOOK."""
    found = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                if _lines(path) > SECOND_LOOK:
                    found[os.path.relpath(path, root).replace(
                        os.sep, '/')] = _lines(path)
    return found


def test_a_module_over_the_size_is_one_concept_with_its_reason():
    found = _oversize(PACKAGE)
    assert {f'kvmtune/{rel} ({n} lines)' for rel, n in found.items()
            if rel not in OVERSIZE} == set(), (
        'one concept per module (doc/design.md 8): split it where it holds '
        'two concepts, or list it in OVERSIZE with why it is one')
    assert sorted(set(OVERSIZE) - set(found)) == [], (
        'no longer over the size: drop it from OVERSIZE')
    assert all(len(why) > 40 for why in OVERSIZE.values())


def test_the_size_check_sees_a_long_module(tmp_path):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'long.py').write_text('x = 1\n' * (SECOND_LOOK + 1))
    (tmp_path / 'limit.py').write_text('x = 1\n' * SECOND_LOOK)
    (tmp_path / 'notes.txt').write_text('x\n' * 1000)
    (tmp_path / '__pycache__').mkdir()
    (tmp_path / '__pycache__' / 'stale.py').write_text('x = 1\n' * 1000)
    assert _oversize(str(tmp_path)) == {'sub/long.py': SECOND_LOOK + 1}
