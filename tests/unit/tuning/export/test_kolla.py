"""kolla target, proven by kolla-ansible's own merge_configs action plugin.

The override files are merged by merge_configs (kolla-ansible from PyPI,
run by ansible-core) with the source list read from kolla-ansible's own
nova-cell role (tasks/config.yml), the role template replaced by a
realistic nova.conf; the merged nova.conf of each service, loaded by
oslo.config with Nova's options, has the planned values. The host_vars
file is read by Ansible's inventory and rendered as kolla renders
nova_cell_compute_provider_config, then loaded by Nova's provider config
loader.
"""

import json
import os
import shutil

import pytest
import yaml

from kvmtune.tuning.novaconf import services
from tests.paths import FIXTURES
from tests.unit.tuning.export import consumers

BASE = os.path.join(FIXTURES, 'novaconf', 'devstack.conf')
SERVICES = ('nova-compute', 'nova-scheduler', 'nova-conductor')


def role_template():
    """A realistic nova.conf as a role's Jinja template: DevStack's one
    without its logging format line (its {{ }} is not Jinja)."""
    with open(BASE) as handle:
        return ''.join(line for line in handle if '{{' not in line)


def _kolla_sources():
    """The merge_configs sources of kolla-ansible's nova-cell role."""
    path = os.path.join(consumers.kolla_share(), 'roles', 'nova-cell',
                        'tasks', 'config.yml')
    with open(path) as handle:
        tasks = yaml.safe_load(handle)
    for task in tasks:
        merge = task.get('merge_configs') or task.get(
            'kolla_ansible.merge_configs')
        if merge and merge['dest'].endswith('/nova.conf'):
            return merge['sources']
    raise AssertionError(f'no merge_configs for nova.conf in {path}')


def merge(tmp_path, out, services=SERVICES):
    """Run kolla-ansible's merge_configs on the export ``out`` (and the
    node_custom_config files already there) as its nova-cell role does;
    the directory of each service's merged nova.conf."""
    inventory = tmp_path / 'inventory'
    inventory.mkdir()
    if (out / 'host_vars').exists():
        shutil.copytree(out / 'host_vars', inventory / 'host_vars')
    (inventory / 'hosts').write_text(
        f'[compute]\n{consumers.HOST} ansible_connection=local\n')
    template = tmp_path / 'nova.conf.j2'
    template.write_text(role_template())
    sources = [str(template) if '{{ role_path }}' in source else source
               for source in _kolla_sources()]
    merged = tmp_path / 'merged'
    tasks = [
        {'file': {'path': '{{ node_config_directory }}/{{ item }}',
                  'state': 'directory'},
         'loop': list(services)},
        {'merge_configs': {
            'sources': [s.replace('item.key', 'item') for s in sources],
            'dest': '{{ node_config_directory }}/{{ item }}/nova.conf',
            'mode': '0660'},
         'loop': list(services)}]
    if (out / 'host_vars').exists():
        tasks.append({'copy': {
            'content': '{{ nova_cell_compute_provider_config | '
                       'to_nice_yaml(indent=2) }}',
            'dest': '{{ node_config_directory }}/provider_config/'
                    'provider_config.yaml'}})
        (merged / 'provider_config').mkdir(parents=True)
    playbook = tmp_path / 'play.yml'
    playbook.write_text(yaml.safe_dump([{
        'hosts': 'compute', 'gather_facts': False,
        'vars': {'node_custom_config': str(out / 'etc/kolla/config'),
                 'node_config_directory': str(merged)},
        'tasks': tasks}]))
    consumers.ansible_playbook(
        playbook, inventory, tmp_path,
        os.path.join(consumers.kolla_share(), 'action_plugins'))
    return merged


@pytest.mark.slow
@consumers.needs_ansible
@consumers.needs_nova
def test_merge_configs_then_nova_reads_the_plan(tmp_path):
    out = tmp_path / 'out'
    consumers.export('kolla', out)
    merged = merge(tmp_path, out)
    plan, _ = consumers.plan()
    keys = [(s, o) for s, opts in plan.nova_conf.items() for o in opts]
    for service in SERVICES:
        conf = merged / service / 'nova.conf'
        got = consumers.nova_reads(keys, prog=service, files=[str(conf)],
                                   dirs=[], home=tmp_path)
        assert got['files'] == [str(conf)]
        for key, value in consumers.planned(plan.nova_conf).items():
            section, option = key.split('.')
            if service[5:] in services.readers(section, option):
                assert got[key] == value, (service, key)
        # The role template's other options are still there.
        assert '[keystone_authtoken]' in conf.read_text()
    # (the multi-valued option included: compared as a list just above)
    assert isinstance(consumers.planned(plan.nova_conf)[
        'DEFAULT.reserved_huge_pages'], list)
    loaded = consumers.nova_provider_configs(merged / 'provider_config')
    assert loaded == {'$COMPUTE_NODE': sorted(
        json.loads(json.dumps(_traits())))}


def _traits():
    from kvmtune.tuning import traits
    _, facts = consumers.plan()
    return sorted(traits.from_facts(facts))


def test_group_export_writes_one_compute_file_for_all(tmp_path):
    out = tmp_path / 'out'
    consumers.export('kolla', out, host=None)
    config = out / 'etc/kolla/config/nova'
    assert (config / 'nova-compute.conf').exists()
    assert (out / 'group_vars/compute/kvmtune.yml').exists()
    assert not (config / consumers.HOST).exists()


# The operator's /etc/kolla/config/nova.conf: filters of their own
OPERATOR_FILTERS = ['PciPassthroughFilter',
                    'AggregateInstanceExtraSpecsFilter']
OPERATOR_CONF = ('[filter_scheduler]\nenabled_filters = ComputeFilter,'
                 'ComputeCapabilitiesFilter,ImagePropertiesFilter,'
                 + ','.join(OPERATOR_FILTERS) + '\n')


@pytest.mark.slow
@consumers.needs_ansible
@consumers.needs_nova
@pytest.mark.parametrize('given', [True, False], ids=['base', 'no-base'])
def test_operator_filters_survive_merge_configs(tmp_path, capsys, given):
    """merge_configs keeps the last file's enabled_filters (this export's
    nova/nova-scheduler.conf): with the operator's nova.conf as
    --nova-conf it holds their filters and kvmtune's; without, theirs are
    gone (the case the notes warn of)."""
    out = tmp_path / 'out'
    config = out / 'etc/kolla/config'
    config.mkdir(parents=True)
    (config / 'nova.conf').write_text(OPERATOR_CONF)
    capsys.readouterr()
    consumers.export('kolla', out, *(['--nova-conf', str(
        config / 'nova.conf')] if given else []))
    printed = capsys.readouterr().out
    merged = merge(tmp_path, out, services=('nova-scheduler',))
    conf = merged / 'nova-scheduler' / 'nova.conf'
    got = consumers.nova_reads([('filter_scheduler', 'enabled_filters')],
                               prog='nova-scheduler', files=[str(conf)],
                               dirs=[], home=tmp_path)
    filters = got['filter_scheduler.enabled_filters'].split(',')
    assert 'NUMATopologyFilter' in filters
    if given:
        assert filters == ['ComputeFilter', 'ComputeCapabilitiesFilter',
                           'ImagePropertiesFilter', *OPERATOR_FILTERS,
                           'NUMATopologyFilter']
        assert 'nova/<controller>/nova.conf (under node_custom_config) ' \
            'after this export\'s file' in printed
    else:
        assert not set(OPERATOR_FILTERS) & set(filters)
        assert 'without --nova-conf: it replaces the items' in printed
