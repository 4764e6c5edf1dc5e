"""What ``kvmtune cloud up`` writes, checked by the readers that read it:
oslo.config's parser (every service's) and openstacksdk's clouds.yaml
loader. Pure: no cloud, no file outside tmp_path."""

import configparser

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
