"""The cloud a Rally environment is for: a clouds.yaml cloud or the
test cloud's, the existing@openstack spec (checked against Rally's own
schema) and the credentials check. No cloud: an unreachable Keystone."""

from openstack import config as os_config
import pytest

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.mainjob import rallycloud
from tests.unit.mainjob.test_rallyenv import CLOUDS


def test_rally_spec_from_clouds_yaml(tmp_path):
    path = tmp_path / 'clouds.yaml'
    path.write_text(CLOUDS)
    cloud = os_config.OpenStackConfig(
        config_files=[str(path)]).get_one(cloud='c')
    spec = rallycloud.rally_spec(cloud)
    assert spec == {'existing@openstack': {
        'auth_url': 'http://127.0.0.1:5000/v3', 'region_name': 'RegionOne',
        'endpoint_type': 'internal', 'https_insecure': True,
        'admin': {'username': 'admin', 'password': 'secret',
                  'project_name': 'admin', 'user_domain_name': 'Default',
                  'project_domain_name': 'Default'}}}


def test_rally_spec_passes_rallys_own_schema(tmp_path):
    import jsonschema
    from rally_openstack.environment.platforms import existing

    path = tmp_path / 'clouds.yaml'
    path.write_text(CLOUDS)
    cloud = os_config.OpenStackConfig(
        config_files=[str(path)]).get_one(cloud='c')
    jsonschema.validate(rallycloud.rally_spec(cloud)['existing@openstack'],
                        existing.OpenStack.CONFIG_SCHEMA)


def test_an_unknown_cloud_is_named_with_the_known_ones(
        tmp_path, monkeypatch):
    path = tmp_path / 'clouds.yaml'
    path.write_text(CLOUDS)
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(path))
    with pytest.raises(InputError, match=r"no cloud 'nosuch' .*one of: "
                                         r'c \(clouds.yaml'):
        rallycloud.cloud_config('nosuch')
    name, region = rallycloud.cloud_config('c')
    assert name == 'c' and region.config['auth']['username'] == 'admin'


def test_no_testcloud_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', str(tmp_path))
    with pytest.raises(InputError, match='no test cloud has been up '
                                         r'here \(fix: kvmtune cloud up'):
        rallycloud.cloud_config(None)


def test_the_testcloud_is_its_own_clouds_yaml(tmp_path, monkeypatch):
    # whatever OS_CLIENT_CONFIG_FILE says: the test cloud's own file
    (tmp_path / 'clouds.yaml').write_text(CLOUDS.replace(
        '  c:', '  kvmtune-admin:'))
    other = tmp_path / 'other.yaml'
    other.write_text(CLOUDS.replace('  c:', '  kvmtune-admin:').replace(
        'username: admin', 'username: someone'))
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', str(tmp_path))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(other))
    name, region = rallycloud.cloud_config(None)
    assert name == 'kvmtune-admin'
    assert region.config['auth']['username'] == 'admin'


def test_an_unreachable_cloud_is_one_cloud_error_line(tmp_path):
    path = tmp_path / 'clouds.yaml'
    path.write_text(CLOUDS.replace('127.0.0.1:5000', '127.0.0.1:9'))
    region = os_config.OpenStackConfig(
        config_files=[str(path)]).get_one(cloud='c')
    with pytest.raises(CloudError) as err:
        rallycloud.check_credentials('c', region)
    assert err.value.line().startswith('cloud c: ')
    assert 'secret' not in err.value.line()
