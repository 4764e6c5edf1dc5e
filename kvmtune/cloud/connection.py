"""One connection to one cloud of clouds.yaml, and the requests it sent.

``Cloud`` wraps an openstacksdk connection with the two things kvmtune's
cloud commands need everywhere: every request goes out at a fixed
microversion (compute 2.86, so Nova validates flavor extra specs; placement
1.6, the first with traits) and every failure leaves as one CloudError line.
A ``RequestLog`` counts the HTTP requests that really left the process, by
method, so a command can say truthfully that it wrote nothing.
"""

import collections
import logging

from kvmtune.cloud import errors

COMPUTE_MICROVERSION = '2.86'
PLACEMENT_MICROVERSION = '1.6'

_LIBRARY_LOGGERS = ('keystoneauth', 'openstack', 'stevedore')

WRITE_METHODS = frozenset({'POST', 'PUT', 'PATCH', 'DELETE'})

# clouds.yaml auth keys whose values must never reach an error line.
_SECRET_AUTH_KEYS = ('password', 'token', 'application_credential_secret',
                     'secret', 'passcode', 'totp')


class RequestLog:
    """The HTTP requests sent through a requests.Session, by method.

    Getting a Keystone token is a POST that changes nothing in the cloud;
    it is counted apart so that ``writes`` means changes to the cloud.
    """

    def __init__(self):
        self.counts = collections.Counter()
        self.token_requests = 0

    @property
    def writes(self):
        return sum(n for m, n in self.counts.items()
                   if m in WRITE_METHODS) - self.token_requests

    @property
    def total(self):
        return sum(self.counts.values())

    def record(self, method, url):
        method = method.upper()
        self.counts[method] += 1
        if method == 'POST' and _is_token_request(url):
            self.token_requests += 1

    def summary(self):
        """'4 requests (GET 3, POST 1), 1 for a token, 0 writes'."""
        by_method = ', '.join(f'{m} {n}' for m, n in
                              sorted(self.counts.items()))
        return (f'{self.total} requests ({by_method or "none"}: '
                f'{self.token_requests} for a Keystone token), '
                f'{self.writes} writes')

    def install(self, http_session):
        """Count every request the session's transport adapters send."""
        for prefix, adapter in list(http_session.adapters.items()):
            if not isinstance(adapter, _CountingAdapter):
                http_session.adapters[prefix] = _CountingAdapter(adapter,
                                                                 self)


def _is_token_request(url):
    import urllib.parse

    return urllib.parse.urlsplit(url).path.rstrip('/').endswith(
        '/auth/tokens')


class _CountingAdapter:
    """A transport adapter that counts, then lets the real one send."""

    def __init__(self, adapter, log):
        self._adapter = adapter
        self._log = log

    def send(self, request, **kwargs):
        self._log.record(request.method, request.url)
        return self._adapter.send(request, **kwargs)

    def close(self):
        self._adapter.close()


class Cloud:
    """A named cloud from clouds.yaml; requests raise CloudError only."""

    def __init__(self, name, conn):
        self.name = name
        self.conn = conn
        self.requests = RequestLog()
        self.requests.install(conn.session.session)

    @classmethod
    def connect(cls, name):
        import openstack

        # The libraries log warnings (failed discovery, deprecations) that
        # would print beside kvmtune's own one line; CloudError says it all.
        for logger in _LIBRARY_LOGGERS:
            logging.getLogger(logger).addHandler(logging.NullHandler())
        try:
            return cls(name, openstack.connect(cloud=name))
        except Exception as exc:
            raise errors.from_exception(exc, name)

    def _secrets(self):
        auth = self.conn.config.config.get('auth') or {}
        found = [str(auth[k]) for k in _SECRET_AUTH_KEYS if auth.get(k)]
        auth_ref = getattr(self.conn.session.auth, 'auth_ref', None)
        if auth_ref is not None and auth_ref.auth_token:
            found.append(auth_ref.auth_token)
        return found

    def _request(self, service, microversion, method, path, body=None):
        from openstack import exceptions as sdk_exc

        kwargs = {'microversion': microversion}
        if body is not None:
            kwargs['json'] = body
        try:
            # Even the proxy may fail: it authenticates to find endpoints.
            proxy = getattr(self.conn, service)
            response = proxy.request(path, method, **kwargs)
            sdk_exc.raise_from_response(response)
        except Exception as exc:
            raise errors.from_exception(exc, self.name, self._secrets())
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def compute(self, method, path, body=None):
        """A Nova API call at microversion 2.86; returns the JSON body."""
        return self._request('compute', COMPUTE_MICROVERSION,
                             method, path, body)

    def placement(self, method, path, body=None):
        """A Placement API call at microversion 1.6; returns the JSON."""
        return self._request('placement', PLACEMENT_MICROVERSION,
                             method, path, body)
