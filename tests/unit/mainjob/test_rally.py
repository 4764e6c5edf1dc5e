"""The main job's Rally environment spec and task arguments."""

from openstack import config as os_config

from kvmtune.mainjob import rally

CLOUDS = """\
clouds:
  c:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: admin
      password: secret
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
    verify: false
"""


def test_rally_spec_from_clouds_yaml(tmp_path):
    path = tmp_path / 'clouds.yaml'
    path.write_text(CLOUDS)
    cloud = os_config.OpenStackConfig(
        config_files=[str(path)]).get_one(cloud='c')
    spec = rally.rally_spec(cloud)
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
    jsonschema.validate(rally.rally_spec(cloud)['existing@openstack'],
                        existing.OpenStack.CONFIG_SCHEMA)


def test_task_args_name_both_flavors_and_an_absolute_baseline():
    args = rally.task_args(3, 'fio-randread-4k',
                           ['m1.bench.baseline', 'm1.bench.x'],
                           'kvmtune-bench', baseline='bm.json')
    assert args['max_vms'] == 3 and args['flavors'][1] == 'm1.bench.x'
    assert args['baseline'].startswith('/')
