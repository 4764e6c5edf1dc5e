"""Host facts on captures of real machines, against lstopo's view of each.

The trees under tests/fixtures/hosts/real/ are /proc and /sys dumps from
hwloc's and util-linux's test suites (see each SOURCE); expected.json
beside each is what lstopo or lscpu reported on that machine
(lstopo.console, lstopo.xml or lscpu.txt, parsed by make_real.py, which
does not import kvmtune).
"""

import importlib.util
import json
import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import capture
from tests import paths

REAL = os.path.join(paths.HOSTS, 'real')
NAMES = sorted(name for name in os.listdir(REAL)
               if os.path.isfile(os.path.join(REAL, name, 'expected.json')))
KEYS = ('online', 'sockets', 'cores', 'cores_per_socket',
        'threads_per_core', 'thread_siblings')


def expected(name):
    with open(os.path.join(REAL, name, 'expected.json')) as f:
        return json.load(f)


def make_real():
    spec = importlib.util.spec_from_file_location(
        'make_real', os.path.join(REAL, 'make_real.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_at_least_fifteen_real_captures():
    assert len(NAMES) >= 15, NAMES


@pytest.mark.parametrize('name', NAMES)
def test_topology_is_lstopos(name):
    want = expected(name)
    facts = host_facts.gather(os.path.join(REAL, name), probe_kvm=False)
    got = {key: facts['cpu'][key] for key in KEYS}
    assert got == {key: want[key] for key in KEYS}
    nodes = {str(node['id']): node['cpus']
             for node in facts['numa']['nodes']}
    assert nodes == want['nodes']


@pytest.mark.parametrize('name', NAMES)
def test_expected_is_what_the_tool_printed(name):
    """expected.json is lstopo's (or lscpu's) output parsed again, not
    hand-edited."""
    module = make_real()
    want = expected(name)
    with open(os.path.join(REAL, name, want['from'])) as f:
        text = f.read()
    if want['from'] == 'lscpu.txt':
        derived = module.expected_lscpu(module.parse_lscpu(text))
    else:
        root = (module.parse_xml(text) if want['from'].endswith('.xml')
                else module.parse_console(text))
        derived = module.expected(root, want['rule'])
    assert {k: want[k] for k in derived} == derived


@pytest.mark.parametrize('name', NAMES)
def test_source_names_url_commit_and_license(name):
    with open(os.path.join(REAL, name, 'SOURCE')) as f:
        text = f.read()
    assert text.startswith(('https://github.com/open-mpi/hwloc/blob/',
                            'https://github.com/util-linux/util-linux/'
                            'blob/'))
    assert 'commit: ' in text and 'license: ' in text


@pytest.mark.parametrize('name', ['128arm-2pa2n8cluster4co',
                                  '128ia64-17n4s2c', '256ppc-8n8s4t',
                                  '16em64t-4s2c2t-offlines',
                                  'nvidiagpunumanodes',
                                  'rv64-milkvpioneer'])
def test_host_capture_writes_the_same_shape(name, tmp_path):
    """kvmtune host capture of a fixture gives a tree of the fixture's
    shape: the same paths, bytes and facts (so operators' trees can join
    the fixtures as they are)."""
    root = os.path.join(REAL, name)
    target = tmp_path / 'tree'
    capture.capture(root, str(target))
    for directory, _, files in os.walk(target):
        for file in files:
            rel = os.path.relpath(os.path.join(directory, file), target)
            if rel == host_facts.CAPTURE_FILE:
                continue
            with open(os.path.join(root, rel), 'rb') as f:
                original = f.read()
            assert (target / rel).read_bytes() == original, rel
    again = host_facts.gather(str(target), probe_kvm=False)
    first = host_facts.gather(root, probe_kvm=False)
    for facts in (again, first):
        facts.pop('source')
        facts.pop('virt')
    assert again == first


def test_nul_terminated_lists_are_read():
    """A 5.15 kernel's lists end in '\\n\\0' (once a crash)."""
    root = os.path.join(REAL, '128arm-2pa2n8cluster4co')
    path = os.path.join(root, 'sys/devices/system/node/node0/cpulist')
    with open(path, 'rb') as f:
        assert f.read().endswith(b'\n\0')
    facts = host_facts.gather(root, probe_kvm=False)
    assert facts['numa']['nodes'][0]['cpus'] == list(range(32))
