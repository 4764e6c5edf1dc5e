"""Every cloud failure becomes one CloudError line without secrets."""

import os

from keystoneauth1 import exceptions as ks_exc
from openstack import exceptions as sdk_exc
import requests

from kvmtune.errors import CloudError
from kvmtune.openstack.connection import Cloud
from kvmtune.openstack import errors
from tests import paths

PASSWORD = 's3cret-Pa55'
TOKEN = 'gAAAAABtoken0123456789'


def _response(method, url, status, body):
    request = requests.Request(method, url).prepare()
    response = requests.Response()
    response.status_code = status
    response.request = request
    response.url = url
    response.headers['Content-Type'] = 'application/json'
    response.headers['x-openstack-request-id'] = 'req-1'
    response._content = body.encode()
    return response


def test_nova_rejection_names_request_and_message():
    response = _response(
        'POST', 'http://127.0.0.1:8774/v2.1/flavors/f-1/os-extra_specs',
        400, '{"badRequest": {"code": 400, "message": "Validation failed; '
             'hw:mem_page_size is not valid"}}')
    try:
        sdk_exc.raise_from_response(response)
    except sdk_exc.HttpException as exc:
        error = errors.from_exception(exc, 'kvmtune-admin')
    assert isinstance(error, CloudError)
    assert error.exit_code == 2
    assert error.http_status == 400
    assert error.line() == (
        'cloud kvmtune-admin: POST /v2.1/flavors/f-1/os-extra_specs: '
        'HTTP 400: Validation failed; hw:mem_page_size is not valid '
        '(request req-1) (fix: correct the value the cloud names)')


def test_placement_error_body_gives_its_detail():
    # The body Placement itself answered (the test cloud, 2026-11-22): PUT
    # traits with a stale generation. openstacksdk keeps only "Conflict".
    with open(os.path.join(paths.FIXTURES, 'outputs',
                           'placement-1.6-409-generation-conflict.json')) as f:
        body = f.read()
    response = _response(
        'PUT', 'http://127.0.0.1:8778/placement/resource_providers/u-1/'
        'traits', 409, body)
    del response.headers['x-openstack-request-id']
    response.reason = 'Conflict'    # as the real response said
    try:
        sdk_exc.raise_from_response(response)
    except sdk_exc.HttpException as exc:
        assert exc.details == 'Conflict'
        error = errors.from_exception(exc, 'kvmtune-admin')
    assert error.http_status == 409
    assert error.line() == (
        'cloud kvmtune-admin: PUT /placement/resource_providers/u-1/traits: '
        'HTTP 409: There was a conflict when trying to complete your '
        "request. Resource provider's generation already changed. Please "
        'update the generation and try again. (request '
        'req-454fb57f-99a5-4ae9-af82-081aee3b2596) (fix: the resource '
        'changed or is in use; re-run the command)')


def test_query_string_and_secrets_never_reach_the_line():
    url = f'http://127.0.0.1:5000/v3/auth/tokens?token={TOKEN}'
    exc = ks_exc.Unauthorized(
        message=f'The password {PASSWORD} is wrong', url=url,
        method='POST')
    line = errors.from_exception(exc, 'kvmtune-admin',
                                 [PASSWORD, TOKEN]).line()
    assert PASSWORD not in line and TOKEN not in line
    assert line.startswith('cloud kvmtune-admin: POST /v3/auth/tokens: '
                           'HTTP 401: The password *** is wrong')
    assert 'clouds.yaml' in line


def test_server_error_points_at_the_service_logs():
    exc = ks_exc.InternalServerError(message='boom', method='GET',
                                     url='http://h/placement/traits?x=1')
    line = errors.from_exception(exc, 'c').line()
    assert line == ('cloud c: GET /placement/traits: HTTP 500: boom '
                    '(fix: the cloud failed; see its service logs)')


def test_unknown_cloud_name_says_where_to_look():
    exc = sdk_exc.ConfigException('Cloud nope was not found.')
    line = errors.from_exception(exc, 'nope').line()
    assert line.startswith('clouds.yaml: nope: Cloud nope was not found.')
    assert '--os-cloud' in line


def test_programming_errors_are_not_disguised():
    bug = KeyError('flavors')
    assert errors.from_exception(bug, 'c') is bug


def test_unreachable_cloud_is_one_line_without_password(tmp_path,
                                                        monkeypatch):
    # A real connection attempt to a closed local port.
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(
        'clouds:\n  down:\n    auth:\n'
        '      auth_url: http://127.0.0.1:1/v3\n'
        '      username: admin\n'
        f'      password: {PASSWORD}\n'
        '      project_name: admin\n'
        '      user_domain_name: Default\n'
        '      project_domain_name: Default\n'
        '    identity_api_version: 3\n')
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(clouds))
    for var in ('OS_CLOUD', 'OS_AUTH_URL', 'OS_PASSWORD', 'OS_USERNAME'):
        monkeypatch.delenv(var, raising=False)
    cloud = Cloud.connect('down')
    try:
        cloud.compute('GET', '/flavors/detail')
    except CloudError as exc:
        line = exc.line()
    assert PASSWORD not in line
    assert line.startswith('cloud down: ')
    assert '127.0.0.1:1' in line
    assert '\n' not in line
    assert cloud.requests.writes == 0


def test_request_log_counts_token_requests_apart():
    from kvmtune.openstack.connection import RequestLog

    log = RequestLog()
    log.record('post', 'http://k:5000/v3/auth/tokens')
    log.record('GET', 'http://n:8774/v2.1/flavors/detail?is_public=none')
    log.record('GET', 'http://n:8774/v2.1/flavors/detail')
    assert log.writes == 0
    assert log.summary() == ('3 requests (GET 2, POST 1: 1 for a Keystone '
                             'token), 0 writes')
    log.record('POST', 'http://n:8774/v2.1/flavors')
    log.record('DELETE', 'http://n:8774/v2.1/flavors/f')
    assert log.writes == 2
