"""How every request of a keystoneauth session goes (doc/design.md 9.8):
a read is retried by keystoneauth's own loop, one stderr line a retry, a
write goes once, and each carries a request id kvmtune made
(kvmtune.openstack.connection hardens its sessions with ``harden``)."""

import logging
import sys
from typing import Any
import uuid

WRITE_METHODS = frozenset({'POST', 'PUT', 'PATCH', 'DELETE'})
READ_METHODS = frozenset({'GET', 'HEAD'})
# Waits of 0.5, 1 and 2 s (keystoneauth's exponential delay): a control
# plane restart of a few seconds is ridden out, a dead one named quickly.
READ_RETRIES = 3
RETRIABLE_STATUS_CODES = [502, 503, 504]


class RetryLines(logging.Handler):
    """One stderr line per retry keystoneauth makes: it logs a warning
    whose arguments carry the delay (and the status code or the error)
    before it sleeps and sends again."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.cloud: str | None = None
        # 'GET /v2.1/flavors/detail' being sent
        self.request: str | None = None
        self.count = 0
        # the requests sent around this one: a Keystone token or a version
        # document is fetched inside the request that needs it
        self._outer: list[tuple[str | None, str | None, int]] = []

    def start(self, cloud: str | None, request: str | None) -> None:
        self.cloud, self.request, self.count = cloud, request, 0

    def push(self, cloud: str | None, request: str | None) -> None:
        self._outer.append((self.cloud, self.request, self.count))
        self.start(cloud, request)

    def pop(self) -> int:
        """The retries of the request pushed last; the one around it is
        current again."""
        count = self.count
        self.cloud, self.request, self.count = self._outer.pop()
        return count

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, dict) else {}
        if self.request is None or 'delay' not in args:
            return
        self.count += 1
        if 'code' in args:
            what = f'HTTP {args["code"]}'
        elif 'Timeout' in type(args.get('e')).__name__:
            what = 'timed out'
        else:
            what = 'connection failed'
        sys.stderr.write(f'kvmtune: cloud {self.cloud}: {self.request}: '
                         f'{what}; retry {self.count} of {READ_RETRIES} '
                         f'in {args["delay"]:.1f} s\n')


RETRY_LINES = RetryLines()


class Sent:
    """What the session sent last: 'GET /v2.1/flavors' as the caller
    named it, the request id it carried, the retries it took."""

    def __init__(self) -> None:
        self.request: str | None = None
        self.request_id: str | None = None
        self.retries = 0


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers or {}).items():
        if key.lower() == name.lower() and value:
            return str(value)
    return None


def harden(session: Any, cloud: str) -> Sent:
    """Every request of the keystoneauth ``session`` (openstacksdk's
    calls and Cloud's alike): a read is retried (READ_RETRIES, keystoneauth's
    loop, a line each), a write goes once, each carries a request id
    kvmtune made unless the caller gave one; ``sent`` says which went
    last."""
    import urllib.parse

    installed: Sent | None = getattr(session, '_kvmtune_sent', None)
    if installed is not None:
        return installed
    sent = Sent()
    send = session.request

    def request(url: str, method: str, **kwargs: Any) -> Any:
        verb = method.upper()
        if verb in READ_METHODS:
            for key, value in (('connect_retries', READ_RETRIES),
                               ('status_code_retries', READ_RETRIES),
                               ('retriable_status_codes',
                                RETRIABLE_STATUS_CODES)):
                if kwargs.get(key) is None:
                    kwargs[key] = value
        else:
            # a reset after the service took it: a second one would be a
            # duplicate (design 9.8); the command is run again instead
            kwargs['connect_retries'] = 0
            kwargs['status_code_retries'] = 0
        request_id = (kwargs.get('global_request_id') or
                      _header(kwargs.get('headers'),
                              'X-OpenStack-Request-ID') or
                      f'req-{uuid.uuid4()}')
        kwargs['global_request_id'] = request_id
        name = f'{verb} {urllib.parse.urlsplit(url).path or url}'
        RETRY_LINES.push(cloud, name)
        retries = 0
        try:
            return send(url, method, **kwargs)
        finally:
            retries = RETRY_LINES.pop()
            # after the token or version document fetched inside it
            sent.request, sent.request_id, sent.retries = (
                name, request_id, retries)

    session.request = request
    session._kvmtune_sent = sent
    return sent
