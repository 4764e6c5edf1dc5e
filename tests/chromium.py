"""Headless Chromium through its DevTools protocol (CDP): one client.

Debian's ``chromium`` (tools/bootstrap installs it) is started headless
with a DevTools port on 127.0.0.1 only; pages are opened in it and every
console message, uncaught exception, error or warning log entry and
failed request they bring is collected (``problems``). Its users:
tools/check-docs opens every page of the built documentation,
tests/functional/test_report_html.py opens the page `kvmtune report
--html` writes, and tests/functional/test_canary_report_html.py the page
of `kvmtune rollout-report --html`. Standard library only, so that the
tool needs no virtualenv; it lives under tests/ so that the installed
package carries no test code.
"""

import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from typing import Any
from typing import Iterator
import urllib.request

# hang bounds: a page that never loads, a browser that never starts
LOAD_TIMEOUT = 30
START_TIMEOUT = 30
Event = dict[str, Any]


def binary() -> str | None:
    """Debian's chromium on PATH, or None."""
    return shutil.which('chromium')


class WebSocket:
    """The client half of RFC 6455, enough for the DevTools protocol."""

    def __init__(self, url: str) -> None:
        assert url.startswith('ws://'), url
        hostport, _, path = url[len('ws://'):].partition('/')
        host, _, port = hostport.partition(':')
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            f'GET /{path} HTTP/1.1\r\nHost: {hostport}\r\n'
            'Upgrade: websocket\r\nConnection: Upgrade\r\n'
            f'Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n'
            '\r\n').encode())
        head = b''
        while b'\r\n\r\n' not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise OSError('websocket handshake: connection closed')
            head += chunk
        if b' 101 ' not in head.split(b'\r\n')[0]:
            raise OSError(f'websocket handshake: {head[:80]!r}')

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytes([0x81])
        if len(data) < 126:
            header += bytes([0x80 | len(data)])
        elif len(data) < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack('>H', len(data))
        else:
            header += bytes([0x80 | 127]) + struct.pack('>Q', len(data))
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def _read(self, n: int) -> bytes:
        out = b''
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise OSError('websocket: connection closed')
            out += chunk
        return out

    def recv(self, timeout: float) -> str | None:
        """One text message (fragments joined), or None after timeout."""
        self.sock.settimeout(max(timeout, 0.001))
        message = b''
        while True:
            try:
                first, second = self._read(2)
            except socket.timeout:
                return None
            self.sock.settimeout(10)
            length = second & 0x7f
            if length == 126:
                length = struct.unpack('>H', self._read(2))[0]
            elif length == 127:
                length = struct.unpack('>Q', self._read(8))[0]
            payload = self._read(length)
            opcode = first & 0x0f
            if opcode == 8:
                raise OSError('websocket: closed by the browser')
            if opcode in (0, 1, 2):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self) -> None:
        self.sock.close()


