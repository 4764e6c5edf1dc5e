"""kvmtune.rollout.check: --check's plan per host, on real capture trees
with a distribution's boot files (tests/hosttrees.py), read-only."""

import json
import os
import sys

import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import check
from kvmtune.rollout import inventory
from tests import hosttrees
from tests import paths
from tests.unit.rollout import fakenova
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import kvmtune_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible
from tests.unit.rollout import test_steps

# real/20em64t-hybrid-1p6c2t+2ca4co1t under Debian 12's boot files: it
# booted without isolcpus; cpu-pinning plans isolcpus=2-19 there
ISOLCPUS = 'isolcpus=2-19'


def _host(name, root, **more):
    return inventory.Host(name, {'kvmtune_root': str(root),
                                 'ansible_connection': 'local', **more})


def _booted_with(root, args):
    """The tree booted ``args`` too (what a reboot into them gives)."""
    cmdline = root / 'proc' / 'cmdline'
    cmdline.write_text(cmdline.read_text().strip() + ' ' + ' '.join(args)
                       + '\n')


def test_booted_without_isolcpus_says_reboot_cmdline(tmp_path):
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    before = hosttrees.snapshot(root)
    found = check.plan([_host('c1', root)], 'cpu-pinning', path='inv')
    host, = found.hosts
    assert host.action == 'reboot'
    assert host.reasons == {'cmdline': [ISOLCPUS], 'hugepages': [],
                            'module': []}
    assert {'kind': 'file', 'path': '/etc/default/grub.d/50-kvmtune.cfg'} \
        in host.changes
    assert {'kind': 'command', 'argv': ['update-grub']} in host.changes
    assert hosttrees.snapshot(root) == before       # nothing written


def test_pinned_hugepages_names_both_reasons(tmp_path):
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    host, = check.plan([_host('c1', root)], 'pinned-hugepages',
                       path='inv').hosts
    assert host.action == 'reboot'
    assert host.reasons['cmdline'] == [ISOLCPUS]
    assert host.reasons['hugepages'] == [
        'default_hugepagesz=2M', 'hugepagesz=2M', 'hugepages=6940']


def test_already_booted_with_the_plan_is_none_or_restart(tmp_path):
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    _booted_with(root, [ISOLCPUS])
    host, = check.plan([_host('c1', root)], 'cpu-pinning',
                       path='inv').hosts
    # nothing kvmtune can see to change, but the nova.conf the plan has
    # options for is not there: unknown, not unchanged, and in no batch
    assert (host.action, host.changes, host.batch) == ('unknown', [], 0)
    assert not any(host.reasons.values())
    assert 'no nova.conf at' in host.notes[0]
    # with the nova.conf nova-compute reads: its options change, a restart
    conf = root / 'etc' / 'nova' / 'nova.conf'
    conf.parent.mkdir(parents=True)
    conf.write_text('[DEFAULT]\ndebug = true\n')
    before = hosttrees.snapshot(root)
    host, = check.plan([_host('c1', root)], 'cpu-pinning',
                       path='inv').hosts
    assert host.action == 'restart' and host.notes == []
    changed = {(c['section'], c['option']): c['to'] for c in host.changes}
    assert changed[('compute', 'cpu_dedicated_set')] == '2-19'
    assert all(c['kind'] == 'nova.conf' and c['from'] is None
               for c in host.changes)
    assert hosttrees.snapshot(root) == before


def test_batches_in_inventory_order_and_skipped_cloud_checks(tmp_path):
    hosts = [_host(name, hosttrees.make(tmp_path / name, 'debian-12'))
             for name in ('c3', 'c1', 'c2')]
    found = check.plan(hosts, 'cpu-pinning', path='inv', batch=2)
    assert found.batches == [['c3', 'c1'], ['c2']]
    doc = found.to_dict()
    assert [b['hosts'] for b in doc['batches']] == [['c3', 'c1'], ['c2']]
    assert doc['summary'] == {'hosts': 3, 'reboot': 3, 'restart': 0,
                              'none': 0, 'unknown': 0, 'unplanned': 0}
    assert [s['check'] for s in doc['preflight']['cloud_checks_skipped']] \
        == [name for name, _ in check.CLOUD_CHECKS]
    with pytest.raises(InputError, match='--batch'):
        check.batches(['a'], 0)


