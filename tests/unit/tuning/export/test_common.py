"""kvmtune.tuning.export.common: what every export target shares: the
host an export is for, nova.conf read as a base, INI and YAML rendering,
Nova's provider config, and the kernel/modprobe files for the host. (The
targets: the other files of this directory; writing an export: the
writer's tests.)"""

import os

import pytest
import yaml

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning.export import common
from kvmtune.tuning import plan as plans
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')  # compute-intel-1


@pytest.fixture(scope='module')
def intel():
    return host_facts.gather(INTEL)


def test_check_host_takes_the_host_the_facts_were_made_on(intel):
    assert common.check_host('compute-intel-1', intel) == 'compute-intel-1'
    assert common.check_host('compute-intel-1.example.org', intel) == \
        'compute-intel-1.example.org'
    assert common.check_host(None, intel) is None
    with pytest.raises(InputError, match='the facts were made on '
                       'compute-intel-1, not on compute-2') as err:
        common.check_host('compute-2', intel)
    assert err.value.key == '--host'


@pytest.mark.parametrize('name', ['-compute', 'a b', 'x;reboot', 'a' * 254,
                                  ''])
def test_check_host_refuses_names_a_tool_would_not_take(intel, name):
    with pytest.raises(InputError, match='not a host name'):
        common.check_host(name, intel)


def test_check_host_refuses_facts_of_no_kvm_host(intel):
    no_kvm = dict(intel, virt=dict(intel['virt'], kvm_device=False,
                                   mechanism=None),
                  cpu=dict(intel['cpu'], flags=['fpu', 'pae']))
    with pytest.raises(InputError, match='not a KVM compute node'):
        common.check_host(None, no_kvm)
    # modules unloaded, but the CPU has VT-x: a KVM host all the same
    unloaded = dict(no_kvm, cpu=dict(intel['cpu'], flags=['vmx']))
    assert common.check_host(None, unloaded) is None


def test_read_base_gives_every_value_of_every_section(tmp_path):
    path = tmp_path / 'nova.conf'
    text = ('[DEFAULT]\nreserved_huge_pages = node:0,size:2048,count:1\n'
            'reserved_huge_pages = node:1,size:2048,count:1\n'
            '[Libvirt]\ncpu_mode = host-model\n')
    path.write_text(text)
    assert common.read_base(str(path)) == {
        'DEFAULT': {'reserved_huge_pages': ['node:0,size:2048,count:1',
                                            'node:1,size:2048,count:1']},
        'libvirt': {'cpu_mode': ['host-model']}}
    assert common.read_base(str(path), with_text=True)[1] == text


def test_render_ini_one_line_per_value_under_a_wrapped_header():
    text = common.render_ini(
        {'DEFAULT': {'reserved_huge_pages': ['a', 'b']},
         'libvirt': {'cpu_mode': 'host-passthrough'}},
        'word ' * 30)
    lines = text.splitlines()
    header = [line for line in lines if line.startswith('#')]
    assert len(header) == 2 and all(len(line) <= 78 for line in header)
    assert lines[len(header):] == [
        '', '[DEFAULT]', 'reserved_huge_pages = a',
        'reserved_huge_pages = b', '', '[libvirt]',
        'cpu_mode = host-passthrough']


def test_render_yaml_keeps_strings_strings_and_sets_sorted():
    text = common.render_yaml({'enabled': 'yes', 'empty': '', 'n': 1,
                               'traits': {'B', 'A'}}, 'a header')
    assert text.startswith('---\n# a header\n')
    loaded = yaml.safe_load(text)
    assert loaded == {'enabled': 'yes', 'empty': '', 'n': 1,
                      'traits': {'A', 'B'}}
    assert text.index('  A: null') < text.index('  B: null')
    # the same data renders the same bytes
    assert text == common.render_yaml({'enabled': 'yes', 'empty': '',
                                       'n': 1, 'traits': {'A', 'B'}},
                                      'a header')


def test_provider_config_is_novas_schema():
    assert common.provider_config(['CUSTOM_KVMTUNE_EPT']) == {
        'meta': {'schema_version': '1.0'},
        'providers': [{'identification': {'uuid': '$COMPUTE_NODE'},
                       'traits': {'additional': ['CUSTOM_KVMTUNE_EPT']}}]}


