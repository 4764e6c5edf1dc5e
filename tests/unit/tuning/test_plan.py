"""build_plan on the fixture hosts, conflicts, and the plan command."""

import json
import os
import re

import pytest

from kvmtune import cli
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from kvmtune.tuning.tuners import base
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
INTEL = os.path.join(HOSTS, 'intel-2s-smt-ept-1g')
AMD = os.path.join(HOSTS, 'amd-epyc-npt')
PVM = os.path.join(HOSTS, 'pvm-guest-2cpu')
PLAN_KEYS = {'profile', 'facts_source', 'nova_conf', 'kernel_args',
             'nova_release',
             'modprobe', 'extra_specs', 'owned_extra_specs', 'checks',
             'notes', 'hugepages', 'nova_conf_services', 'withheld'}


def profile(name):
    return profiles.load(name, profiles.search_dirs())


def plan_for(name, root):
    return plans.build_plan(profile(name), host_facts.gather(root))


def expected_split(facts):
    """The TripleO rule, computed independently of the tuner."""
    shared = set()
    for node in facts['numa']['nodes']:
        first = min(node['cpus'])
        shared.update(next(g for g in facts['cpu']['thread_siblings']
                           if first in g))
    return shared, set(facts['cpu']['online']) - shared


def checks_by_name(plan):
    return {check.name: check for check in plan.checks}


def test_intel_two_sockets_with_smt():
    facts = host_facts.gather(INTEL)
    plan = plans.build_plan(profile('pinned-hugepages-ept'), facts)
    data = plan.to_dict()
    assert set(data) == PLAN_KEYS
    shared, dedicated = expected_split(facts)
    compute = data['nova_conf']['compute']
    assert compute['cpu_shared_set'] == format_cpulist(shared)
    assert compute['cpu_dedicated_set'] == format_cpulist(dedicated)
    # The constructed host: node 0 = 0-19,40-59, node 1 = 20-39,60-79.
    assert compute['cpu_shared_set'] == '0,20,40,60'
    assert compute['cpu_dedicated_set'] == '1-19,21-39,41-59,61-79'
    assert data['nova_conf']['DEFAULT']['reserved_huge_pages'] == [
        'node:0,size:1GB,count:1', 'node:1,size:1GB,count:1']
    assert data['nova_conf']['DEFAULT']['reserved_host_memory_mb'] == '4096'
    assert data['nova_conf']['workarounds'] == {
        'disable_fallback_pcpu_query': 'true'}
    assert data['kernel_args'][0] == 'isolcpus=1-19,21-39,41-59,61-79'
    assert data['kernel_args'][1:3] == ['default_hugepagesz=1G',
                                        'hugepagesz=1G']
    assert data['modprobe'] == {
        '/etc/modprobe.d/kvm.conf': 'options kvm_intel ept=1\n'}
    assert data['extra_specs'] == {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer',
        'hw:emulator_threads_policy': 'share', 'hw:mem_page_size': 'large',
        'trait:CUSTOM_KVMTUNE_EPT': 'required'}
    assert data['owned_extra_specs'] == sorted(data['owned_extra_specs'])
    assert set(data['extra_specs']) <= set(data['owned_extra_specs'])
    # Who reads what (kvmtune.tuning.novaconf.services, checked against Nova).
    assert data['nova_conf_services'] == {
        'DEFAULT': {'reserved_host_memory_mb': ['compute'],
                    'reserved_huge_pages': ['compute']},
        'compute': {'cpu_shared_set': ['compute'],
                    'cpu_dedicated_set': ['compute']},
        'filter_scheduler': {'enabled_filters': ['scheduler', 'conductor']},
        'workarounds': {'disable_fallback_pcpu_query': ['scheduler']}}
    assert all(c['status'] == 'pass' for c in data['checks']), data['checks']
    assert json.loads(json.dumps(data)) == data


def test_amd_uses_npt():
    plan = plan_for('pinned-hugepages-ept', AMD)
    assert plan.modprobe == {
        '/etc/modprobe.d/kvm.conf': 'options kvm_amd npt=1\n'}
    check = checks_by_name(plan)['ept-enabled']
    assert (check.status, check.message) == ('pass', 'kvm_amd npt=Y')


