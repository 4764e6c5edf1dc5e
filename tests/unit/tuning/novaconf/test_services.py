"""kvmtune.tuning.novaconf.services: checked against Nova's own source.

The readers table is not trusted as written: every cited function must
read the option in the Nova installed for the test cloud (directly, or
through the helper it names), and every module of Nova that reads an
option must belong to a service the table lists.
"""

import ast
import functools
import glob
import os
import re

import pytest

from kvmtune.facts import resolve
from kvmtune.tuning.novaconf import services
from kvmtune.tuning.plan import build_plan
from kvmtune.tuning import profiles
from kvmtune.tuning import tuners
from tests import paths
from tests.paths import HOSTS


def _nova_source():
    given = os.environ.get('KVMTUNE_NOVA_SOURCE')
    found = [given] if given else sorted(glob.glob(
        os.path.join(os.path.dirname(os.path.dirname(paths.NOVA_PYTHON)),
                     'lib', 'python3*', 'site-packages', 'nova')))
    return found[0] if found and os.path.isdir(found[0]) else None


NOVA = _nova_source()
needs_nova = pytest.mark.skipif(
    NOVA is None, reason='no Nova source (the test cloud is not installed; '
    'set KVMTUNE_NOVA_SOURCE to a nova package directory)')

# Module package -> service, for modules of one service only.
PACKAGES = {'compute': services.COMPUTE, 'virt': services.COMPUTE,
            'scheduler': services.SCHEDULER,
            'conductor': services.CONDUCTOR, 'api': services.API}
# Helper modules by the name Nova imports them under.
HELPERS = {'hardware': 'virt/hardware.py',
           'scheduler_utils': 'scheduler/utils.py'}


def _pattern(section, option):
    name = option if section == 'DEFAULT' else f'{section}.{option}'
    return re.compile(r'\bCONF\.' + re.escape(name) + r'\b')


@functools.lru_cache(maxsize=None)
def _functions(path):
    with open(os.path.join(NOVA, path)) as handle:
        text = handle.read()
    lines = text.splitlines()
    found = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(
                '\n'.join(lines[node.lineno - 1:node.end_lineno]))
    return found


@functools.lru_cache(maxsize=None)
def _reads(path, function, pattern, depth=3):
    """Does ``function`` in ``path`` read the option, directly or through
    functions of the same module it calls (``depth`` calls deep)?"""
    funcs = _functions(path)
    bodies = funcs.get(function, [])
    if any(pattern.search(body) for body in bodies):
        return True
    if depth == 0:
        return False
    for body in bodies:
        for name in re.findall(r'\b(\w+)\(', body):
            if name != function and name in funcs and _reads(
                    path, name, pattern, depth - 1):
                return True
    return False


@needs_nova
@pytest.mark.parametrize('key', sorted(services.READERS))
def test_every_cited_read_is_in_nova(key):
    pattern = _pattern(*key)
    for read in services.READERS[key]:
        funcs = _functions(read.path)
        assert read.function in funcs, read.cite()
        if read.via is None:
            assert _reads(read.path, read.function, pattern, depth=0), \
                read.cite()
            continue
        module, helper = read.via.split('.')
        assert any(f'{read.via}(' in body
                   for body in funcs[read.function]), read.cite()
        assert _reads(HELPERS[module], helper, pattern), read.cite()


@functools.lru_cache(maxsize=None)
def _sources():
    found = {}
    for path in glob.glob(os.path.join(NOVA, '**', '*.py'), recursive=True):
        rel = os.path.relpath(path, NOVA)
        if not rel.startswith('tests' + os.sep):
            with open(path) as handle:
                found[rel] = handle.read()
    return found


def _modules_reading(section, option):
    pattern = _pattern(section, option)
    return [rel for rel, text in _sources().items() if pattern.search(text)]


@needs_nova
@pytest.mark.parametrize('key', sorted(services.READERS))
def test_no_reader_in_nova_is_missing(key):
    listed = set(services.readers(*key))
    modules = _modules_reading(*key)
    assert modules, f'Nova never reads {key}: stale table entry'
    for rel in modules:
        package = rel.split(os.sep)[0]
        assert package in PACKAGES, f'{rel} reads {key}: which service?'
        assert PACKAGES[package] in listed, f'{rel} reads {key}'


