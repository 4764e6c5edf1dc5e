"""The cloud a Rally environment is for (kvmtune.mainjob.rallyenv): a
cloud of clouds.yaml or the test cloud's admin, its credentials
checked with Keystone before Rally is touched, and the existing@openstack
spec Rally gets for it."""

from collections.abc import Iterable
import os
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError

if TYPE_CHECKING:
    from openstack.config.cloud_region import CloudRegion


def cloud_config(os_cloud: str | None = None,
                 config_files: Iterable[str] = ()
                 ) -> tuple[str, 'CloudRegion']:
    """(cloud name, openstacksdk CloudRegion): ``os_cloud`` from
    clouds.yaml, or the test cloud's admin when None."""
    from openstack import config as os_config
    from openstack import exceptions as sdk_exc

    if os_cloud is None:
        from kvmtune.testcloud import api
        from kvmtune.testcloud import config

        path = api.layout(config_files).clouds_yaml
        if not os.path.isfile(path):
            raise InputError('no test cloud has been up here',
                             source=path,
                             fix='kvmtune cloud up, or name a cloud of '
                                 'your clouds.yaml with --os-cloud')
        loader = os_config.OpenStackConfig(
            config_files=[path], secure_files=[], vendor_files=[],
            load_envvars=False)
        name, where = config.ADMIN_CLOUD, path
    else:
        loader, name = os_config.OpenStackConfig(), os_cloud
        where = 'clouds.yaml'
    try:
        return name, loader.get_one(cloud=name)
    except sdk_exc.ConfigException as exc:
        known = ', '.join(sorted(set(loader.get_cloud_names()) -
                                 {'defaults'})) or 'none'
        raise InputError(f'no cloud {name!r} ({_first_line(exc)})',
                         source=where, key='--os-cloud',
                         fix=f'one of: {known} (clouds.yaml: '
                             'OS_CLIENT_CONFIG_FILE, ./clouds.yaml, '
                             '~/.config/openstack/)') from None


def rally_spec(cloud: 'CloudRegion') -> dict[str, Any]:
    """An existing@openstack spec from an openstacksdk CloudRegion."""
    auth = cloud.config['auth']
    admin = {k: auth[k] for k in ('username', 'password', 'project_name',
                                  'user_domain_name', 'project_domain_name')
             if auth.get(k)}
    spec: dict[str, Any] = {
        'auth_url': auth['auth_url'], 'admin': admin,
        'endpoint_type': cloud.config.get('interface') or 'public'}
    if cloud.get_region_name():
        spec['region_name'] = cloud.get_region_name()
    if cloud.config.get('verify') is False:
        spec['https_insecure'] = True
    return {'existing@openstack': spec}


def check_credentials(name: str, region: 'CloudRegion') -> None:
    """Ask Keystone for a token with the cloud's credentials; CloudError
    when it refuses them or cannot be reached."""
    from kvmtune.openstack import connection
    from kvmtune.openstack import errors

    connection.quiet_libraries()
    secrets = connection.auth_secrets(region.config.get('auth') or {})
    try:
        # keystoneauth's own errors (Connection.authorize() folds them
        # into an SDKException without the HTTP status)
        region.get_session().get_token()
    except Exception as exc:
        error = errors.from_exception(exc, name, secrets)
        if error is exc:
            raise
        error = cast(CloudError, error)     # not exc: one made of it
        if getattr(error, 'http_status', None) == 401:
            error.problem = ('the cloud refused the credentials: '
                             + error.problem)
        raise error from None


def _first_line(text: object) -> str:
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else ''
