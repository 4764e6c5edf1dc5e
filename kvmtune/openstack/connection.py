"""One connection to one cloud of clouds.yaml, and the requests it sent.

``Cloud`` wraps an openstacksdk connection with the two things kvmtune's
cloud commands need everywhere: every request goes out at a fixed
microversion (compute 2.86, so Nova validates flavor extra specs; placement
1.6, the first with traits) and every failure leaves as one CloudError line.
A ``RequestLog`` counts the HTTP requests that really left the process, by
method, so a command can say truthfully that it wrote nothing.

Reads are retried, writes are not (tests/functional/test_faults.py). A GET or
HEAD that meets a connection failure, a timeout or HTTP 502/503/504 is sent
again by keystoneauth's own retry loop (keystoneauth1/session.py
``_send_request``: ``connect_retries``, ``status_code_retries``,
``retriable_status_codes``, a delay from 0.5 s doubling), at most
``retries.READ_RETRIES`` times, with one stderr line per retry. A write is sent
once: a reset after Nova took it would make a second one a duplicate, and
running the command again converges instead. Every request carries a request id
kvmtune made (``X-OpenStack-Request-ID``, which the services log as the global
request id), so an error the service never answered still names one.

This holds for every request of the connection, openstacksdk's own calls
included (``conn.image``, ``conn.compute`` of the main job): ``Cloud``
wraps the keystoneauth session's ``request``, and ``Cloud.failure(exc)``
(or ``with cloud.named():``) turns what such a call raised into the one
CloudError line naming the request, its id and the endpoint.

Tests only: ``KVMTUNE_TEST_KILL_AFTER_CALL=N`` makes the process SIGKILL
itself as soon as the answer to its N-th HTTP request (Keystone's included)
has arrived, after one line on stderr naming that request. The kill tests
(tests/functional/test_faults.py; doc/design.md 9.8) run a command once per
N to stop it after each of its calls in turn. Nothing else sets it.
"""

import collections
from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
import logging
import os
import signal
import sys
from typing import Any
import uuid

from kvmtune.openstack import errors
from kvmtune.openstack import retries

COMPUTE_MICROVERSION = '2.86'
PLACEMENT_MICROVERSION = '1.6'

_LIBRARY_LOGGERS = ('keystoneauth', 'openstack', 'stevedore')


KILL_AFTER_CALL_ENV = 'KVMTUNE_TEST_KILL_AFTER_CALL'

# clouds.yaml auth keys whose values must never reach an error line.
_SECRET_AUTH_KEYS = ('password', 'token', 'application_credential_secret',
                     'secret', 'passcode', 'totp')


def quiet_libraries() -> None:
    """Keep the client libraries' warnings (failed discovery,
    deprecations) off the terminal: kvmtune's one error line says it."""
    for logger in _LIBRARY_LOGGERS:
        logging.getLogger(logger).addHandler(logging.NullHandler())


def auth_secrets(auth: Mapping[str, Any]) -> list[str]:
    """The values of a clouds.yaml ``auth`` block that must never reach an
    error line (passwords, tokens, credential secrets)."""
    return [str(auth[k]) for k in _SECRET_AUTH_KEYS if auth.get(k)]


class RequestLog:
    """The HTTP requests sent through a requests.Session, by method.

    Getting a Keystone token is a POST that changes nothing in the cloud;
    it is counted apart so that ``writes`` means changes to the cloud.
    """

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.token_requests = 0
        self.kill_after = _kill_after_call()
        # (METHOD, full URL) of the request sent last
        self.last: tuple[str, str] | None = None

    @property
    def writes(self) -> int:
        return sum(n for m, n in self.counts.items()
                   if m in retries.WRITE_METHODS) - self.token_requests

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def record(self, method: str, url: str) -> None:
        method = method.upper()
        self.counts[method] += 1
        self.last = (method, url)
        if method == 'POST' and _is_token_request(url):
            self.token_requests += 1

    def summary(self) -> str:
        """'4 requests (GET 3, POST 1), 1 for a token, 0 writes'."""
        by_method = ', '.join(f'{m} {n}' for m, n in
                              sorted(self.counts.items()))
        return (f'{self.total} requests ({by_method or "none"}: '
                f'{self.token_requests} for a Keystone token), '
                f'{self.writes} writes')

    def answered(self, method: str, url: str) -> None:
        """Called once a request's answer arrived (the test kill hook)."""
        if self.kill_after is not None and self.total == self.kill_after:
            sys.stdout.flush()
            sys.stderr.write(
                f'kvmtune: test hook {KILL_AFTER_CALL_ENV}: SIGKILL after '
                f'request {self.total} '
                f'({errors.describe_request(method.upper(), url)})\n')
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    def install(self, http_session: Any) -> None:
        """Count every request the session's transport adapters send."""
        for prefix, adapter in list(http_session.adapters.items()):
            if not isinstance(adapter, _CountingAdapter):
                http_session.adapters[prefix] = _CountingAdapter(adapter,
                                                                 self)


def _kill_after_call() -> int | None:
    """N from KVMTUNE_TEST_KILL_AFTER_CALL (tests only), else None."""
    value = os.environ.get(KILL_AFTER_CALL_ENV, '')
    return int(value) if value.isdigit() and int(value) > 0 else None


def _is_token_request(url: str) -> bool:
    import urllib.parse

    return urllib.parse.urlsplit(url).path.rstrip('/').endswith(
        '/auth/tokens')


class _CountingAdapter:
    """A transport adapter that counts, then lets the real one send."""

    def __init__(self, adapter: Any, log: RequestLog) -> None:
        self._adapter = adapter
        self._log = log

    def send(self, request: Any, **kwargs: Any) -> Any:
        self._log.record(request.method, request.url)
        response = self._adapter.send(request, **kwargs)
        self._log.answered(request.method, request.url)
        return response

    def close(self) -> None:
        self._adapter.close()


