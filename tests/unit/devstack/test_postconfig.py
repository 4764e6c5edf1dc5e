"""kvmtune.devstack.postconfig: post-config and clean on real files.

The files are nova.conf as DevStack writes it (lib/nova create_nova_conf
and lib/nova_plugins/hypervisor-libvirt, with the QEMU fallback of
lib/nova: cpu_mode custom, cpu_models Nehalem). Nova's own start-up check
of the result runs in tests/functional/test_devstack_real.py.
"""

import json
import os

import pytest

from kvmtune.devstack import changes as changes_mod
from kvmtune.devstack import postconfig
from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import inifile

DEVSTACK_NOVA_CONF = """\
[DEFAULT]
debug = True
compute_driver = libvirt.LibvirtDriver

[libvirt]
live_migration_uri = qemu+ssh://stack@%s/system
cpu_mode = custom
virt_type = qemu
cpu_models = Nehalem

[compute]
cpu_shared_set = 0
"""

NESTED = {'profile': 'nested-host', 'nova_conf': {
    'libvirt': {'cpu_mode': 'host-passthrough'}}}
PINNED = {'profile': 'pinned', 'nova_conf': {
    'compute': {'cpu_dedicated_set': '1'},
    'DEFAULT': {'reserved_huge_pages': ['node:0,size:2MB,count:1']},
    'workarounds': {'skip_cpu_compare_at_startup': 'True'}}}


