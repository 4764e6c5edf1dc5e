"""The pure logic of tuned flavors: diffs, names, marks and sizes."""

from kvmtune.openstack import flavors

OWNED = ('hw:cpu_policy', 'hw:cpu_thread_policy', 'hw:mem_page_size',
         'trait:CUSTOM_KVMTUNE_EPT', 'hw:numa_*')

BASE = {'name': 'm1.small', 'ram': 2048, 'vcpus': 1, 'disk': 20,
        'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': 0, 'rxtx_factor': 1.0,
        'os-flavor-access:is_public': True, 'id': 'b-1',
        'extra_specs': {'quota:disk_read_bytes_sec': '1000'}}


def test_diff_new_flavor_adds_every_wanted_key():
    diff = flavors.diff_extra_specs(
        {}, {'hw:mem_page_size': 'large', 'hw:cpu_policy': 'dedicated'},
        OWNED)
    assert diff.added == {'hw:cpu_policy': 'dedicated',
                          'hw:mem_page_size': 'large'}
    assert not diff.changed and not diff.removed
    assert diff.lines() == ['+ hw:cpu_policy=dedicated',
                            '+ hw:mem_page_size=large']


def test_diff_changes_owned_and_keeps_foreign_keys():
    current = {'hw:cpu_policy': 'shared', 'hw:cpu_thread_policy': 'prefer',
               'hw:numa_nodes': '2', 'quota:cpu_shares': '10',
               'hw:watchdog_action': 'reset'}
    wanted = {'hw:cpu_policy': 'dedicated'}
    diff = flavors.diff_extra_specs(current, wanted, OWNED)
    assert diff.changed == {'hw:cpu_policy': ('shared', 'dedicated')}
    # Owned by a tuner (exact name or glob) and no longer wanted: removed.
    assert diff.removed == {'hw:cpu_thread_policy': 'prefer',
                            'hw:numa_nodes': '2'}
    # Keys no tuner of the profile owns are never touched.
    assert 'quota:cpu_shares' not in diff.removed
    assert 'hw:watchdog_action' not in diff.removed
    assert diff.to_set() == {'hw:cpu_policy': 'dedicated'}
    assert diff.lines() == ['~ hw:cpu_policy: shared -> dedicated',
                            '- hw:cpu_thread_policy (was prefer)',
                            '- hw:numa_nodes (was 2)']


def test_diff_is_empty_when_flavor_matches():
    current = {'hw:cpu_policy': 'dedicated', 'quota:cpu_shares': '10'}
    diff = flavors.diff_extra_specs(current, {'hw:cpu_policy': 'dedicated'},
                                    OWNED)
    assert diff.empty
    assert diff.lines() == []


def test_diff_compares_values_as_nova_stores_them():
    diff = flavors.diff_extra_specs({'hw:numa_nodes': '1'},
                                    {'hw:numa_nodes': 1}, OWNED)
    assert diff.empty


def test_owned_present_removes_only_owned_keys():
    diff = flavors.owned_present(
        {'hw:cpu_policy': 'dedicated', 'trait:CUSTOM_KVMTUNE_EPT':
         'required', 'trait:CUSTOM_OTHER': 'required'}, OWNED)
    assert diff.removed == {'hw:cpu_policy': 'dedicated',
                            'trait:CUSTOM_KVMTUNE_EPT': 'required'}
    assert not diff.added and not diff.changed


def test_mark_round_trip_and_foreign_flavor():
    flavor = {'description': flavors.description('pinned', 'm1.small')}
    assert flavors.made_by_kvmtune(flavor) == ('pinned', 'm1.small')
    assert flavors.made_by_kvmtune({'description': None}) is None
    assert flavors.made_by_kvmtune(
        {'description': 'made by hand, says Tuned by kvmtune'}) is None


def test_create_body_copies_the_base_sizes():
    body = flavors.create_body('m1.small.pinned', BASE, 'pinned')['flavor']
    assert body['name'] == 'm1.small.pinned'
    for field in ('ram', 'vcpus', 'disk', 'OS-FLV-EXT-DATA:ephemeral',
                  'swap', 'rxtx_factor', 'os-flavor-access:is_public'):
        assert body[field] == BASE[field]
    assert 'id' not in body and 'extra_specs' not in body
    assert flavors.made_by_kvmtune(body) == ('pinned', 'm1.small')


def test_property_differences_name_each_size():
    same = dict(BASE, name='m1.small.pinned', swap='')
    assert flavors.property_differences(same, BASE) == []
    bigger = dict(BASE, name='x', ram=4096, vcpus=2)
    assert flavors.property_differences(bigger, BASE) == [
        'ram 4096 (base m1.small: 2048)', 'vcpus 2 (base m1.small: 1)']