def test_pvm_guest_fails_and_warns_with_fixes():
    plan = plan_for('pinned-hugepages-ept', PVM)
    compute = plan.nova_conf['compute']
    assert compute == {'cpu_shared_set': '0', 'cpu_dedicated_set': '1'}
    assert plan.modprobe == {}
    checks = checks_by_name(plan)
    assert checks['ept-enabled'].status == 'fail'
    assert checks['hugepage-pool'].status == 'fail'
    assert 'hugepagesz=1G' in checks['hugepage-pool'].fix
    assert checks['isolcpus'].status == 'warn'
    for check in plan.checks:
        if check.status != 'pass':
            assert check.fix
    # PVM boots no stock guest: virt_type qemu, guests get emulated SVM
    # (tests/unit/tuning/tuners/test_nested.py has Nova's check of it).
    nested = plan_for('nested-host', PVM)
    check = checks_by_name(nested)['nested-enabled']
    assert check.status == 'pass' and 'virt_type qemu' in check.message
    assert nested.extra_specs == {'trait:CUSTOM_KVMTUNE_NESTED': 'required'}
    assert nested.nova_conf['libvirt'] == {
        'cpu_mode': 'custom', 'cpu_models': 'EPYC',
        'cpu_model_extra_flags': 'svm,npt',
        'disk_cachemodes': 'file=none,block=none'}


def test_module_options_merge_into_one_file():
    facts = host_facts.gather(INTEL)
    refs = profile('nested-host').tuner_refs + \
        profile('pinned-hugepages-ept').tuner_refs[2:]
    merged = profiles.Profile('x', 'x', 'x', 'x.yaml', refs)
    plan = plans.build_plan(merged, facts)
    assert plan.modprobe == {
        '/etc/modprobe.d/kvm.conf': 'options kvm_intel nested=1 ept=1\n'}


def test_baseline_changes_nothing():
    plan = plan_for('baseline', PVM)
    data = plan.to_dict()
    assert data['nova_conf'] == {} and data['kernel_args'] == []
    assert data['extra_specs'] == {} and data['checks'] == []


class _SharedSetTwin(base.Tuner):
    """A tuner that disagrees with cpu_pinning about a nova.conf option."""

    name = 'twin'
    NOVA_CONF = {('compute', 'cpu_shared_set'): '0-3'}


class _SpecTwin(base.Tuner):
    name = 'spec_twin'
    OWNED_EXTRA_SPECS = ('hw:cpu_policy',)
    EXTRA_SPECS = {'hw:cpu_policy': 'shared'}


class _BadSpec(base.Tuner):
    name = 'bad_spec'
    EXTRA_SPECS = {'hw:cpu_policy': 'pinned'}


def _profile_with(*classes):
    pinning = profile('cpu-pinning').tuner_refs
    refs = pinning + [profiles.TunerRef(c.name, {}, c) for c in classes]
    return profiles.Profile('p', 'd', 's', 'p.yaml', refs)


@pytest.mark.parametrize('tuner,key', [
    (_SharedSetTwin, '[compute] cpu_shared_set'),
    (_SpecTwin, 'hw:cpu_policy'),
])
def test_conflicting_tuners_are_an_input_error(tuner, key):
    with pytest.raises(InputError) as err:
        plans.build_plan(_profile_with(tuner), host_facts.gather(PVM))
    line = err.value.line()
    assert line.startswith(f'p.yaml: {key}: tuners cpu_pinning and '
                           f'{tuner.name} set different')


def test_invalid_extra_spec_from_a_tuner_is_an_input_error():
    with pytest.raises(InputError) as err:
        plans.build_plan(_profile_with(_BadSpec), host_facts.gather(PVM))
    assert "p.yaml: bad_spec: hw:cpu_policy: 'pinned' is not valid" in \
        err.value.line()


# The front door (doc/design.md 9.2): for_host, from_dict, load.