class Cloud:
    """A named cloud from clouds.yaml; requests raise CloudError only."""

    def __init__(self, name: str, conn: Any) -> None:
        self.name = name
        self.conn = conn
        self.requests = RequestLog()
        self.requests.install(conn.session.session)
        self.sent = retries.harden(conn.session, name)
        for logger in ('keystoneauth', 'openstack'):
            if retries.RETRY_LINES not in logging.getLogger(logger).handlers:
                logging.getLogger(logger).addHandler(retries.RETRY_LINES)

    def failure(self, exc: BaseException) -> BaseException:
        """What a call on ``conn`` raised, as the one CloudError line
        naming the request, the request id it carried and the endpoint
        (after its retries, or a write sent once); anything that is not
        the cloud's or the client's is returned as it is."""
        error = errors.from_exception(exc, self.name, self._secrets())
        if not isinstance(error, errors.CloudError):
            return error
        last = self.requests.last
        request = self.sent.request
        if request is not None and self.sent.request_id:
            endpoint = None
            if last is not None and last[0] == request.split()[0]:
                # openstacksdk names a path under the endpoint; the URL
                # that left has all of it
                endpoint = _endpoint_of(last[1])
                request = errors.describe_request(*last) or request
            if error.key is None:
                error.key = request
            _name_the_failure(error, request, self.sent.request_id,
                              self.sent.retries, None, endpoint)
        return error

    @contextlib.contextmanager
    def named(self) -> Iterator[None]:
        """``with cloud.named(): conn.image...``: what the calls inside
        raise leaves as Cloud.failure(exc)."""
        try:
            yield
        except Exception as exc:
            error = self.failure(exc)
            if error is exc:
                raise
            raise error from None

    @classmethod
    def connect(cls, name: str) -> 'Cloud':
        import openstack

        quiet_libraries()
        try:
            return cls(name, openstack.connect(cloud=name))
        except Exception as exc:
            raise errors.from_exception(exc, name)

    def _secrets(self) -> list[str]:
        found = auth_secrets(self.conn.config.config.get('auth') or {})
        auth_ref = getattr(self.conn.session.auth, 'auth_ref', None)
        if auth_ref is not None and auth_ref.auth_token:
            found.append(auth_ref.auth_token)
        return found

    def _request(self, service: str, microversion: str, method: str,
                 path: str, body: Any = None) -> Any:
        from openstack import exceptions as sdk_exc

        request_id = f'req-{uuid.uuid4()}'
        tries = (retries.READ_RETRIES if method in retries.READ_METHODS
                 else 0)
        kwargs = {'microversion': microversion,
                  'global_request_id': request_id,
                  'connect_retries': tries,
                  'status_code_retries': tries,
                  'retriable_status_codes': retries.RETRIABLE_STATUS_CODES}
        if body is not None:
            kwargs['json'] = body
        proxy = None
        self.sent.retries = 0
        try:
            # Even the proxy may fail: it authenticates to find endpoints.
            proxy = getattr(self.conn, service)
            response = proxy.request(path, method, **kwargs)
            sdk_exc.raise_from_response(response)
        except Exception as exc:
            error = errors.from_exception(exc, self.name, self._secrets())
            if isinstance(error, errors.CloudError):
                ours = self.sent.request_id == request_id
                last = self.requests.last
                # a write names the URL it went to, as Cloud.failure does
                endpoint = _endpoint_of(last[1]) if (
                    ours and method in retries.WRITE_METHODS
                    and last is not None and last[0] == method) else None
                _name_the_failure(error, f'{method} {path.split("?")[0]}',
                                  request_id,
                                  self.sent.retries if ours else 0, proxy,
                                  endpoint)
            raise error
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def compute(self, method: str, path: str, body: Any = None) -> Any:
        """A Nova API call at microversion 2.86; returns the JSON body."""
        return self._request('compute', COMPUTE_MICROVERSION,
                             method, path, body)

    def placement(self, method: str, path: str, body: Any = None) -> Any:
        """A Placement API call at microversion 1.6; returns the JSON."""
        return self._request('placement', PLACEMENT_MICROVERSION,
                             method, path, body)


def _endpoint_of(url: str) -> str:
    """'http://host:port/v2.1/flavors' from a full URL (no query)."""
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    return f'{parts.scheme}://{parts.netloc}{parts.path}'


def _name_the_failure(error: errors.CloudError, request: str,
                      request_id: str, tries: int, proxy: Any,
                      endpoint: str | None = None) -> None:
    """Add the request id kvmtune sent when the service gave none (and the
    error is about that request, not the Keystone token before it); after
    retries, the endpoint that kept failing; for a write, that it went
    once to its endpoint and the run is to be made again."""
    method, path = request.split(' ', 1)
    ours = error.key is None or (error.key.startswith(method + ' ') and
                                 error.key.endswith(path))
    if ours and '(request ' not in error.problem:
        error.problem += f' (request {request_id})'
    if endpoint is None and proxy is not None and (
            tries or method in retries.WRITE_METHODS):
        try:
            endpoint = proxy.get_endpoint()
        except Exception:
            endpoint = None
    if tries:
        error.problem += (f'; gave up after {tries} retries'
                          + (f' of {endpoint}' if endpoint else ''))
    elif ours and method in retries.WRITE_METHODS:
        error.problem += ('; a write goes once, not retried'
                          + (f' ({method} {endpoint})' if endpoint else ''))
        again = 'then run the same command again: it converges'
        error.fix = f'{error.fix}; {again}' if error.fix else again