def test_a_host_that_does_not_plan_is_named(tmp_path):
    good = hosttrees.make(tmp_path / 'good', 'debian-12')
    # 16amd64-8n2c: the 2M pool of pinned-hugepages is withheld there
    small = hosttrees.make(tmp_path / 'small', 'debian-12',
                           os.path.join('real', '16amd64-8n2c'))
    found = check.plan([_host('good', good), _host('small', small)],
                       'pinned-hugepages', path='inv')
    line = found.unplanned_error().line()
    assert line.startswith('inventory host small: ')
    assert 'withheld' in line and '\n' not in line
    # listed with its reason, in no batch; the host that plans is batched
    assert [(h.host, h.action, h.batch) for h in found.hosts] == [
        ('good', 'reboot', 1), ('small', 'unplanned', 0)]
    assert found.hosts[1].notes == [line]
    assert found.batches == [['good']]


def test_every_host_that_does_not_plan_is_listed(tmp_path):
    found = check.plan([_host('gone', tmp_path / 'nothing'),
                        _host('lost', tmp_path / 'nowhere')], 'cpu-pinning',
                       path='inv')
    assert [h.action for h in found.hosts] == ['unplanned', 'unplanned']
    line = found.unplanned_error().line()
    assert line.startswith('inventory host gone: kvmtune_root ')
    assert '(and 1 more host(s) that do not plan' in line
    assert found.to_dict()['summary']['unplanned'] == 2


def test_a_missing_root_is_unreachable(tmp_path):
    found = check.plan([_host('gone', tmp_path / 'nothing')], 'cpu-pinning',
                       path='inv')
    line = found.unplanned_error().line()
    assert line.startswith('inventory host gone: kvmtune_root ')
    assert 'no such directory' in line


@needs_ansible
def test_a_host_on_another_connection_is_asked_over_ansible(
        tmp_path, ansible_on_path, kvmtune_on_path):  # noqa: F811
    """ansible.builtin.local is another connection to kvmtune (it asks
    over Ansible, as over ssh) that reaches this machine: the answer
    must be what the tree gives when read here."""
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    inv = tmp_path / 'hosts.ini'
    inv.write_text(f'[computes]\nc1 kvmtune_root={root} '
                   'ansible_connection=ansible.builtin.local '
                   f'ansible_python_interpreter={sys.executable}\n')
    hosts = inventory.load(str(inv))
    assert not hosts[0].local
    before = hosttrees.snapshot(root)
    remote, = check.plan(hosts, 'cpu-pinning', path=str(inv)).hosts
    here, = check.plan([_host('c1', root)], 'cpu-pinning', path='i').hosts
    assert remote.action == here.action == 'reboot'
    assert remote.reasons == here.reasons
    assert remote.changes == here.changes
    assert hosttrees.snapshot(root) == before
    # its facts came along (the cloud's preflight plans on them)
    assert remote.facts['source'] == str(root)


# --check with a cloud: the preflight of each batch judged on the hosts'
# facts and nova.conf as --check read them (the recorded Placement of
# tests/unit/rollout/test_steps.py, over three hosts named as its nodes)
CLOUD_HOSTS = (('compute-0000', 'debian-12'), ('compute-0001', 'rhel-9-bls'),
               ('compute-0002', 'rhel-7'))
CLOUD_CHECK = os.path.join(paths.FIXTURES, 'rollout', 'check-cloud.json')


class _Cloud(test_steps.Cloud):
    """test_steps' model of Nova, and a pinned guest's NUMA topology
    (GET /servers/{id}/topology, compute API 2.78)."""

    def compute(self, method, path, body=None):
        if method == 'GET' and path.endswith('/topology'):
            return {'nodes': [{'host_node': 0, 'cpu_pinning': {'0': 1},
                               'vcpu_set': [0], 'memory_mb': 128,
                               'siblings': [[1]]}],
                    'pagesize_kb': None}
        return super().compute(method, path, body)