def test_host_files_carry_the_plans_modprobe_and_kernel_args(intel):
    [plan] = plans.for_host(['pinned-hugepages-ept'], facts=intel)
    ctx = common.Context(plan=plan, facts=intel, host='compute-intel-1')
    files = {f.path: f for f in common.host_files(ctx, prefix='hosts/c1')}
    grub = files[os.path.join('hosts/c1', common.GRUB_FILE)]
    assert grub.fmt == 'text'
    assert grub.text.rstrip().endswith(
        f'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX '
        f'{" ".join(plan.kernel_args)}"')
    comment = ' '.join(line[2:] for line in grub.text.splitlines()
                       if line.startswith('# '))
    assert comment.endswith('Kernel arguments: run update-grub and reboot '
                            'for them to take effect.')
    modprobe = files.get(os.path.join('hosts/c1', common.MODPROBE_FILE))
    assert (modprobe is not None) == bool(plan.modprobe)
    if modprobe:
        assert modprobe.text.splitlines()[-1].startswith('options kvm')
    assert 'pinned-hugepages-ept' in ctx.header


def test_a_plan_that_changes_no_host_file(intel):
    [plan] = plans.for_host(['baseline'], facts=intel)
    ctx = common.Context(plan=plan, facts=intel)
    assert common.host_files(ctx) == []
    assert common.modprobe_text(plan) is None


OPERATOR_FILTERS = ('PciPassthroughFilter',
                    'AggregateInstanceExtraSpecsFilter')


def _ctx(intel, profile, base_text=None):
    from kvmtune.tuning import profiles
    plan = plans.build_plan(profiles.load(profile, profiles.search_dirs()),
                            intel)
    return common.Context(plan=plan, facts=intel, base_text=base_text,
                          base_path=None if base_text is None else 'BASE')


def test_nova_conf_extends_the_bases_lists_as_nova_conf_apply(intel):
    base = ('[filter_scheduler]\nenabled_filters = ComputeFilter,'
            + ','.join(OPERATOR_FILTERS) + '\n[libvirt]\n'
            'disk_cachemodes = network=writeback\n'
            '[compute]\ncpu_dedicated_set = 0-3\n')
    alone = _ctx(intel, 'pinned-hugepages-ept')
    merged = _ctx(intel, 'pinned-hugepages-ept', base)
    planned = alone.plan.nova_conf['filter_scheduler']['enabled_filters']
    assert not set(OPERATOR_FILTERS) & set(planned.split(','))
    got = merged.nova_conf()
    assert got['filter_scheduler']['enabled_filters'] == (
        'ComputeFilter,' + ','.join(OPERATOR_FILTERS) + ',NUMATopologyFilter')
    # an option kvmtune owns is the plan's, whatever the base says
    assert got['compute'] == alone.plan.nova_conf['compute']
    # what every service's file is made of
    assert merged.by_service()['scheduler']['filter_scheduler'] == \
        got['filter_scheduler']
    assert [item[:2] for item in merged.extended()] == [
        ('filter_scheduler', 'enabled_filters')]
    io = _ctx(intel, 'io-tuned', base).nova_conf()
    assert io['libvirt']['disk_cachemodes'] == \
        'network=writeback,file=none,block=none'


def test_extension_notes_say_whose_items_and_what_beats_them(intel):
    notes = []
    _ctx(intel, 'pinned-hugepages-ept').extension_notes(
        notes, lambda section, option: f'{option} beaten')
    assert 'without --nova-conf: it replaces the items your nova.conf ' \
        'has for enabled_filters' in notes[0]
    assert notes[1] == '[filter_scheduler] enabled_filters: ' \
        'enabled_filters beaten'
    notes = []
    _ctx(intel, 'pinned-hugepages-ept', '[DEFAULT]\n').extension_notes(
        notes, lambda section, option: None)
    assert notes == [
        '[filter_scheduler] enabled_filters = ' + _ctx(
            intel, 'pinned-hugepages-ept').plan.nova_conf[
                'filter_scheduler']['enabled_filters']
        + ': the items of BASE, then kvmtune\'s']
    notes = []
    _ctx(intel, 'baseline', '[DEFAULT]\n').extension_notes(
        notes, lambda section, option: 'never')
    assert notes == []


@pytest.mark.parametrize('target', ['tuned', 'provider-config'])
def test_nova_conf_is_refused_by_a_target_it_means_nothing_to(
        tmp_path, capsys, target):
    from kvmtune import cli
    base = tmp_path / 'nova.conf'
    base.write_text('[DEFAULT]\n')
    out = tmp_path / 'out'
    assert cli.main(['export', '--profile', 'pinned-hugepages-ept',
                     '--target', target, '--root', INTEL, '--output',
                     str(out), '--nova-conf', str(base)]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f'--nova-conf: the {target} target writes no nova.conf ' \
        'option' in err
    assert not out.exists()