OFFLINE = os.path.join(paths.HOSTS, 'real', 'offline-cpu0-node0')


def test_for_host_builds_one_plan_per_profile_on_one_facts():
    built = plans.for_host(['cpu-pinning', 'hugepages'], root=INTEL)
    assert [plan.profile for plan in built] == ['cpu-pinning', 'hugepages']
    assert {plan.facts_source for plan in built} == {INTEL}
    assert built[0].to_dict() == plan_for('cpu-pinning', INTEL).to_dict()


def test_for_host_refuses_a_withheld_plan_itself():
    # The capture whose node 0 is offline cannot be split safely
    # (tests/unit/tuning/tuners/test_cpu_pinning.py): the front door refuses
    # it.
    assert plan_for('cpu-pinning', OFFLINE).withheld
    with pytest.raises(InputError, match='cpu_pinning: .*plan is incomplete'):
        plans.for_host('cpu-pinning', root=OFFLINE)


def test_for_host_needs_a_profile():
    with pytest.raises(InputError, match='no profile given'):
        plans.for_host([], root=INTEL)


def test_plan_json_round_trips(tmp_path):
    plan = plan_for('pinned-hugepages-ept', INTEL)
    path = tmp_path / 'plan.json'
    path.write_text(json.dumps(plan.to_dict()))
    again = plans.load(str(path))
    assert again.to_dict() == plan.to_dict()


def test_plan_file_with_withheld_values_is_refused():
    data = plan_for('cpu-pinning', OFFLINE).to_dict()
    with pytest.raises(InputError, match='plan is incomplete'):
        plans.from_dict(data, source='p.json')


@pytest.mark.parametrize('mutate, match', [
    (lambda d: d.pop('nova_conf'), 'p.json: nova_conf: missing key'),
    (lambda d: d.update(kernel_args='x'), 'kernel_args: wrong type'),
    (lambda d: d['nova_conf'].update(compute=[1]),
     'nova_conf.compute: options must map'),
    (lambda d: d['hugepages'].append({'node': 'x'}),
     'hugepages/checks: malformed entry'),
])
def test_plan_file_of_the_wrong_shape_is_one_line(mutate, match):
    data = plan_for('pinned-hugepages-ept', INTEL).to_dict()
    mutate(data)
    with pytest.raises(InputError, match=match):
        plans.from_dict(data, source='p.json')


def test_plan_file_not_an_object():
    with pytest.raises(InputError, match='not a plan'):
        plans.from_dict([], source='p.json')


def test_a_computed_value_with_a_newline_is_refused_by_the_plan():
    # Whatever a tuner computed (facts included) reaches a file on one line.
    merge = plans._Merge('nova.conf values', 'facts.json')
    with pytest.raises(InputError, match=r'facts.json: cpu_pinning: '
                       r'\[compute\] cpu_shared_set: holds a control'):
        merge.add(('compute', 'cpu_shared_set'), '0\n[DEFAULT]',
                  'cpu_pinning', label='[compute] cpu_shared_set')


# -- every command that plans refuses a plan that withheld values -------

# A real capture whose /proc/meminfo has no MemTotal: the hugepages tuner
# withholds the pool rather than guess its size.
NO_MEMTOTAL = os.path.join(paths.HOSTS, 'real', 'x86_64-epyc_7451')


def _no_write(*args, **kwargs):
    raise AssertionError('a withheld plan reached a write')


def _cli(*argv):
    """A kvmtune command: exit 2 and its one stderr line."""
    def run(capsys):
        assert cli.main(list(argv)) == 2
        return capsys.readouterr().err
    return run


def _devstack(*argv):
    """DevStack's plugin.sh step (python -m kvmtune.devstack)."""
    def run(capsys):
        from kvmtune.devstack import __main__ as devstack

        assert devstack.main(['--state-dir', 'state', *argv]) == 2
        return capsys.readouterr().err
    return run


def _call(function):
    """A library path a shell calls (the main job's steps, the Tempest
    plugin): the InputError, as the shell prints it."""
    def run(capsys):
        with pytest.raises(InputError) as raised:
            function(host_facts.gather(NO_MEMTOTAL))
        return f'kvmtune: error: {raised.value.line()}\n'
    return run