def test_rejected_specs_names_the_value_nova_quotes():
    specs = {'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'huge'}
    message = ("HTTP 400: Validation failed; 'huge' is not of the format "
               "'(large|small|any)'.")
    assert flavors.rejected_specs(message, specs) == 'hw:mem_page_size=huge'
    assert flavors.rejected_specs('HTTP 400: no', specs) == (
        'hw:cpu_policy=dedicated, hw:mem_page_size=huge')


class RecordingCloud:
    """Records the compute calls Flavors makes (pure call-order logic)."""

    name = 'unit'

    def __init__(self):
        self.calls = []

    def compute(self, method, path, body=None):
        self.calls.append((method, path.rsplit('/', 1)[-1], body))


def _writes(diff, marked=False):
    cloud = RecordingCloud()
    flavors.Flavors(cloud).change('f1', diff, marked=marked)
    return cloud.calls


def test_one_call_change_is_not_bracketed():
    only_set = flavors.diff_extra_specs({}, {'hw:cpu_policy': 'dedicated'},
                                        ())
    assert _writes(only_set) == [
        ('POST', 'os-extra_specs',
         {'extra_specs': {'hw:cpu_policy': 'dedicated'}})]
    one_removed = flavors.owned_present({'hw:cpu_policy': 'dedicated'},
                                        ('hw:cpu_*',))
    assert _writes(one_removed) == [('DELETE', 'hw:cpu_policy', None)]


def test_multi_call_change_carries_the_marker_first_and_deletes_it_last():
    diff = flavors.diff_extra_specs(
        {'trait:HW_CPU_X86_VMX': 'required'},
        {'trait:CUSTOM_KVMTUNE_NESTED': 'required'},
        ('trait:HW_CPU_X86_VMX', 'trait:CUSTOM_KVMTUNE_NESTED'))
    assert _writes(diff) == [
        ('POST', 'os-extra_specs', {'extra_specs': {
            'trait:CUSTOM_KVMTUNE_NESTED': 'required',
            flavors.INCOMPLETE: 'required'}}),
        ('DELETE', 'trait:HW_CPU_X86_VMX', None),
        ('DELETE', flavors.INCOMPLETE, None)]
    removals = flavors.owned_present({'hw:cpu_policy': 'dedicated',
                                      'hw:cpu_thread_policy': 'prefer'},
                                     ('hw:cpu_*',))
    assert [c[:2] for c in _writes(removals)] == [
        ('POST', 'os-extra_specs'), ('DELETE', 'hw:cpu_policy'),
        ('DELETE', 'hw:cpu_thread_policy'), ('DELETE', flavors.INCOMPLETE)]


def test_a_marked_flavor_is_finished_and_unmarked():
    current = {'hw:cpu_policy': 'dedicated', flavors.INCOMPLETE: 'required'}
    same = flavors.diff_extra_specs(current, {'hw:cpu_policy': 'dedicated'},
                                    ('hw:cpu_*',))
    assert same.empty     # the marker is not a foreign key
    assert _writes(same, marked=True) == [
        ('DELETE', flavors.INCOMPLETE, None)]
    wanted = {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer'}
    more = flavors.diff_extra_specs(current, wanted, ('hw:cpu_*',))
    assert [c[:2] for c in _writes(more, marked=True)] == [
        ('POST', 'os-extra_specs'), ('DELETE', flavors.INCOMPLETE)]


def test_incomplete_lines_name_the_marker_and_a_plain_kvmtune_flavor():
    described = flavors.description('cpu-pinning', 'm1.small')
    marked = {'name': 'f', 'description': described,
              'extra_specs': {flavors.INCOMPLETE: 'required'}}
    assert 'keeps every guest off it' in flavors.incomplete_lines(
        marked, {'hw:cpu_policy': 'dedicated'})[0]
    plain = {'name': 'f', 'description': described, 'extra_specs': {}}
    assert 'none of its profile\'s specs' in flavors.incomplete_lines(
        plain, {'hw:cpu_policy': 'dedicated'})[0]
    complete = dict(plain, extra_specs={'hw:cpu_policy': 'dedicated'})
    assert flavors.incomplete_lines(complete,
                                    {'hw:cpu_policy': 'dedicated'}) == []
    foreign = {'name': 'f', 'description': 'ours', 'extra_specs': {}}
    assert flavors.incomplete_lines(foreign,
                                    {'hw:cpu_policy': 'dedicated'}) == []


# apply_profile's call order with --project, on an in-memory Nova: the
# flavor is born private and shared only after its specs, a public one is
# never made private, a run stopped before its share is finished by the
# next.


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
    flavors.apply_profile('unit', 'cpu-pinning', root=os.path.join(
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
