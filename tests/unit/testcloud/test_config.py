"""What ``kvmtune cloud up`` writes, checked by the readers that read it:
oslo.config's parser (every service's) and openstacksdk's clouds.yaml
loader. Pure: no cloud, no file outside tmp_path."""

import configparser
import os

import pytest
from oslo_config import cfg

from kvmtune.testcloud import config

SECRETS = {k: 'secret-' + k for k in
           ('db', 'admin', 'member') + config.SERVICE_USERS}
PORTS = {'keystone': 15000, 'placement': 18778, 'glance': 19292,
         'nova-api': 18774, 'network': 19696}


def _oslo_sections(text, tmp_path):
    """{section: {key: [values]}} as oslo.config's parser reads the file."""
    path = tmp_path / 'service.conf'
    path.write_text(text)
    sections = {}
    cfg.ConfigParser(str(path), sections).parse()
    return sections


def test_layout_defaults_are_the_documented_paths_and_ports():
    lay = config.Layout()
    assert lay.root == '/var/lib/kvmtune-cloud'
    assert lay.python == '/opt/kvmtune-cloud/venv/bin/python3'
    assert lay.url('keystone', '/v3') == 'http://127.0.0.1:5000/v3'
    assert lay.url('nova-api') == 'http://127.0.0.1:8774'
    assert lay.compute_conf == \
        '/var/lib/kvmtune-cloud/etc/nova/nova-compute.conf'


def test_ports_reach_every_url_the_services_are_given(tmp_path):
    lay = config.Layout(str(tmp_path), '/srv/venv', PORTS)
    catalog = {type_: url for _, type_, url in config.catalog(lay, 'stub')}
    assert catalog == {'compute': 'http://127.0.0.1:18774/v2.1',
                       'placement': 'http://127.0.0.1:18778',
                       'image': 'http://127.0.0.1:19292',
                       'network': 'http://127.0.0.1:19696'}
    nova = _oslo_sections(config.render(config.nova(lay, SECRETS, 'stub')),
                          tmp_path)
    assert nova['keystone_authtoken']['auth_url'] == \
        ['http://127.0.0.1:15000/v3']
    assert nova['glance']['endpoint_override'] == ['http://127.0.0.1:19292']
    assert nova['neutron']['endpoint_override'] == \
        ['http://127.0.0.1:19696']
    glance = _oslo_sections(config.render(config.glance(lay, SECRETS)),
                            tmp_path)
    assert glance['DEFAULT']['worker_self_reference_url'] == \
        ['http://127.0.0.1:19292']


def test_compute_file_privsep_helpers_come_from_the_configured_venv(
        tmp_path):
    lay = config.Layout(str(tmp_path), '/srv/venv')
    conf = _oslo_sections(config.render(
        config.compute(lay, 'libvirt', 'qemu')), tmp_path)
    assert conf['libvirt']['virt_type'] == ['qemu']
    for group in ('nova_sys_admin', 'vif_plug_ovs_privileged'):
        helper = conf[group]['helper_command'][0].split()
        assert helper[0] == '/srv/venv/bin/privsep-helper'
        assert helper[1:] == ['--config-file', lay.nova_conf,
                              '--config-file', lay.compute_conf]
    fake = _oslo_sections(config.render(config.compute(lay, 'fake', None)),
                          tmp_path)
    assert fake['DEFAULT']['compute_driver'] == [config.FAKE_DRIVER]
    assert 'libvirt' not in fake


def test_render_keeps_key_case_and_order():
    text = config.render({'DEFAULT': {'Zeta': 1, 'alpha': 'x'},
                          'api': {'auth_strategy': 'keystone'}})
    parser = configparser.RawConfigParser()
    parser.optionxform = str
    parser.read_string(text)
    assert list(parser['DEFAULT']) == ['Zeta', 'alpha']
    assert parser['api']['auth_strategy'] == 'keystone'


def test_clouds_yaml_is_what_openstacksdk_loads(tmp_path):
    from openstack import config as sdk_config

    lay = config.Layout(str(tmp_path), ports=PORTS)
    path = tmp_path / 'clouds.yaml'
    path.write_text(config.clouds_yaml(lay, SECRETS))
    loader = sdk_config.OpenStackConfig(config_files=[str(path)],
                                        vendor_files=[])
    admin = loader.get_one('kvmtune-admin')
    assert admin.config['auth']['auth_url'] == 'http://127.0.0.1:15000/v3'
    assert admin.config['auth']['password'] == SECRETS['admin']
    assert admin.config['auth']['project_name'] == 'admin'
    member = loader.get_one('kvmtune-member')
    assert member.config['auth']['username'] == 'kvmtune-member'
    assert member.config['auth']['password'] == SECRETS['member']
    assert member.config['region_name'] == config.REGION


# -- computes 2..N (kvmtune cloud up --computes N) ------------------------

def _facts(name):
    import json

    from kvmtune.testcloud import services

    with open(os.path.join(services.FILES, 'hosts', name)) as f:
        return json.load(f)


