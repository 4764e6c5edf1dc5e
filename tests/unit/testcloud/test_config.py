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


# --- two clouds side by side: names derived from the state directory ---

def test_the_default_state_directory_keeps_todays_names():
    for root in ('/var/lib/kvmtune-cloud', '/var/lib/kvmtune-cloud/',
                 '/var/lib/../lib/kvmtune-cloud'):
        lay = config.Layout(root)
        assert lay.suffix == ''
        assert lay.databases == {db: db for db in config.DATABASES}
        assert (lay.db_user, lay.rabbit_vhost, lay.lock) == (
            'kvmtune_cloud', 'kvmtune_cloud',
            '/run/lock/kvmtune-testcloud.lock')


def test_another_state_directory_names_everything_shared_its_own():
    import re

    default = config.Layout()
    one = config.Layout('/var/lib/kvmtune-cloud-fleet')
    again = config.Layout('/var/lib/kvmtune-cloud-fleet/')
    two = config.Layout('/var/lib/kvmtune-cloud-b')
    assert (one.databases, one.db_user, one.rabbit_vhost, one.lock) == (
        again.databases, again.db_user, again.rabbit_vhost, again.lock)
    shared = [(lay.db_user, lay.rabbit_vhost, lay.lock,
               *sorted(lay.databases.values()))
              for lay in (default, one, two)]
    for field in zip(*shared):
        assert len(set(field)) == 3, field      # no two clouds share one
    assert re.fullmatch(r'_[0-9a-f]{8}', one.suffix)
    assert one.lock == '/run/lock/kvmtune-testcloud%s.lock' % one.suffix
    for name in [*one.databases.values(), one.db_user]:
        # MariaDB's identifier limits: database 64, user 80 characters
        assert re.fullmatch(r'[a-z0-9_]{1,64}', name), name
    # `nova-manage cell_v2 map_cell0` appends _cell0 to [database]'s name
    assert one.databases['nova_cell0'] == one.databases['nova'] + '_cell0'


def test_the_services_are_given_their_clouds_databases_and_vhost(tmp_path):
    from sqlalchemy.engine import make_url

    lay = config.Layout(str(tmp_path / 'cloud-b'))
    nova = _oslo_sections(config.render(config.nova(lay, SECRETS, 'stub')),
                          tmp_path)
    for section, db in (('database', 'nova'), ('api_database', 'nova_api')):
        url = make_url(nova[section]['connection'][0])
        assert (url.username, url.database) == (lay.db_user,
                                                lay.databases[db])
    assert nova['DEFAULT']['transport_url'] == [
        'rabbit://guest:guest@127.0.0.1:5672/' + lay.rabbit_vhost]
    keystone = _oslo_sections(config.render(config.keystone(lay, SECRETS)),
                              tmp_path)
    url = make_url(keystone['database']['connection'][0])
    assert url.database == lay.databases['keystone'] != 'keystone'
