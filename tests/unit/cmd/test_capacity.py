"""``kvmtune capacity``: the table, -f json, the Prometheus file and bad
input, on the test cloud's recorded answers (tests/unit/capacity/replay.py;
the live cloud is in tests/functional/test_capacity.py)."""

import json
import os

from prometheus_client.parser import text_string_to_metric_families
import pytest

from kvmtune import cli
from kvmtune.openstack import connection
from tests import paths
from tests.unit.capacity.replay import load
from tests.unit.capacity.replay import Replay
from tests.unit import fulldisk

PINNED = 'kvmtune-ft-002e681a-pinned'
BASE = 'kvmtune-ft-base-94120b'


@pytest.fixture
def cloud(monkeypatch):
    replay = Replay(load('testcloud-libvirt-pinned.json'))
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: replay))
    return replay


@pytest.fixture
def facts_dir(tmp_path):
    directory = tmp_path / 'facts'
    directory.mkdir()
    with open(os.path.join(paths.FIXTURES, 'capacity', 'vm.json')) as f:
        (directory / 'vm.json').write_text(f.read())
    return directory


def capacity(*argv):
    return cli.main(['capacity', '--os-cloud', 'replay', *argv])


def test_the_table_and_totals(cloud, capsys):
    assert capacity('--flavor', BASE) == 0
    out, err = capsys.readouterr()
    rows = [line.split() for line in out.splitlines()[2:]]
    assert rows == [['vm', BASE, '16', 'VCPU'], ['(all)', BASE, '16']]
    assert err.strip() == '1 host x flavor counts from 6 API calls'


def test_json_and_prometheus(cloud, facts_dir, tmp_path, capsys):
    prom = tmp_path / 'capacity.prom'
    assert capacity('--flavor', PINNED, '--flavor', BASE, '--facts-dir',
                    str(facts_dir), '-f', 'json', '--prometheus',
                    str(prom)) == 0
    doc = json.loads(capsys.readouterr().out)
    # no --profile: which CPUs are dedicated is unknown (PCPU 1 of 2)
    assert doc['partial'] is True
    pinned = [f for f in doc['fits'] if f['flavor'] == PINNED][0]
    assert pinned['count'] is None and '--profile' in pinned['reason']
    assert doc['totals'][BASE] == {'count': 16, 'partial': False}
    families = {f.name: f for f in
                text_string_to_metric_families(prom.read_text())}
    by_host = families['openstack_free_capacity_hypervisor_by_flavor']
    assert [(s.labels, s.value) for s in by_host.samples] == [
        ({'hypervisor': 'vm', 'flavor_name': BASE}, 16.0)]
    partial = {s.labels['flavor_name']: s.value
               for s in families['kvmtune_capacity_partial'].samples}
    assert partial == {PINNED: 1.0, BASE: 0.0}


def test_a_profile_gives_the_dedicated_cpus(cloud, facts_dir, tmp_path,
                                            capsys):
    profile = tmp_path / 'kvmtune-ft-capacity.yaml'
    profile.write_text('name: kvmtune-ft-capacity\ndescription: t\n'
                       'source: tests/unit/cmd/test_capacity.py\n'
                       'tuners:\n- name: cpu_pinning\n'
                       '  params: {isolcpus: false}\n')
    assert capacity('--flavor', PINNED, '--facts-dir', str(facts_dir),
                    '--profile', str(profile), '-f', 'value', '-c',
                    'host', '-c', 'fits', '-c', 'limit') == 0
    assert capsys.readouterr().out.splitlines()[0] == 'vm 1 PCPU'


@pytest.mark.parametrize('argv, words', [
    (['--flavor', 'nope'], "no flavor named 'nope'"),
    (['--flavor', BASE, '--host', 'other'],
     "no compute node named 'other'"),
    (['--flavor', BASE, '--facts-dir', '/nonexistent'], 'cannot list it'),
])
def test_bad_input_is_one_line_exit_2(cloud, argv, words, capsys):
    assert capacity(*argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and words in err, err


def test_facts_for_a_host_nova_does_not_know(cloud, facts_dir, capsys):
    (facts_dir / 'vm.json').rename(facts_dir / 'compute-9.json')
    assert capacity('--flavor', BASE, '--facts-dir', str(facts_dir)) == 2
    err = capsys.readouterr().err
    assert 'facts for compute-9, which is no compute node' in err
    assert err.count('\n') == 1


def test_the_hosts_own_nova_conf_gives_the_dedicated_cpus(cloud, facts_dir,
                                                          capsys):
    (facts_dir / 'vm.conf').write_text(
        '[DEFAULT]\ndebug = true\n[compute]\ncpu_dedicated_set = 1\n'
        'cpu_shared_set = 0\n')
    assert capacity('--flavor', PINNED, '--facts-dir', str(facts_dir),
                    '-f', 'value', '-c', 'host', '-c', 'fits', '-c',
                    'limit') == 0
    assert capsys.readouterr().out.splitlines()[0] == 'vm 1 PCPU'
    (facts_dir / 'vm.conf').write_text('[compute]\ncpu_dedicated_set = x\n')
    assert capacity('--flavor', PINNED, '--facts-dir', str(facts_dir)) == 2
    err = capsys.readouterr().err
    assert 'vm.conf: [compute] cpu_dedicated_set' in err
    assert err.count('\n') == 1


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_the_old_prometheus_file(cloud, tmp_path, capsys):
    old = {'capacity.prom': b'# the scrape before\n'}
    with fulldisk.full_tmpfs(tmp_path / 'full', old) as full:
        assert capacity('--flavor', BASE, '--prometheus',
                        str(full / 'capacity.prom')) == 2
        fulldisk.assert_one_line_full(capsys.readouterr().err)
        fulldisk.assert_left_as_it_was(full, old)


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('old', [{'capacity.prom': b'# the scrape before\n'},
                                 {}], ids=['over-old', 'new'])
def test_a_read_only_filesystem_keeps_the_old_prometheus_file(
        cloud, tmp_path, capsys, old):
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        assert capacity('--flavor', BASE, '--prometheus',
                        str(ro / 'capacity.prom')) == 2
        fulldisk.assert_one_line_readonly(capsys.readouterr().err)
        fulldisk.assert_left_as_it_was(ro, old, filler=False)
