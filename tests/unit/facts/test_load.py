"""Facts files: load(), resolve() and the CLI's one-line errors."""

import json
import os
import re
import subprocess
import sys

import pytest

from kvmtune import cli
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
INTEL = os.path.join(HOSTS, 'intel-2s-smt-ept-1g')
FIX = 'regenerate it with kvmtune host inspect --format json'


@pytest.fixture
def saved(tmp_path):
    """A facts file written by the real CLI, and its parsed content."""
    path = tmp_path / 'intel.json'
    assert cli.main(['host', 'inspect', '--root', INTEL, '--format', 'json',
                     '-o', str(path)]) == 0
    return path, json.loads(path.read_text())


def rewrite(path, facts):
    path.write_text(json.dumps(facts))
    return str(path)


def test_round_trip_equals_gather(saved):
    path, _ = saved
    loaded = host_facts.load(str(path))
    assert loaded['source'] == str(path)
    gathered = host_facts.gather(INTEL)
    gathered['source'] = str(path)
    assert loaded == gathered


def test_not_json(tmp_path):
    path = tmp_path / 'facts.json'
    path.write_text('cpu: 4\n')
    with pytest.raises(InputError,
                       match=r'facts\.json: not JSON \(Expecting value at '
                             r'line 1, column 1\)') as err:
        host_facts.load(str(path))
    assert err.value.source == str(path)
    assert 'not JSON' in err.value.problem
    assert err.value.fix == FIX


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match='cannot read facts'):
        host_facts.load(str(tmp_path / 'nope.json'))


@pytest.mark.parametrize('change, key, problem', [
    (lambda f: f['numa']['nodes'][0].update(cpus='0-19'),
     'numa.nodes[0].cpus', 'expected a list'),
    (lambda f: f['numa']['nodes'][1]['cpus'].__setitem__(3, 'x'),
     'numa.nodes[1].cpus[3]', 'expected an integer'),
    (lambda f: f['cpu'].pop('thread_siblings'),
     'cpu.thread_siblings', 'missing'),
    (lambda f: f['virt'].update(nested='yes'),
     'virt.nested', 'expected true or false'),
    (lambda f: f['virt'].update(mechanism='hvf'),
     'virt.mechanism', "'hvf' is not one of vmx, svm, pvm, null"),
    (lambda f: f['cpu'].update(online=[0, True]),
     'cpu.online[1]', 'expected an integer'),
    (lambda f: f['virt']['modules'].update(kvm_intel={'nested': 1}),
     'virt.modules.kvm_intel.nested', 'expected a string'),
    (lambda f: f.update(schema=2), 'schema', 'schema 2 is not supported'),
    (lambda f: f['numa'].update(nodes=[]), 'numa.nodes', 'no NUMA node'),
    (lambda f: f.pop('vhost_net'), 'vhost_net', 'missing'),
])
def test_wrong_shape_names_file_key_and_fix(saved, change, key, problem):
    path, facts = saved
    change(facts)
    rewrite(path, facts)
    with pytest.raises(InputError, match=re.escape(problem)) as err:
        host_facts.load(str(path))
    assert (err.value.source, err.value.key) == (str(path), key)
    assert problem in err.value.problem
    assert err.value.fix == FIX


def test_not_an_object(tmp_path):
    path = tmp_path / 'list.json'
    path.write_text('[1]')
    with pytest.raises(InputError, match='expected an object'):
        host_facts.load(str(path))


def test_extra_keys_are_allowed(saved):
    path, facts = saved
    facts['cpu']['microcode'] = '0x5003604'
    facts['site'] = {'rack': 7}
    assert host_facts.load(rewrite(path, facts))['site'] == {'rack': 7}


def test_resolve_sources(saved, tmp_path):
    path, _ = saved
    assert host_facts.resolve(facts_file=str(path))['source'] == str(path)
    assert host_facts.resolve(root=INTEL)['hostname'] == 'compute-intel-1'
    with pytest.raises(InputError, match='exclusive'):
        host_facts.resolve(root=INTEL, facts_file=str(path))
    with pytest.raises(InputError, match='not a host tree'):
        host_facts.resolve(root=str(tmp_path / 'missing'))
    with pytest.raises(InputError, match='not a host tree'):
        host_facts.resolve(root=str(tmp_path))


def test_cli_versions_only_for_this_host(capsys):
    assert cli.main(['host', 'inspect', '--root', INTEL, '--versions']) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: --versions: --versions asks')
    assert len(err.splitlines()) == 1


def test_cli_bad_facts_is_one_line_and_exit_2(saved, capsys):
    path, facts = saved
    facts['numa']['nodes'][0]['cpus'] = '0-19'
    rewrite(path, facts)
    capsys.readouterr()
    assert cli.main(['host', 'inspect', '--facts', str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert err == (f'kvmtune: error: {path}: numa.nodes[0].cpus: expected '
                   f'a list, got \'0-19\' (fix: {FIX})\n')


def test_cli_subprocess_no_traceback(tmp_path):
    path = tmp_path / 'broken.json'
    path.write_text('{"schema": 1, "cpu": ')
    proc = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'host', 'inspect', '--facts',
         str(path), '--format', 'json'],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ''
    assert 'Traceback' not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f'kvmtune: error: {path}: not JSON')


def test_cli_output_file_is_idempotent(saved, capsys):
    path, _ = saved
    before = os.stat(path).st_mtime_ns
    capsys.readouterr()
    assert cli.main(['host', 'inspect', '--root', INTEL, '--format', 'json',
                     '-o', str(path)]) == 0
    assert capsys.readouterr().err == f'{path}: unchanged\n'
    assert os.stat(path).st_mtime_ns == before


def test_cli_table(capsys):
    assert cli.main(['host', 'inspect', '--root', INTEL]) == 0
    out = capsys.readouterr().out
    assert 'Gold 6230' in out
    assert 'nested yes (vmx)' in out
    assert 'NUMA 1     cpus 20-39,60-79' in out
    assert '40 sibling groups: 0,40 1,41 2,42 ...' in out


def test_cli_output_errors_leave_nothing_behind(tmp_path, capsys):
    (tmp_path / 'adir').mkdir()
    for target in (tmp_path / 'adir', tmp_path / 'missing' / 'f.json'):
        assert cli.main(['host', 'inspect', '--root', INTEL,
                         '-o', str(target)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f'kvmtune: error: {target}: cannot write')
    assert os.listdir(tmp_path) == ['adir']
    assert os.listdir(tmp_path / 'adir') == []