def test_scheduler_options_are_not_compute():
    for key in (('filter_scheduler', 'enabled_filters'),
                ('workarounds', 'disable_fallback_pcpu_query')):
        assert services.COMPUTE not in services.readers(*key)
        assert services.SCHEDULER in services.readers(*key)
    assert services.readers('filter_scheduler', 'enabled_filters') == (
        services.SCHEDULER, services.CONDUCTOR)
    assert services.readers('compute', 'cpu_dedicated_set') == (
        services.COMPUTE,)


def test_every_option_a_tuner_sets_has_readers():
    for name in tuners.names():
        for section, option in tuners.get(name).NOVA_CONF:
            assert services.readers(section, option), (name, option)


def test_every_option_a_profile_plans_has_readers():
    facts = resolve(root=os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    dirs = profiles.search_dirs([])
    for name in profiles.available(dirs):
        plan = build_plan(profiles.load(name, dirs), facts)
        for section, options in services.tag(plan.nova_conf).items():
            for option, readers in options.items():
                assert readers, (name, section, option)


def test_split():
    conf = {'DEFAULT': {'reserved_huge_pages': ['node:0,size:2048,count:1']},
            'filter_scheduler': {'enabled_filters': 'A,B'},
            'workarounds': {'disable_fallback_pcpu_query': 'true'}}
    kept, left = services.split(conf, 'compute')
    assert kept == {'DEFAULT': conf['DEFAULT']}
    assert left == {'filter_scheduler': conf['filter_scheduler'],
                    'workarounds': conf['workarounds']}
    kept, left = services.split(conf, 'scheduler')
    assert list(kept) == ['filter_scheduler', 'workarounds'] and \
        list(left) == ['DEFAULT']
    assert services.split(conf, 'all') == (conf, {})


def test_unknown_option():
    with pytest.raises(services.UnknownOption,
                       match=r'\[libvirt\] no_such_option'):
        services.readers('libvirt', 'no_such_option')


def _proc(tmp_path, *cmdlines):
    for pid, argv in enumerate(cmdlines, start=100):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / 'cmdline').write_bytes(
            b'\0'.join(a.encode() for a in argv) + b'\0')
    (tmp_path / 'self').mkdir()
    return str(tmp_path)


def test_running_and_default(tmp_path):
    proc = _proc(tmp_path,
                 ['/opt/venv/bin/python3', '/opt/venv/bin/nova-compute',
                  '--config-file', '/etc/nova/nova.conf'],
                 ['/usr/bin/bash'])
    assert services.running(proc) == {'compute'}
    assert services.default_service(proc)[0] == 'compute'
    (tmp_path / 'both').mkdir()
    proc = _proc(tmp_path / 'both', ['/usr/bin/nova-scheduler'],
                 ['/usr/bin/nova-compute'])
    assert services.default_service(proc)[0] == 'all'
    (tmp_path / 'sched').mkdir()
    proc = _proc(tmp_path / 'sched', [
        'nova-scheduler: master process [/opt/venv/bin/nova-scheduler '
        '--config-file /etc/nova/nova.conf]'])
    assert services.default_service(proc)[0] == 'scheduler'


def test_default_without_nova(tmp_path):
    service, why = services.default_service(_proc(tmp_path, ['/bin/sh']))
    assert service == 'compute' and 'no Nova service' in why


@pytest.mark.parametrize('argv', [
    ['journalctl', '-u', 'nova-scheduler'],
    ['/usr/bin/tail', '-f', '/var/log/nova/nova-compute.log'],
    ['vim', 'nova-compute'],
    ['/usr/bin/python3', '/usr/bin/pip', 'show', 'nova-compute'],
    ['bash', '-c', 'nova-compute --config-file x'],
])
def test_a_process_that_only_names_a_service_is_not_it(tmp_path, argv):
    # Before: any of the first four words counted, so 'journalctl -u
    # nova-scheduler' made a compute host apply as a scheduler.
    assert services.running(_proc(tmp_path, argv)) == set()


@pytest.mark.parametrize('argv, service', [
    (['/usr/bin/nova-compute', '--config-file', '/etc/nova/nova.conf'],
     'compute'),
    (['/usr/bin/python3', '-u', '/usr/bin/nova-compute'], 'compute'),
    (['/opt/venv/bin/python3.11', '/opt/venv/bin/nova-scheduler'],
     'scheduler'),
    (['nova-conductor: master process [/usr/bin/nova-conductor]'],
     'conductor'),
])
def test_each_way_nova_runs_is_found_with_its_argv(tmp_path, argv,
                                                   service):
    [(pid, found, seen)] = services.processes(_proc(tmp_path, argv))
    assert (pid, found, seen) == (100, service, argv)