def test_extra_computes_cycle_the_shipped_shapes():
    from kvmtune.testcloud import services

    names = [os.path.basename(config.default_extra_facts(i, services.FILES))
             for i in (2, 3, 4, 5)]
    assert names == ['intel-2s-smt-ept-1g.json', 'amd-epyc-npt.json',
                     '32intel64-2p8co2t.json', 'intel-2s-smt-ept-1g.json']
    for name in config.EXTRA_SHAPES:
        assert config.check_extra_facts(_facts(name)) is None, name


def test_shipped_shapes_are_the_fixture_captures_as_inspected():
    """files/hosts/*.json are `kvmtune host inspect` of the fixture trees
    their "source" names (regenerate them when the facts change)."""
    import json

    from kvmtune import facts as facts_mod
    from tests import paths

    for name in config.EXTRA_SHAPES:
        shipped = _facts(name)
        tree = os.path.join(paths.REPO, shipped['source'])
        gathered = json.loads(json.dumps(facts_mod.gather(tree)))
        assert gathered['cpu'] == shipped['cpu'], name
        assert gathered['numa'] == shipped['numa'], name


@pytest.mark.parametrize('name, shared, dedicated', [
    ('intel-2s-smt-ept-1g.json', '0,40', '1-39,41-79'),
    ('amd-epyc-npt.json', '0,64', '1-63,65-127'),
    ('32intel64-2p8co2t.json', '0,16', '1-15,17-31'),
])
def test_extra_cpu_sets_share_cpu0_and_its_siblings(name, shared,
                                                    dedicated):
    assert config.extra_cpu_sets(_facts(name)) == (shared, dedicated)


def test_extra_cpu_sets_use_only_online_cpus_of_numa_nodes():
    facts = {'cpu': {'online': [2, 3, 4, 5, 6],
                     'thread_siblings': [[2, 5], [3, 6]]},
             'numa': {'nodes': [{'id': 0, 'cpus': [0, 1, 2, 3],
                                 'memory_mb': 1024},
                                {'id': 1, 'cpus': [5, 6, 7],
                                 'memory_mb': 1024}]}}
    # 4 is online but in no node; 0, 1, 7 are in a node but offline
    assert config.extra_cpu_sets(facts) == ('2,5', '3,6')


@pytest.mark.parametrize('facts, problem', [
    ([], 'not a JSON object'),
    ({'cpu': {}}, 'no numa.nodes'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [0, 1]}]}},
     'a NUMA node without id, cpus or memory_mb'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [0, 1], 'memory_mb': 512}]},
      'cpu': {'thread_siblings': [[0, 1]]}},
     'no CPU sets: only CPU 0-1: nothing left to dedicate'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [3], 'memory_mb': 512}]},
      'cpu': {'online': [0, 1]}},
     'no CPU sets: no online CPU in a NUMA node'),
])
def test_unusable_facts_are_named(facts, problem):
    assert config.check_extra_facts(facts) == problem


def test_extra_compute_file_has_its_own_host_state_and_cpu_sets(tmp_path):
    lay = config.Layout(str(tmp_path), '/srv/venv')
    text = config.render(config.extra_compute(lay, 3, '0,64',
                                              '1-63,65-127'))
    conf = _oslo_sections(text, tmp_path)
    state = str(tmp_path / 'data' / 'nova-compute-3')
    assert conf['DEFAULT']['host'] == ['kvmtune-compute-3']
    assert conf['DEFAULT']['state_path'] == [state]
    assert conf['DEFAULT']['compute_driver'] == [config.FAKE_DRIVER]
    assert conf['compute']['cpu_shared_set'] == ['0,64']
    assert conf['compute']['cpu_dedicated_set'] == ['1-63,65-127']
    assert conf['oslo_concurrency']['lock_path'] == [state + '/lock']
    # the first compute's settings otherwise (ratios, the DEBUG report
    # restart-compute waits for), nothing of libvirt's
    first = _oslo_sections(config.render(config.compute(lay, 'fake', None)),
                           tmp_path)
    for key in ('cpu_allocation_ratio', 'ram_allocation_ratio',
                'reserved_host_memory_mb', 'debug'):
        assert conf['DEFAULT'][key] == first['DEFAULT'][key]
    assert 'libvirt' not in conf and 'nova_sys_admin' not in conf


def test_each_extra_compute_has_its_own_paths(tmp_path):
    lay = config.Layout(str(tmp_path))
    paths_2 = (lay.extra_compute_conf(2), lay.extra_compute_facts(2),
               lay.extra_state_path(2), config.extra_host(2),
               config.extra_service(2))
    paths_3 = (lay.extra_compute_conf(3), lay.extra_compute_facts(3),
               lay.extra_state_path(3), config.extra_host(3),
               config.extra_service(3))
    assert not set(paths_2) & set(paths_3)
    assert lay.compute_conf not in paths_2 + paths_3
    assert lay.extra_compute_conf(2) == \
        str(tmp_path / 'etc' / 'nova' / 'nova-compute-2.conf')
    assert config.extra_service(2) == 'nova-compute-2'
