"""flavorapply.apply_profile's call order with --project, on an in-memory
Nova: the flavor is born private and shared only after its specs, a
public one is never made private, a run stopped before its share is
finished by the next."""

from kvmtune.openstack import flavorapply
from kvmtune.openstack import flavors
from tests.unit.openstack.test_flavors import BASE


class FakeNova:
    """The few flavor calls apply_profile makes, kept in memory, in the
    shapes Nova 34 answers at 2.86 (pure call-order logic; the real
    calls are run in tests/functional/test_faults.py)."""

    name = 'unit'

    def __init__(self, *existing):
        self.flavors = {f['id']: dict(f) for f in existing}
        self.access = {}
        self.writes = []
        self.reads = []

        class Requests:
            def summary(self):
                return 'n requests'
        self.requests = Requests()

    def compute(self, method, path, body=None):
        parts = path.split('?')[0].strip('/').split('/')
        if method != 'GET':
            self.writes.append((method, '/'.join(parts[2:]) or parts[0],
                                body))
        else:
            self.reads.append('/'.join(parts[2:]) or parts[-1])
        if path.startswith('/flavors/detail'):
            return {'flavors': list(self.flavors.values())}
        if method == 'POST' and parts == ['flavors']:
            made = dict(body['flavor'], id=f'f{len(self.flavors) + 1}',
                        extra_specs={})
            made.setdefault('os-flavor-access:is_public', True)
            self.flavors[made['id']] = made
            return {'flavor': made}
        flavor = self.flavors[parts[1]]
        if parts[2:] == ['os-extra_specs']:
            flavor['extra_specs'].update(body['extra_specs'])
        elif parts[2:3] == ['os-extra_specs']:
            del flavor['extra_specs'][parts[3]]
        elif parts[2:] == ['os-flavor-access']:
            return {'flavor_access': [
                {'flavor_id': parts[1], 'tenant_id': t}
                for t in sorted(self.access.get(parts[1], ()))]}
        elif parts[2:] == ['action']:
            self.access.setdefault(parts[1], set()).add(
                body['addTenantAccess']['tenant'])
        return {}


def _apply(monkeypatch, nova, **kwargs):
    import os

    from kvmtune.openstack import connection
    from tests import paths

    monkeypatch.setattr(connection.Cloud, 'connect', lambda name: nova)
    lines = []
    flavorapply.apply_profile('unit', 'cpu-pinning', root=os.path.join(
        paths.HOSTS, 'intel-2s-smt-ept-1g'), out=lines.append, **kwargs)
    return lines


def test_with_projects_the_flavor_is_private_and_shared_last(monkeypatch):
    nova = FakeNova(BASE)
    lines = _apply(monkeypatch, nova, base='m1.small', name='tuned',
                   projects=['p2', 'p1'])
    kinds = [(m, p) for m, p, _ in nova.writes]
    assert kinds == [('POST', 'flavors'), ('POST', 'os-extra_specs'),
                     ('POST', 'action'), ('POST', 'action')]
    assert nova.writes[0][2]['flavor']['os-flavor-access:is_public'] is False
    assert [b['addTenantAccess']['tenant'] for _, _, b in nova.writes[2:]] \
        == ['p1', 'p2']
    assert '  + access: project p1' in lines
    # the flavor it made is shared with nobody yet: no access list read
    assert 'os-flavor-access' not in nova.reads
    # run again: nothing to write
    nova.writes.clear()
    _apply(monkeypatch, nova, base='m1.small', name='tuned',
           projects=['p1', 'p2'])
    assert nova.writes == []
    # a project added later: only its share is made
    _apply(monkeypatch, nova, name='tuned', projects=['p1', 'p3'])
    assert [(m, p, b['addTenantAccess']['tenant'])
            for m, p, b in nova.writes] == [('POST', 'action', 'p3')]


def test_a_public_flavor_is_not_made_private(monkeypatch):
    import pytest

    from kvmtune.errors import InputError

    nova = FakeNova(BASE)
    with pytest.raises(InputError, match='flavor m1.small is public: Nova '
                       'cannot make a flavor private'):
        _apply(monkeypatch, nova, name='m1.small', projects=['p1'])
    assert nova.writes == []


def test_a_private_flavor_killed_before_its_share_is_finished(monkeypatch):
    # What a run stopped after POST /flavors leaves: private, no specs, no
    # share (no project sees it); running again completes it, share last.
    nova = FakeNova(BASE)
    made = nova.compute('POST', '/flavors', flavors.create_body(
        'tuned', BASE, 'cpu-pinning', private=True))['flavor']
    nova.writes.clear()
    _apply(monkeypatch, nova, name='tuned', projects=['p1'])
    assert [(m, p) for m, p, _ in nova.writes][-1] == ('POST', 'action')
    assert nova.flavors[made['id']]['extra_specs']
    assert nova.access[made['id']] == {'p1'}