@pytest.fixture
def nova_conf(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text(DEVSTACK_NOVA_CONF)
    return path


@pytest.fixture
def changes(tmp_path):
    return changes_mod.Changes(str(tmp_path / 'state'))


def values(path, section, option):
    return inifile.IniFile(path.read_text()).get_all(section, option)


def test_nova_options_refuses_conflicting_profiles():
    plans = [{'profile': 'a', 'nova_conf': {'compute': {
                 'cpu_dedicated_set': '1'}}},
             {'profile': 'b', 'nova_conf': {'compute': {
                 'cpu_dedicated_set': '1-3'}}}]
    with pytest.raises(InputError,
                       match=r'^KVMTUNE_PROFILES: \[compute\] '
                             r'cpu_dedicated_set: profiles a '
                             r'and b want different values') as err:
        postconfig.nova_options(plans)
    assert 'profiles a and b' in err.value.line()
    assert '[compute] cpu_dedicated_set' in err.value.line()


def test_nova_options_merges_agreeing_profiles():
    assert postconfig.nova_options([PINNED, NESTED, {
        'profile': 'c', 'nova_conf': {'compute': {
            'cpu_dedicated_set': '1'}}}]) == {
        'compute': {'cpu_dedicated_set': '1'},
        'DEFAULT': {'reserved_huge_pages': ['node:0,size:2MB,count:1']},
        'workarounds': {'skip_cpu_compare_at_startup': 'True'},
        'libvirt': {'cpu_mode': 'host-passthrough'}}


def test_nested_host_takes_devstacks_cpu_models_away_and_clean_puts_back(
        nova_conf, changes, tmp_path, capsys):
    postconfig.post_config(changes, str(nova_conf), [NESTED, PINNED])
    assert values(nova_conf, 'libvirt', 'cpu_mode') == ['host-passthrough']
    # Nova refuses cpu_models unless cpu_mode is custom.
    assert values(nova_conf, 'libvirt', 'cpu_models') == []
    assert values(nova_conf, 'compute', 'cpu_dedicated_set') == ['1']
    assert 'cpu_models = Nehalem removed' in capsys.readouterr().out
    recorded = json.loads((tmp_path / 'state' / 'changes.json').read_text())
    models = [e for e in recorded['nova_conf']
              if e['option'] == 'cpu_models']
    assert models == [{
        'path': str(nova_conf), 'section': 'libvirt',
        'option': 'cpu_models', 'before': ['Nehalem'], 'after': None,
        'anchor': 'virt_type', 'section_existed': True,
        'ended_blank': False}]
    # DevStack copies nova.conf to nova-cpu.conf when it starts n-cpu,
    # then sets its own options there.
    cpu_conf = tmp_path / 'nova-cpu.conf'
    cpu_conf.write_text(nova_conf.read_text() + '\n[vnc]\nenabled = false\n')
    # A second post-config changes no byte.
    text = nova_conf.read_text()
    postconfig.post_config(changes, str(nova_conf), [NESTED, PINNED])
    assert nova_conf.read_text() == text

    postconfig.clean(changes, also=[str(cpu_conf)])
    assert nova_conf.read_text() == DEVSTACK_NOVA_CONF
    assert cpu_conf.read_text() == \
        DEVSTACK_NOVA_CONF + '\n[vnc]\nenabled = false\n'
    assert not (tmp_path / 'state' / 'changes.json').exists()
    assert not (tmp_path / 'nova.conf.kvmtune.bak').exists()


def test_cpu_mode_custom_without_models_is_refused_before_writing(
        tmp_path, changes):
    path = tmp_path / 'nova.conf'
    path.write_text('[libvirt]\nvirt_type = qemu\n')
    with pytest.raises(InputError,
                       match=r'\[libvirt\] cpu_models: cpu_mode = custom '
                             r'needs cpu_models') as err:
        postconfig.post_config(changes, str(path), [{
            'profile': 'x', 'nova_conf': {'libvirt': {
                'cpu_mode': 'custom'}}}])
    assert '[libvirt] cpu_models' in err.value.line()
    assert path.read_text() == '[libvirt]\nvirt_type = qemu\n'


def test_clean_leaves_an_option_changed_since(nova_conf, changes, capsys):
    postconfig.post_config(changes, str(nova_conf), [PINNED])
    text = nova_conf.read_text().replace('cpu_dedicated_set = 1',
                                         'cpu_dedicated_set = 2-3')
    nova_conf.write_text(text)
    postconfig.clean(changes)
    assert values(nova_conf, 'compute', 'cpu_dedicated_set') == ['2-3']
    assert values(nova_conf, 'DEFAULT', 'reserved_huge_pages') == []
    # [workarounds] was kvmtune's own and is empty again: gone.
    assert '[workarounds]' not in nova_conf.read_text()
    out = capsys.readouterr().out
    assert 'cpu_dedicated_set was changed after kvmtune set it' in out


def test_tempest_options_set_and_put_back(tmp_path, changes):
    conf = tmp_path / 'tempest.conf'
    original = '[DEFAULT]\nlog_dir = /tmp\n\n[compute]\nmin_compute = 1\n'
    conf.write_text(original)
    postconfig.set_options(changes, 'tempest_conf', str(conf), 'kvmtune',
                           [('flavors', 'a:m1.small.a'),
                            ('traits_tagged', 'True')])
    assert values(conf, 'kvmtune', 'flavors') == ['a:m1.small.a']
    postconfig.set_options(changes, 'tempest_conf', str(conf), 'kvmtune',
                           [('flavors', 'a:m1.small.a'),
                            ('traits_tagged', 'True')])
    assert conf.read_text().count('[kvmtune]') == 1
    postconfig.clean(changes)
    assert conf.read_text() == original


def test_modprobe_files_written_and_undone_exactly(tmp_path, changes):
    modprobe = tmp_path / 'modprobe.d'
    modprobe.mkdir()
    (modprobe / 'kvm.conf').write_text('options kvm ignore_msrs=1\n')
    postconfig._write_file(changes, str(modprobe / 'kvm_intel.conf'),
                           'options kvm_intel nested=1\n')
    postconfig._write_file(changes, str(modprobe / 'kvm.conf'),
                           'options kvm ignore_msrs=0\n')
    recorded = json.loads((tmp_path / 'state' / 'changes.json').read_text())
    assert [f['before'] for f in recorded['files']] == [
        None, 'options kvm ignore_msrs=1\n']
    postconfig.clean(changes)
    assert sorted(os.listdir(modprobe)) == ['kvm.conf']
    assert (modprobe / 'kvm.conf').read_text() == \
        'options kvm ignore_msrs=1\n'
    assert not (tmp_path / 'state' / 'changes.json').exists()


def test_plan_pools_merge_and_refuse_disagreement():
    a = {'profile': 'a', 'hugepages': [
        {'node': 1, 'size_kb': 2048, 'count': 8},
        {'node': 0, 'size_kb': 2048, 'count': 8}]}
    b = {'profile': 'b', 'hugepages': [
        {'node': 0, 'size_kb': 2048, 'count': 8}]}
    assert [(p.node, p.count) for p in postconfig.plan_pools([a, b])] == [
        (0, 8), (1, 8)]
    b['hugepages'][0]['count'] = 9
    with pytest.raises(InputError,
                       match='^KVMTUNE_PROFILES: node 0 2 MB: profiles want 8 '
                             'and 9 pages') as err:
        postconfig.plan_pools([a, b])
    assert 'node 0 2 MB' in err.value.line()


def test_build_plans_refuses_a_withheld_plan(monkeypatch):
    # The real capture whose /proc/meminfo has no MemTotal: the hugepages
    # tuner withholds the pool, and DevStack's post-config stops before it
    # writes anything (through kvmtune.tuning.plan.for_host, the one front
    # door).
    from kvmtune import facts as host_facts
    from tests import paths

    real = host_facts.gather(os.path.join(paths.HOSTS, 'real',
                                          'x86_64-epyc_7451'))
    monkeypatch.setattr(host_facts, 'resolve', lambda **kw: real)
    with pytest.raises(InputError, match='withheld.*memory size is unknown'):
        postconfig.build_plans(['hugepages'])
    assert postconfig.build_plans([]) == []
