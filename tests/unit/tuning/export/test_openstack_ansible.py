"""openstack-ansible target, proven by OSA's config_template action plugin.

The host_vars and group_vars files are read by Ansible's own inventory (a
compute host and a controller in the nova_scheduler and nova_conductor
groups), config_template (PyPI ansible-config-template) renders
``nova_nova_conf_overrides`` into a realistic nova.conf as os_nova does
(tasks/nova_post_install.yml: config_type ini), and oslo.config with
Nova's options reads the planned values, the multi-valued option included.
The provider overrides are rendered the same way (config_type yaml) and
loaded by Nova's provider config loader.
"""

import os
import re
import shutil

import pytest
import yaml

from kvmtune.tuning.novaconf import services
from tests import paths
from tests.unit.tuning.export import consumers
from tests.unit.tuning.export import test_kolla
from tests.unit.tuning.export.test_kolla import role_template

CONTROLLER = 'controller-1'


@consumers.needs_osa
@consumers.needs_nova
def test_config_template_then_nova_reads_the_plan(tmp_path):
    out = tmp_path / 'out'
    consumers.export('openstack-ansible', out)
    inventory = tmp_path / 'inventory'
    shutil.copytree(out / 'etc/openstack_deploy', inventory)
    (inventory / 'hosts').write_text(
        f'[nova_compute]\n{consumers.HOST} ansible_connection=local\n'
        f'[nova_scheduler]\n{CONTROLLER} ansible_connection=local\n'
        f'[nova_conductor]\n{CONTROLLER}\n')
    template = tmp_path / 'nova.conf.j2'
    template.write_text(role_template())
    rendered = tmp_path / 'rendered'
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{
        'hosts': 'all', 'gather_facts': False,
        'tasks': [
            {'file': {'path': f'{rendered}/{{{{ inventory_hostname }}}}/'
                              'provider_config', 'state': 'directory'}},
            {'config_template': {
                'src': str(template),
                'dest': f'{rendered}/{{{{ inventory_hostname }}}}/nova.conf',
                'config_overrides': '{{ nova_nova_conf_overrides }}',
                'config_type': 'ini'}},
            {'config_template': {
                'content': '{{ item.content }}',
                'dest': f'{rendered}/{{{{ inventory_hostname }}}}/'
                        'provider_config/{{ item.name }}.yaml',
                'config_type': 'yaml'},
             'loop': '{{ nova_provider_overrides | default([]) }}'},
        ]}]))
    consumers.ansible_playbook(
        playbook, inventory, tmp_path,
        os.path.join(consumers.OSA_VENV, 'share', 'ansible', 'plugins',
                     'action'), venv=consumers.OSA_VENV)

    plan, _ = consumers.plan()
    keys = [(s, o) for s, opts in plan.nova_conf.items() for o in opts]
    wanted = consumers.planned(plan.nova_conf)
    for host, service_list in ((consumers.HOST, ('compute',)),
                               (CONTROLLER, ('scheduler', 'conductor'))):
        conf = rendered / host / 'nova.conf'
        got = consumers.nova_reads(keys, files=[str(conf)], dirs=[],
                                   home=tmp_path)
        for key, value in wanted.items():
            section, option = key.split('.')
            readers = services.readers(section, option)
            if any(service in readers for service in service_list):
                assert got[key] == value, (host, key)
            elif 'compute' in readers:
                # Never a compute option in a controller's nova.conf.
                assert got[key] != value, (host, key)
    # (the multi-valued option included: a list, compared just above)
    assert wanted['DEFAULT.reserved_huge_pages'] == [
        'node:0,size:1GB,count:1', 'node:1,size:1GB,count:1']
    loaded = consumers.nova_provider_configs(
        rendered / consumers.HOST / 'provider_config')
    from kvmtune.tuning import traits
    assert loaded == {'$COMPUTE_NODE': sorted(
        traits.from_facts(consumers.plan()[1]))}
    assert not os.listdir(rendered / CONTROLLER / 'provider_config')


AMD_HOST_DIR = os.path.join(paths.HOSTS, 'amd-epyc-npt')
AMD_HOST = 'compute-amd-1'      # the fixture's /proc/sys/kernel/hostname


