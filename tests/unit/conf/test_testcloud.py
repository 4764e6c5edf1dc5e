"""kvmtune.conf.testcloud: the [testcloud] options of the test cloud
(venv, state_dir, one port per service), as kvmtune.testcloud.api.layout
reads them."""

from oslo_config import cfg
import pytest

from kvmtune.conf import testcloud
from kvmtune.testcloud import config as cloud_config


def load(tmp_path, text):
    path = tmp_path / 'kvmtune.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    testcloud.register_opts(conf)
    conf(args=[], project='kvmtune', default_config_files=[str(path)],
         validate_default_values=True)
    return conf.testcloud


def test_every_port_option_names_a_service_of_the_cloud():
    ports = [opt.name for opt in testcloud.testcloud_opts
             if opt.name.endswith('_port')]
    assert sorted(testcloud.PORT_OPTS) == sorted(ports)
    assert set(testcloud.PORT_OPTS.values()) == set(
        cloud_config.DEFAULT_PORTS)


def test_defaults_are_the_cloud_defaults(tmp_path):
    group = load(tmp_path, '')
    assert {service: getattr(group, name) for name, service
            in testcloud.PORT_OPTS.items()} == cloud_config.DEFAULT_PORTS
    assert group.venv == '/opt/kvmtune-cloud/venv'
    assert group.state_dir == '/var/lib/kvmtune-cloud'


def test_a_port_moved_in_the_file(tmp_path):
    group = load(tmp_path, '[testcloud]\nkeystone_port = 15000\n'
                           'state_dir = /srv/cloud\n')
    assert group.keystone_port == 15000
    assert group.placement_port == 8778
    assert group.state_dir == '/srv/cloud'


@pytest.mark.parametrize('value', ['0', '65536', 'http'])
def test_a_port_that_is_not_one_is_refused(tmp_path, value):
    # 0 too: the help says 1-65535; a service on port 0 would listen on
    # a port the catalog and clouds.yaml do not name
    group = load(tmp_path, f'[testcloud]\nglance_port = {value}\n')
    with pytest.raises(cfg.ConfigFileValueError,
                       match='^Value for option glance_port '):
        group.glance_port


def test_the_help_names_each_service():
    helps = {opt.name: opt.help for opt in testcloud.testcloud_opts}
    assert 'Keystone' in helps['keystone_port']
    assert 'Placement' in helps['placement_port']
    assert '%(' not in ''.join(helps.values())