def _main_job_setup(facts):
    from kvmtune.mainjob import compute
    compute.local_setup(facts, 'nova.conf', 1, 256, 'hugepages')


def _main_job_nova_conf(facts):
    from kvmtune.mainjob import compute
    compute.apply_nova_conf('hugepages', facts, 'nova.conf')


def _main_job_record(facts):
    from kvmtune.results import records
    records.for_sweep('hugepages', facts, 'tcg', 'fio-randread-4k')


def _tempest_plugin(facts):
    from kvmtune.openstack import planning
    planning.plan_for('hugepages', root=NO_MEMTOTAL)


# Every path from a profile on a host to something done with its plan:
# each is fed the capture above (its own --root/--facts, or as this host)
# and must refuse in one line before it writes or sends anything.
PLANNING = {
    'plan': _cli('plan', '--profile', 'hugepages', '--root', NO_MEMTOTAL),
    'plan -f json': _cli('plan', '--profile', 'hugepages', '--facts',
                         'facts.json', '-f', 'json'),
    'export': _cli('export', '--profile', 'hugepages', '--root',
                   NO_MEMTOTAL, '--target', 'oslo-dropin', '--output',
                   'out'),
    'nova-conf apply': _cli('nova-conf', 'apply', '--profile', 'hugepages',
                            '--root', NO_MEMTOTAL, '--config', 'nova.conf'),
    'pages apply': _cli('pages', 'apply', '--profile', 'hugepages'),
    'verify': _cli('verify', '--profile', 'hugepages', '--root',
                   NO_MEMTOTAL, '--layer', 'host'),
    'verify --plan': _cli('verify', '--plan', 'withheld-plan.json',
                          '--root', NO_MEMTOTAL, '--layer', 'host'),
    'verify --all-hosts': _cli('verify', '--all-hosts', '--os-cloud',
                               'replay', '--facts-dir', 'facts',
                               '--profile', 'hugepages'),
    'capacity': _cli('capacity', '--os-cloud', 'replay', '--flavor',
                     'kvmtune-ft-002e681a-pinned', '--facts-dir', 'facts',
                     '--profile', 'hugepages', '--prometheus',
                     'capacity.prom'),
    'flavor diff': _cli('flavor', 'diff', '--os-cloud', 'never-reached',
                        '--profile', 'hugepages', '--root', NO_MEMTOTAL,
                        '--name', 'f'),
    'flavor apply': _cli('flavor', 'apply', '--os-cloud', 'never-reached',
                         '--profile', 'hugepages', '--root', NO_MEMTOTAL,
                         '--from', 'm1.small'),
    'flavor remove': _cli('flavor', 'remove', '--os-cloud',
                          'never-reached', '--profile', 'hugepages',
                          '--root', NO_MEMTOTAL, '--name', 'f'),
    'main job: compute setup': _call(_main_job_setup),
    'main job: nova.conf': _call(_main_job_nova_conf),
    'main job: sweep record': _call(_main_job_record),
    'DevStack post-config': _devstack('post-config', '--nova-conf',
                                      'nova.conf', '--profiles', 'hugepages',
                                      '--modprobe-dir', 'modprobe.d',
                                      '--hugepages', 'plan'),
    'DevStack extra': _devstack('extra', '--os-cloud', 'never-reached',
                                '--profiles', 'hugepages', '--base-flavor',
                                'm1.small'),
    'Tempest plugin': _call(_tempest_plugin),
}


