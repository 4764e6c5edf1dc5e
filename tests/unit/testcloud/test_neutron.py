"""The network endpoint's configuration, per ``--network``; needs no cloud.

Pure logic: what ``kvmtune cloud up`` writes for real Neutron and for the
stub (kvmtune/testcloud/neutron.py, config.py).
"""

import configparser

from kvmtune.testcloud import config
from kvmtune.testcloud import neutron

SECRETS = {k: 'secret-' + k for k in
           ('db', 'admin', 'member') + config.SERVICE_USERS}
LAYOUT = config.Layout('/srv/cloud', venv='/srv/venv')


def _parsed(sections):
    parser = configparser.RawConfigParser()
    parser.read_string(config.render(sections))
    return parser


def test_catalog_names_the_real_service_or_the_stub():
    real = dict((t, (n, u)) for n, t, u in config.catalog(LAYOUT,
                                                          'neutron'))
    stub = dict((t, (n, u)) for n, t, u in config.catalog(LAYOUT, 'stub'))
    assert real['network'] == ('neutron', 'http://127.0.0.1:9696')
    assert stub['network'] == ('kvmtune-netstub', 'http://127.0.0.1:9696')


def test_nova_finds_neutron_in_the_catalog_and_sends_a_service_token():
    real = config.nova(LAYOUT, SECRETS, 'neutron')
    stub = config.nova(LAYOUT, SECRETS, 'stub')
    assert 'endpoint_override' not in real['neutron']
    assert stub['neutron']['endpoint_override'] == 'http://127.0.0.1:9696'
    assert real['service_user']['send_service_user_token'] == 'true'
    assert real['service_user']['username'] == 'nova'


def test_neutron_server_ml2_vlan_ovs_and_nova_notifications():
    conf = _parsed(neutron.neutron_conf(LAYOUT, SECRETS))
    assert conf.get('DEFAULT', 'core_plugin') == 'ml2'
    assert conf.get('DEFAULT', 'service_plugins') == 'router'
    assert conf.get('nova', 'username') == 'nova'
    assert conf.get('DEFAULT', 'notify_nova_on_port_status_changes') == \
        'true'
    assert 'neutron' in conf.get('database', 'connection')
    for section in neutron.PRIVSEP_SECTIONS:
        assert conf.get(section, 'helper_command').startswith(
            '/srv/venv/bin/privsep-helper ')
    ml2 = _parsed(neutron.ml2_conf())
    assert ml2.get('ml2', 'mechanism_drivers') == 'openvswitch'
    assert ml2.get('ml2_type_vlan', 'network_vlan_ranges') == \
        'physnet1:100:199'


def test_agent_userspace_datapath_noop_firewall_dhcp_extension():
    agent = _parsed(neutron.agent_conf())
    assert agent.get('ovs', 'datapath_type') == 'netdev'
    assert agent.get('ovs', 'bridge_mappings') == 'physnet1:br-phys'
    assert agent.get('securitygroup', 'firewall_driver') == 'noop'
    assert agent.get('agent', 'extensions') == 'dhcp'


def test_api_reads_its_files_from_the_environment():
    env = neutron.api_env(LAYOUT)
    assert env == {'OS_NEUTRON_CONFIG_DIR': '/srv/cloud/etc/neutron',
                   'OS_NEUTRON_CONFIG_FILES': 'neutron.conf;ml2_conf.ini'}