@pytest.mark.parametrize('profile, host, root, switch, own_file', [
    # nested=1 is all the plan's modprobe asks: os_nova's switch writes
    # /etc/modprobe.d/kvm.conf (its files/kvm.conf), kvmtune writes none
    ('nested-host', consumers.HOST, consumers.HOST_DIR, True, None),
    ('nested-host', AMD_HOST, AMD_HOST_DIR, True, None),
    # ept=1 is not in os_nova's file: kvmtune's own kvm.conf, and the
    # switch off, since both would be the same file
    ('pinned-hugepages-ept', consumers.HOST, consumers.HOST_DIR, False,
     'options kvm_intel ept=1\n'),
    # no module options at all: the switch is left to the operator
    ('pinned-hugepages', consumers.HOST, consumers.HOST_DIR, None, None),
], ids=['nested-intel', 'nested-amd', 'ept-intel', 'no-modprobe'])
def test_nested_only_uses_the_role_switch(tmp_path, profile, host, root,
                                          switch, own_file):
    """Each case pins one side of the design: the profile and host fix
    the plan's modprobe lines, so the outcome is stated, not read back."""
    out = tmp_path / 'out'
    consumers.export('openstack-ansible', out, profile=profile, host=host,
                     root=root)
    host_vars = yaml.safe_load((out / 'etc/openstack_deploy/host_vars' /
                                f'{host}.yml').read_text())
    assert host_vars.get('nova_nested_virt_enabled') is switch
    modprobe = out / 'hosts' / host / 'etc/modprobe.d/kvm.conf'
    if own_file is None:
        assert not modprobe.exists()
    else:
        assert modprobe.read_text().endswith(own_file)


@consumers.needs_osa
@consumers.needs_nova
@pytest.mark.parametrize('given', [True, False], ids=['base', 'no-base'])
def test_operator_filters_survive_config_template(tmp_path, capsys, given):
    """os_nova renders nova.conf (here: the realistic one, with the
    operator's filters) and config_template sets each override key over
    it: with that nova.conf as --nova-conf the override holds the
    operator's filters and kvmtune's; without, theirs are gone."""
    rendered_before = tmp_path / 'nova.conf'
    rendered_before.write_text(re.sub(
        r'(?m)^enabled_filters = .*$', 'enabled_filters = ComputeFilter,'
        + ','.join(test_kolla.OPERATOR_FILTERS), role_template()))
    out = tmp_path / 'out'
    capsys.readouterr()
    consumers.export('openstack-ansible', out, *(
        ['--nova-conf', str(rendered_before)] if given else []))
    printed = capsys.readouterr().out
    inventory = tmp_path / 'inventory'
    shutil.copytree(out / 'etc/openstack_deploy', inventory)
    (inventory / 'hosts').write_text(
        f'[nova_scheduler]\n{CONTROLLER} ansible_connection=local\n'
        f'[nova_conductor]\n{CONTROLLER}\n')
    rendered = tmp_path / 'rendered.conf'
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{
        'hosts': 'all', 'gather_facts': False,
        'tasks': [{'config_template': {
            'src': str(rendered_before), 'dest': str(rendered),
            'config_overrides': '{{ nova_nova_conf_overrides }}',
            'config_type': 'ini'}}]}]))
    consumers.ansible_playbook(
        playbook, inventory, tmp_path,
        os.path.join(consumers.OSA_VENV, 'share', 'ansible', 'plugins',
                     'action'), venv=consumers.OSA_VENV)
    got = consumers.nova_reads([('filter_scheduler', 'enabled_filters')],
                               prog='nova-scheduler', files=[str(rendered)],
                               dirs=[], home=tmp_path)
    filters = got['filter_scheduler.enabled_filters'].split(',')
    assert 'NUMATopologyFilter' in filters
    if given:
        assert filters == ['ComputeFilter', *test_kolla.OPERATOR_FILTERS,
                           'NUMATopologyFilter']
        assert 'nova_nova_conf_overrides in host_vars/<controller>.yml ' \
            'or user_*.yml' in printed
    else:
        assert not set(test_kolla.OPERATOR_FILTERS) & set(filters)