def _cloud_check(tmp_path, monkeypatch, batch):
    from kvmtune.openstack import connection

    cloud = _Cloud([test_steps._pinned('p1'),
                    fakenova.server('a', 'compute-0000'),
                    test_steps._pinned('p2').copy() | {
                        'OS-EXT-SRV-ATTR:host': 'compute-0001',
                        'OS-EXT-SRV-ATTR:hypervisor_hostname':
                            'compute-0001'}])
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: cloud))
    hosts = []
    for name, distro in CLOUD_HOSTS:
        root = hosttrees.make(tmp_path / name, distro)
        conf = root / 'etc' / 'nova' / 'nova.conf'
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text('[compute]\ncpu_dedicated_set = 1\n'
                        'cpu_shared_set = 0\n')
        hosts.append(_host(name, root))
    found = check.plan(hosts, 'cpu-pinning', path='inv', batch=batch,
                       cloud='fake')
    assert cloud.writes == []       # GET requests only
    # the refusals as the preflight raised them, the reports' lines theirs
    assert [r.line() for r in found.refused] == [
        line for report in found.reports for line in report['refusals']]
    return json.loads(json.dumps(found.to_dict()).replace(
        str(tmp_path), '<tmp>'))


def test_with_a_cloud_each_batch_is_judged_on_the_hosts_read(
        tmp_path, monkeypatch):
    """The same document as before the facts stopped going through a
    temporary --facts-dir (tests/fixtures/rollout/check-cloud.json was
    written by that code): batches of one and of two. Nothing is
    written: the facts and nova.conf go to the preflight in memory."""
    with open(CLOUD_CHECK) as f:
        expected = json.load(f)

    def written(*args):
        raise AssertionError('--check wrote the facts out')

    monkeypatch.setattr(check, 'write_facts', written)
    for batch in (1, 2):
        doc = _cloud_check(tmp_path / str(batch), monkeypatch, batch)
        assert doc == expected[str(batch)], batch


def test_with_a_cloud_a_bad_dedicated_set_names_the_host_and_file(
        tmp_path, monkeypatch):
    """A nova.conf whose cpu_dedicated_set Nova would refuse, on a host
    whose profile leaves nova.conf alone: one line naming the inventory
    host and its file (not a temporary copy of it)."""
    root = hosttrees.make(tmp_path / 'compute-0000', 'debian-12')
    conf = root / 'etc' / 'nova' / 'nova.conf'
    conf.parent.mkdir(parents=True)
    conf.write_text('[compute]\ncpu_dedicated_set = 3-x\n')
    cloud = _Cloud()
    from kvmtune.openstack import connection
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: cloud))
    with pytest.raises(InputError) as err:
        check.plan([_host('compute-0000', root)], 'hugepages', path='inv',
                   cloud='fake')
    assert err.value.line().startswith(
        f'inventory host compute-0000: {conf}: [compute] '
        'cpu_dedicated_set: ')


def test_the_check_makes_the_runs_batches(tmp_path):
    """io-tuned, batches of 2: only the hosts the run rolls are batched
    (a host with nothing kvmtune can see to change is in none), so the
    check makes the one batch the run makes, not two; a host whose
    nova.conf cannot be seen is unknown, not unchanged."""
    from kvmtune.rollout import resume

    roots = {name: hosttrees.make(tmp_path / name, 'debian-12')
             for name in ('c1', 'c2', 'c3')}
    for name in ('c1', 'c3'):
        conf = roots[name] / 'etc' / 'nova' / 'nova.conf'
        conf.parent.mkdir(parents=True)
        conf.write_text('[DEFAULT]\ndebug = false\n')
    found = check.plan([_host(n, r) for n, r in roots.items()], 'io-tuned',
                       path='inv', batch=2)
    assert [(h.host, h.action, h.batch) for h in found.hosts] == [
        ('c1', 'restart', 1), ('c2', 'unknown', 0), ('c3', 'restart', 1)]
    run = resume.to_roll({h.host: h.action for h in found.hosts}, {})
    assert found.batches == check.batches(run, 2) == [['c1', 'c3']]
    assert found.to_dict()['summary']['unknown'] == 1
