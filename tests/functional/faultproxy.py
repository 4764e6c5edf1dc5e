"""A fault-injecting HTTP proxy for the functional tests
(tests/functional/test_faults.py).

One ``FaultProxy`` listens on 127.0.0.1 in front of one endpoint of the
test cloud (scheme http, one host and port) and forwards every request as
it came. The test arms faults for the next requests that match a method
(and optionally a path part):

    proxy.fail_next(2, status=503, method='GET')   # answer 503 twice
    proxy.reset_next(1, method='POST')             # TCP reset, no answer
    proxy.delay_next(1, 30, method='GET')          # hold past the timeout

A faulted request never reaches the cloud, except a delayed one, which is
forwarded after the delay (and its answer dropped when the client has
gone). URLs of the upstream in answers (version documents, links) are
rewritten to the proxy's, so that clients which follow them stay behind
the proxy. ``seen`` lists every request as (method, path, fault).
"""

import dataclasses
import http.client
import http.server
import socket
import struct
import threading
import urllib.parse

_HOP_BY_HOP = frozenset({'connection', 'keep-alive', 'transfer-encoding',
                         'content-length', 'proxy-connection', 'te',
                         'upgrade', 'trailer'})
# BaseHTTPRequestHandler.send_response writes its own.
_OWN_HEADERS = frozenset({'server', 'date'})


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass    # a reset or a client gone is the fault under test


@dataclasses.dataclass
class _Fault:
    kind: str          # 'status', 'reset' or 'delay'
    count: int
    method: str = None
    path_part: str = None
    status: int = 503
    seconds: float = 0.0

    def matches(self, method, path):
        return ((self.method is None or method == self.method) and
                (self.path_part is None or self.path_part in path))


class FaultProxy:
    def __init__(self, upstream):
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme != 'http':
            raise ValueError(f'only http upstreams: {upstream}')
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.upstream_root = f'http://{parts.netloc}'
        self._faults = []
        self._lock = threading.Lock()
        self.seen = []
        self._server = _Server(('127.0.0.1', 0), self._handler_class())
        self._thread = None

    @property
    def root(self):
        return f'http://127.0.0.1:{self._server.server_port}'

    def url(self, upstream_url):
        """upstream_url with the proxy in place of the upstream."""
        return upstream_url.replace(self.upstream_root, self.root, 1)

    def __enter__(self):
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    # -- faults the test arms --------------------------------------------

    def fail_next(self, count, status=503, method=None, path_part=None):
        self._arm(_Fault('status', count, method, path_part, status=status))

    def reset_next(self, count, method=None, path_part=None):
        self._arm(_Fault('reset', count, method, path_part))

    def delay_next(self, count, seconds, method=None, path_part=None):
        self._arm(_Fault('delay', count, method, path_part,
                         seconds=seconds))

    def clear(self):
        with self._lock:
            self._faults.clear()

    def faults_left(self):
        with self._lock:
            return sum(f.count for f in self._faults)

    def faulted(self, kind=None):
        return [s for s in self.seen if s[2] and
                (kind is None or s[2].startswith(kind))]

    def _arm(self, fault):
        with self._lock:
            self._faults.append(fault)

    def _take(self, method, path):
        with self._lock:
            for fault in self._faults:
                if fault.count > 0 and fault.matches(method, path):
                    fault.count -= 1
                    return dataclasses.replace(fault)
            return None

    # -- the HTTP side ---------------------------------------------------

    def _handler_class(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def _any(self):
                proxy._serve(self)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        return Handler

    def _serve(self, handler):
        method, path = handler.command, handler.path
        length = int(handler.headers.get('Content-Length') or 0)
        body = handler.rfile.read(length) if length else None
        fault = self._take(method, path.split('?')[0])
        label = None
        if fault is not None:
            label = (f'{fault.kind} {fault.status}' if fault.kind == 'status'
                     else f'{fault.kind} {fault.seconds} s'
                     if fault.kind == 'delay' else fault.kind)
        self.seen.append((method, path.split('?')[0], label))
        if fault is not None and fault.kind == 'reset':
            # SO_LINGER 0: close() sends a TCP RST instead of a FIN.
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            handler.close_connection = True
            handler.connection.close()
            return
        if fault is not None and fault.kind == 'status':
            payload = (b'{"message": "injected by tests/functional/'
                       b'faultproxy.py", "code": %d}' % fault.status)
            handler.send_response(fault.status)
            handler.send_header('Content-Type', 'application/json')
            handler.send_header('Content-Length', str(len(payload)))
            handler.end_headers()
            if method != 'HEAD':
                handler.wfile.write(payload)
            return
        if fault is not None and fault.kind == 'delay':
            threading.Event().wait(fault.seconds)
        self._forward(handler, method, path, body)

    def _forward(self, handler, method, path, body):
        headers = {k: v for k, v in handler.headers.items()
                   if k.lower() not in _HOP_BY_HOP and k.lower() != 'host'}
        upstream = http.client.HTTPConnection(self.upstream_host,
                                              self.upstream_port, timeout=120)
        try:
            upstream.request(method, path, body=body, headers=headers)
            response = upstream.getresponse()
            payload = response.read()
        finally:
            upstream.close()
        payload = payload.replace(self.upstream_root.encode(),
                                  self.root.encode())
        try:
            handler.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in _HOP_BY_HOP | _OWN_HEADERS:
                    handler.send_header(key, value.replace(
                        self.upstream_root, self.root))
            handler.send_header('Content-Length', str(len(payload)))
            handler.end_headers()
            if method != 'HEAD':
                handler.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass    # the client gave up waiting (a delay past its timeout)
