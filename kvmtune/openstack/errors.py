"""Turn what the cloud or the client library raised into one CloudError.

The line names the cloud, the request (method and path, never the query
string) and the cloud's own message, and never a credential: every secret
the connection knows is masked before the line is built.
"""

from collections.abc import Iterable
import re
import urllib.parse

from kvmtune.errors import CloudError
from kvmtune.errors import MASK

# A URL's query string may carry secrets (signed URLs, tokens); drop it.
_URL_QUERY = re.compile(r'(https?://[^\s?\'"<>]+)\?[^\s\'"<>]*')

_KS_SUFFIX = re.compile(r' \(HTTP \d+\)( \(Request-ID: [^)]*\))?$')

# What an operator can do about a status code, when the code says enough.
_FIXES: dict[int | None, str] = {
    400: 'correct the value the cloud names',
    401: 'check the credentials of cloud {cloud} in clouds.yaml',
    403: 'use a cloud with the admin role (e.g. kvmtune-admin)',
    404: 'check the name or id exists in cloud {cloud}',
    409: 'the resource changed or is in use; re-run the command',
}
_SERVER_FIX = 'the cloud failed; see its service logs'
_UNREACHABLE_FIX = ('check the cloud is running and auth_url in clouds.yaml '
                    'points at it')


def describe_request(method: str | None, url: str | None) -> str | None:
    """'POST /v2.1/flavors' from a method and a full URL (no query)."""
    if not url:
        return method or None
    path = urllib.parse.urlsplit(url).path or '/'
    return f'{method} {path}' if method else path


def redact(text: object, secrets: Iterable[str]) -> str:
    """Mask every secret (and every URL query string) in text."""
    text = _URL_QUERY.sub(r'\1', str(text))
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def http_error(cloud: str, method: str | None, url: str | None,
               status: int | None, message: str | None,
               request_id: str | None = None,
               secrets: Iterable[str] = ()) -> CloudError:
    """The CloudError for an HTTP error response."""
    problem = f'HTTP {status}: {message}' if message else f'HTTP {status}'
    if request_id:
        problem += f' (request {request_id})'
    fix: str | None
    if status is not None and status >= 500:
        fix = _SERVER_FIX
    else:
        fix = _FIXES.get(status, '').format(cloud=cloud) or None
    error = CloudError(redact(problem, secrets), source=f'cloud {cloud}',
                       key=redact(describe_request(method, url) or '',
                                  secrets) or None,
                       fix=fix)
    # for callers that retry on a conflict
    error.http_status = status  # type: ignore[attr-defined]
    return error


def from_exception(exc: BaseException, cloud: str,
                   secrets: Iterable[str] = ()) -> BaseException:
    """Map any exception openstacksdk or keystoneauth raised to CloudError.

    Exceptions that are not the cloud's or the client's (programming
    errors) are returned unchanged so that they still surface as bugs.
    """
    from keystoneauth1 import exceptions as ks_exc
    from openstack import exceptions as sdk_exc

    if isinstance(exc, CloudError):
        return exc
    if isinstance(exc, sdk_exc.HttpException):
        detail, request_id = _api_errors(exc)
        return http_error(cloud, exc.method, exc.url, exc.status_code,
                          detail or exc.details or exc.message,
                          exc.request_id or request_id, secrets)
    if isinstance(exc, ks_exc.HttpError):
        # keystoneauth appends " (HTTP 401) (Request-ID: ...)" itself.
        detail, request_id = _api_errors(exc)
        message = detail or _KS_SUFFIX.sub('', exc.message)
        return http_error(cloud, exc.method, exc.url, exc.http_status,
                          message, exc.request_id or request_id, secrets)
    if isinstance(exc, sdk_exc.ConfigException):
        return CloudError(redact(exc, secrets), source='clouds.yaml',
                          key=cloud,
                          fix='name a cloud defined in clouds.yaml '
                              '(OS_CLIENT_CONFIG_FILE) with --os-cloud')
    if isinstance(exc, (ks_exc.ConnectionError,
                        ks_exc.DiscoveryFailure)):
        return CloudError(redact(_unreachable(exc), secrets),
                          source=f'cloud {cloud}', fix=_UNREACHABLE_FIX)
    if isinstance(exc, (ks_exc.ClientException, sdk_exc.SDKException)):
        return CloudError(redact(_first_line(exc), secrets),
                          source=f'cloud {cloud}',
                          fix='check the cloud\'s entry in clouds.yaml')
    return exc


def _api_errors(exc: BaseException) -> tuple[str | None, str | None]:
    """(detail, request id) of an API-WG error body, ``{"errors": [{"status",
    "title", "detail", "request_id", ...}]}``, as Placement answers
    (placement/util.py json_error_formatter; openstacksdk finds no
    "message" in it and keeps only the HTTP reason), else (None, None)."""
    response = getattr(exc, 'response', None)
    try:
        body = response.json() if response is not None else None
    except ValueError:
        return None, None
    found = body.get('errors') if isinstance(body, dict) else None
    if not isinstance(found, list):
        return None, None
    details = [' '.join(str(e.get('detail') or e.get('title') or '').split())
               for e in found if isinstance(e, dict)]
    ids = [e.get('request_id') for e in found
           if isinstance(e, dict) and e.get('request_id')]
    return '; '.join(d for d in details if d) or None, (
        str(ids[0]) if ids else None)


def _unreachable(exc: BaseException) -> str:
    """'cannot reach URL: [Errno 111] Connection refused' from urllib3's
    nested retry message."""
    text = _first_line(exc)
    url = re.search(r'https?://[^\s:]+(:\d+)?[^\s:]*', text)
    reason = (re.search(r'\[Errno -?\d+\] [^"\'()]+', text) or
              re.search(r'timed out', text))
    if not (url and reason):
        return text
    where = url[0].split('?')[0]
    return f'cannot reach {where}: {reason[0].strip()}'


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