class Page:
    """One DevTools page session: commands and the events they bring."""

    def __init__(self, ws_url: str) -> None:
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.events: list[Event] = []

    def _next(self, deadline: float) -> Event | None:
        message = self.ws.recv(deadline - time.monotonic())
        if message is None:
            return None
        data: Event = json.loads(message)
        if 'method' in data:
            self.events.append(data)
        return data

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({'id': mine, 'method': method,
                                 'params': params}))
        deadline = time.monotonic() + LOAD_TIMEOUT
        while time.monotonic() < deadline:
            data = self._next(deadline)
            if data is None:
                break
            if data.get('id') == mine:
                if 'error' in data:
                    raise OSError(f'{method}: {data["error"]}')
                result: dict[str, Any] = data.get('result', {})
                return result
        raise OSError(f'{method}: no answer within {LOAD_TIMEOUT} s')

    def wait_for(self, method: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(e['method'] == method for e in self.events):
                return True
            if self._next(deadline) is None:
                break
        return any(e['method'] == method for e in self.events)

    def drain(self, seconds: float) -> None:
        """Collect the events of the next ``seconds`` (late scripts)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._next(deadline) is None:
                return

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (a promise is
        awaited); an exception it throws is an OSError."""
        answer = self.call('Runtime.evaluate', expression=expression,
                           returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in answer:
            raise OSError(f'{expression[:60]}: '
                          f'{answer["exceptionDetails"]}')
        return answer.get('result', {}).get('value')

    def screenshot(self, path: str) -> None:
        """A PNG of the page's viewport at ``path``."""
        shot = self.call('Page.captureScreenshot', format='png')
        with open(path, 'wb') as f:
            f.write(base64.b64decode(shot['data']))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.call('Page.close')
        self.ws.close()


def problems(events: list[Event]) -> list[str]:
    """One line per console message, exception, error or warning log
    entry, failed request or HTTP error among a page's events."""
    out = []
    for event in events:
        method, params = event['method'], event.get('params', {})
        if method == 'Runtime.consoleAPICalled':
            args = ' '.join(str(a.get('value', a.get('description', '')))
                            for a in params.get('args', []))
            out.append(f'console.{params.get("type")}: {args}')
        elif method == 'Runtime.exceptionThrown':
            details = params.get('exceptionDetails', {})
            text = details.get('exception', {}).get('description') \
                or details.get('text')
            out.append(f'exception: {text}')
        elif method == 'Log.entryAdded':
            entry = params.get('entry', {})
            if entry.get('level') in ('error', 'warning'):
                out.append(f'log {entry.get("level")}: {entry.get("text")} '
                           f'{entry.get("url", "")}'.rstrip())
        elif method == 'Network.loadingFailed':
            if not params.get('canceled'):
                out.append(f'request failed: {params.get("errorText")}')
        elif method == 'Network.responseReceived':
            response = params.get('response', {})
            if response.get('status', 200) >= 400:
                out.append(f'HTTP {response["status"]}: '
                           f'{response.get("url")}')
    return out


def _command(path: str, profile: str) -> list[str]:
    # Chromium's sandbox refuses to run as root: only there is it off
    sandbox = ['--no-sandbox'] if os.geteuid() == 0 else []
    return [path, '--headless', *sandbox, '--disable-gpu',
            '--no-first-run', '--hide-scrollbars',
            '--remote-debugging-address=127.0.0.1',
            '--remote-debugging-port=0', f'--user-data-dir={profile}',
            'about:blank']


@contextlib.contextmanager
def browser(path: str) -> Iterator[int]:
    """Headless Chromium (``path``) in a fresh profile for the block: its
    DevTools port on 127.0.0.1. Stopped and its profile removed after."""
    profile = tempfile.mkdtemp(prefix='kvmtune-chromium-')
    proc = subprocess.Popen(_command(path, profile),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        yield _port(proc, path, profile)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _port(proc: 'subprocess.Popen[bytes]', path: str, profile: str) -> int:
    """The DevTools port Chromium writes into its profile once it listens
    (polled: it gives no other signal)."""
    port_file = os.path.join(profile, 'DevToolsActivePort')
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                lines = f.read().split()
            if len(lines) >= 2:
                return int(lines[0])
        if proc.poll() is not None:
            raise OSError(f'{path} exited with {proc.returncode}')
        time.sleep(0.1)
    raise OSError(f'{path}: no DevTools port within {START_TIMEOUT} s')


def new_target(port: int) -> str:
    """A new blank tab: its DevTools WebSocket address."""
    request = urllib.request.Request(
        f'http://127.0.0.1:{port}/json/new?about:blank', method='PUT')
    with urllib.request.urlopen(request, timeout=10) as answer:
        url: str = json.load(answer)['webSocketDebuggerUrl']
        return url


def open_page(port: int, url: str, width: int = 1280,
              height: int = 2000) -> Page:
    """A new tab at ``url`` (``width`` x ``height`` CSS pixels), with
    every domain that reports problems enabled before it loads. No load
    event within LOAD_TIMEOUT is an OSError."""
    page = Page(new_target(port))
    for domain in ('Page', 'Runtime', 'Log', 'Network'):
        page.call(f'{domain}.enable')
    page.call('Emulation.setDeviceMetricsOverride', width=width,
              height=height, deviceScaleFactor=1, mobile=False)
    page.call('Page.navigate', url=url)
    if not page.wait_for('Page.loadEventFired', LOAD_TIMEOUT):
        page.close()
        raise OSError(f'{url}: no load event within {LOAD_TIMEOUT} s')
    return page
