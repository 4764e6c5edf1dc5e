"""kvmtune.rollout.local: the hosts whose trees are on this machine, read
and planned here for --check, on real capture trees with a
distribution's boot files (tests/hosttrees.py), read-only."""

import os

import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import check
from kvmtune.rollout import local
from tests import hosttrees
from tests.unit.rollout.test_check import _host


def test_many_hosts_plan_in_worker_processes_the_same(tmp_path,
                                                      monkeypatch):
    hosts = [_host(name, hosttrees.make(tmp_path / name, distro))
             for name, distro in (('c1', 'debian-12'), ('c2', 'rhel-7'),
                                  ('c3', 'rhel-9-bls'))]
    alone = check.plan(hosts, 'cpu-pinning', path='inv').to_dict()
    monkeypatch.setattr(local, 'PARALLEL_FROM', 2)
    monkeypatch.setattr(local, 'WORKERS', 2)
    pooled = check.plan(hosts, 'cpu-pinning', path='inv').to_dict()
    assert pooled == alone
    # a host that does not plan, read in a worker process, has its own
    # error (naming it, its fix kept) in its place
    small = hosttrees.make(tmp_path / 'small', 'debian-12',
                           os.path.join('real', '16amd64-8n2c'))
    found = check.plan(hosts + [_host('small', small)] + hosts[:1],
                       'pinned-hugepages', path='inv')
    error = found.unplanned_error()
    assert isinstance(error, InputError) and error.fix
    assert error.line().startswith('inventory host small: ')
    assert [h.action for h in found.hosts].count('unplanned') == 1


def test_alike_hosts_planned_once_each_its_source(tmp_path, monkeypatch):
    from kvmtune.tuning import plan as plans

    made = []
    for_host = plans.for_host
    monkeypatch.setattr(plans, 'for_host', lambda *a, **kw: made.append(
        kw['facts']['source']) or for_host(*a, **kw))
    hosts = [_host(name, hosttrees.make(tmp_path / name, distro))
             for name, distro in (('c1', 'debian-12'), ('c2', 'rhel-7'),
                                  ('c3', 'debian-12'))]
    found = check.plan(hosts, 'cpu-pinning', path='inv')
    # c3's facts are c1's but for their source: c1's plan, c3's source
    assert made == [hosts[0].root, hosts[1].root]
    c1, c2, c3 = found.hosts
    assert [h.plan.facts_source for h in found.hosts] == \
        [h.root for h in hosts]
    assert c3.plan is not c1.plan
    assert dict(c3.plan.to_dict(), facts_source=None) == \
        dict(c1.plan.to_dict(), facts_source=None)
    assert c3.plan != c2.plan


def test_early_loads_the_profile_plan_then_takes(tmp_path):
    """What --check prepares while ansible-inventory runs: the same plan;
    a profile that does not load is refused by plan(), as without it."""
    hosts = [_host('c1', hosttrees.make(tmp_path / 'c1', 'debian-12'))]
    early = local.Early('cpu-pinning', ())
    early()
    assert early.loaded.name == 'cpu-pinning'
    assert check.plan(hosts, 'cpu-pinning', path='inv',
                      early=early).to_dict() == \
        check.plan(hosts, 'cpu-pinning', path='inv').to_dict()
    unknown = local.Early('no-such-profile', ())
    unknown()
    assert unknown.loaded is None
    with pytest.raises(InputError, match="unknown profile 'no-such"):
        check.plan(hosts, 'no-such-profile', path='inv', early=unknown)