@pytest.mark.parametrize('path', sorted(PLANNING))
def test_every_path_that_plans_refuses_a_withheld_plan(
        path, tmp_path, monkeypatch, capsys):
    from kvmtune import fileio
    from kvmtune.openstack import connection
    from kvmtune.tuning import pages
    from tests.unit.capacity.replay import load
    from tests.unit.capacity.replay import Replay

    monkeypatch.chdir(tmp_path)
    real = host_facts.gather(NO_MEMTOTAL)
    # what the paths may read: nova.conf, the facts as JSON (also the
    # capacity facts of the recorded cloud's one node, "vm"), the plan
    # ``kvmtune plan -f json`` prints (it shows the withheld values)
    (tmp_path / 'nova.conf').write_text('[DEFAULT]\n')
    (tmp_path / 'facts.json').write_text(json.dumps(real))
    (tmp_path / 'facts').mkdir()
    (tmp_path / 'facts' / 'vm.json').write_text(json.dumps(real))
    (tmp_path / 'withheld-plan.json').write_text(json.dumps(
        plans.for_host('hugepages', facts=real,
                       refuse_withheld=False)[0].to_dict()))
    given = sorted(os.listdir(tmp_path))
    # the paths that plan for this host: here, the capture's facts
    monkeypatch.setattr(host_facts, 'resolve', lambda **kw: real)
    monkeypatch.setattr(fileio, 'write_atomic', _no_write)
    monkeypatch.setattr(pages, 'apply', _no_write, raising=False)
    if path in ('capacity', 'verify --all-hosts'):
        # both read the cloud (GETs only) before they plan per node; the
        # fleet view lists the nodes without /detail
        replay = Replay(load('testcloud-libvirt-pinned.json'))
        detail = replay.answers['compute /os-hypervisors/detail']
        replay.answers['compute /os-hypervisors'] = {'hypervisors': [
            {'hypervisor_hostname': node['hypervisor_hostname'],
             'id': node['id']} for node in detail['hypervisors']]}
        monkeypatch.setattr(connection.Cloud, 'connect',
                            classmethod(lambda cls, name: replay))
    else:
        monkeypatch.setattr(connection.Cloud, 'connect', _no_write)

    err = PLANNING[path](capsys)
    assert err.count('\n') == 1, err
    assert err.startswith('kvmtune: error: ')
    assert re.search(r': hugepages: the 1G huge page pool is withheld: ', err)
    assert 'memory size is unknown' in err
    assert 'the plan is incomplete for this host' in err
    assert (tmp_path / 'nova.conf').read_text() == '[DEFAULT]\n'
    assert sorted(os.listdir(tmp_path)) == given


def test_only_an_inspection_path_gets_a_withheld_plan(tmp_path, capsys):
    """The front door returns a withheld plan only when the caller says
    so at the call: kvmtune plan shows what was withheld (then exits 2,
    above), profile validate checks a file on an empty host."""
    real = host_facts.gather(NO_MEMTOTAL)
    with pytest.raises(InputError, match='withheld'):
        plans.for_host('hugepages', facts=real)
    [plan] = plans.for_host('hugepages', facts=real, refuse_withheld=False)
    assert plan.withheld[0]['tuner'] == 'hugepages'
    facts_file = tmp_path / 'facts.json'
    facts_file.write_text(json.dumps(real))
    assert cli.main(['plan', '--profile', 'hugepages', '--facts',
                     str(facts_file), '-f', 'json']) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)['withheld'] == plan.to_dict()['withheld']
    assert err.count('\n') == 1 and 'withheld' in err
    # an empty host withholds the pool as well: the file is still OK
    hugepages = profiles.load('hugepages', profiles.search_dirs())
    assert cli.main(['profile', 'validate', hugepages.path]) == 0
    assert ': OK: profile hugepages' in capsys.readouterr().out


@pytest.mark.parametrize('name', ['pinned-hugepages-ept', 'baseline',
                                  'nested-host', 'io-tuned', 'net-tuned'])
def test_plan_json_keys_are_the_typed_keys(name):
    """PlanDict and TunerCheckDict (for mypy) name exactly what to_dict writes
    (doc/design.md 4), so the static contract cannot drift from the JSON."""
    data = plan_for(name, INTEL).to_dict()
    assert set(data) == plans.PlanDict.__required_keys__
    for check in data['checks']:
        assert set(check) == base.TunerCheckDict.__required_keys__
    for pool in data['hugepages']:
        assert set(pool) == plans.HugepageRequest.__required_keys__
    for note in data['notes']:
        assert set(note) == plans.Note.__required_keys__
