"""kvmtune's textfile and alert rules with the real parts, on loopback.

Debian's prometheus-node-exporter reads, with its textfile collector, the
directory ``kvmtune verify --prometheus`` writes, on a copy of a real
machine's capture (tests/fixtures/hosts/real/32intel64-2p8co2t+8ve, an
Intel 2-socket RHEL 7 server, planned for cpu-pinning: verify's host layer
has the one check ``cmdline isolcpus`` there); Debian's prometheus scrapes
it with kvmtune's shipped rules loaded (their ``for:`` shortened to
seconds, nothing else changed) and is asked through its HTTP API. The
capture's own booted command line has no isolcpus: that is the planted
drift, and it makes KvmtuneDrift pending or firing in ``/api/v1/alerts``;
repairing the tree (the plan's isolcpus, from ``kvmtune plan``, written
into the copy's proc/cmdline) clears it. The capture has no host name
file, so verify is given the Nova host with ``--host``. A second test
scrapes node_exporter while verify rewrites the file in a loop:
node_exporter never reports a file it could not parse.

Both services are started here, in a temporary directory, on free
loopback ports, and stopped at the end; every wait is bounded. No cloud:
tools/run-functional runs it beside the report page's test. In CI
(KVMTUNE_FUNCTIONAL=1) a missing binary fails; elsewhere it skips.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
import pytest
import yaml

from tests.functional.conftest import kvmtune_process
from tests import paths

# a real capture (tests/fixtures/hosts/README.md, "Real machines")
TREE = pathlib.Path(paths.HOSTS) / 'real' / '32intel64-2p8co2t+8ve'
HOSTNAME = 'compute-real-1'         # verify --host (the tree names none)
PROFILE = 'cpu-pinning'
RULES = pathlib.Path(paths.REPO) / 'kvmtune' / 'data' / 'prometheus' / \
    'kvmtune.rules.yml'
NODE_EXPORTER = 'prometheus-node-exporter'
PROMETHEUS = 'prometheus'
# bounds on waits (a loaded 2-core host), never speeds
START_S = 90
SETTLE_S = 90
POLL_S = 0.5


def _binary(name):
    path = shutil.which(name)
    if path is None:
        reason = (f'no {name} on PATH (tools/bootstrap installs Debian\'s '
                  'prometheus and prometheus-node-exporter)')
        if os.environ.get('KVMTUNE_FUNCTIONAL') == '1':
            pytest.fail(f'KVMTUNE_FUNCTIONAL=1 but {reason}', pytrace=False)
        pytest.skip(reason)
    return path


def _free_port():
    """A port nothing listens on now, on 127.0.0.1 (not the defaults
    9090/9100 a host's own Prometheus may hold)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read().decode('utf-8')


def _until(what, probe, bound=SETTLE_S):
    """probe() until it returns something true, at most ``bound`` s."""
    deadline = time.monotonic() + bound
    last = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except OSError as exc:      # not listening yet
            last = exc
        else:
            if last:
                return last
        time.sleep(POLL_S)
    pytest.fail(f'{what}: not within {bound} s (last: {last!r})')


class Service:
    """A process of ours, its output in a log file; stopped by its pid."""

    def __init__(self, argv, log):
        self.log = log
        with open(log, 'wb') as out:
            self.proc = subprocess.Popen(argv, stdout=out,
                                         stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def tail(self):
        return pathlib.Path(self.log).read_text(errors='replace')[-2000:]


class Stack:
    def __init__(self, tmp):
        self.tmp = tmp
        self.tree = tmp / 'host'
        shutil.copytree(TREE, self.tree, symlinks=True)
        self.cmdline = self.tree / 'proc' / 'cmdline'
        # the capture's own booted command line: the planted drift
        self.booted = self.cmdline.read_text()
        # repaired: the same with the isolcpus the plan asks for
        [self.isolcpus] = [arg for arg in self._plan()['kernel_args']
                           if arg.startswith('isolcpus=')]
        assert 'isolcpus=' not in self.booted, self.booted
        self.repaired = f'{self.booted.rstrip()} {self.isolcpus}\n'
        self.textfiles = tmp / 'textfile'
        self.textfiles.mkdir()
        self.prom = self.textfiles / 'kvmtune_verify.prom'
        self.node_port, self.prom_port = _free_port(), _free_port()
        self.services = []

    @property
    def node_url(self):
        return f'http://127.0.0.1:{self.node_port}'

    @property
    def api(self):
        return f'http://127.0.0.1:{self.prom_port}/api/v1'

    def _plan(self):
        done = kvmtune_process('plan', '--profile', PROFILE, '--root',
                               self.tree, '-f', 'json')
        assert done.rc == 0, done.err
        return json.loads(done.out)

    def verify(self, expect):
        done = kvmtune_process('verify', '--profile', PROFILE, '--root',
                               self.tree, '--layer', 'host', '--host',
                               HOSTNAME, '-f', 'value', '-c', 'status',
                               '--prometheus', self.prom)
        assert done.rc == expect, done.err
        return done

    def rules(self):
        """kvmtune's rules with every ``for:`` at 2 s, checked by
        promtool as loaded."""
        with open(RULES, encoding='utf-8') as f:
            doc = yaml.safe_load(f)
        for group in doc['groups']:
            for rule in group['rules']:
                if 'for' in rule:
                    rule['for'] = '2s'
        path = self.tmp / 'kvmtune.rules.yml'
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        check = subprocess.run(['promtool', 'check', 'rules', str(path)],
                               capture_output=True, text=True, timeout=120)
        assert check.returncode == 0, check.stdout + check.stderr
        return path

    def start(self):
        self.services.append(Service(
            [_binary(NODE_EXPORTER),
             f'--web.listen-address=127.0.0.1:{self.node_port}',
             '--collector.disable-defaults', '--collector.textfile',
             f'--collector.textfile.directory={self.textfiles}'],
            self.tmp / 'node_exporter.log'))
        config = {
            'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'},
            'rule_files': [str(self.rules())],
            'scrape_configs': [{
                'job_name': 'node',
                'static_configs': [{'targets': [
                    f'127.0.0.1:{self.node_port}']}]}]}
        cfg = self.tmp / 'prometheus.yml'
        cfg.write_text(yaml.safe_dump(config))
        self.services.append(Service(
            [_binary(PROMETHEUS), f'--config.file={cfg}',
             f'--storage.tsdb.path={self.tmp / "data"}',
             f'--web.listen-address=127.0.0.1:{self.prom_port}'],
            self.tmp / 'prometheus.log'))
        for service, url in zip(self.services,
                                (f'{self.node_url}/metrics',
                                 f'http://127.0.0.1:{self.prom_port}'
                                 '/-/ready')):
            _until(f'{service.proc.args[0]} answering',
                   lambda: (service.alive() or pytest.fail(
                       service.tail(), pytrace=False)) and _get(url),
                   bound=START_S)

    def stop(self):
        for service in reversed(self.services):
            service.stop()

    def query(self, expr):
        reply = json.loads(_get(f'{self.api}/query?' + urllib.parse.urlencode(
            {'query': expr})))
        assert reply['status'] == 'success', reply
        return reply['data']['result']

    def alerts(self, name):
        reply = json.loads(_get(f'{self.api}/alerts'))
        assert reply['status'] == 'success', reply
        return [a for a in reply['data']['alerts']
                if a['labels'].get('alertname') == name]


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    _binary(NODE_EXPORTER)
    _binary(PROMETHEUS)
    made = Stack(tmp_path_factory.mktemp('prometheus'))
    # the capture as booted drifts; the repaired tree is in sync
    made.verify(expect=1)
    made.cmdline.write_text(made.repaired)
    made.verify(expect=0)
    try:
        made.start()
        yield made
    finally:
        made.stop()


def test_a_planted_drift_fires_and_the_repair_clears_it(stack):
    started = time.monotonic()
    # the series arrive, with the Nova host as hostname
    series = _until('kvmtune series in Prometheus', lambda: stack.query(
        'kvmtune_verify_check_status'))
    assert {s['metric']['hostname'] for s in series} == {HOSTNAME}
    assert {s['metric']['status'] for s in series} == {'PASS'}
    assert {s['metric']['job'] for s in series} == {'node'}
    [last] = stack.query('kvmtune_last_success_timestamp_seconds'
                         '{command="verify"}')
    assert last['metric']['hostname'] == HOSTNAME
    reboot = stack.query('kvmtune_reboot_required')
    assert {s['metric']['reason'] for s in reboot} == {
        'cmdline', 'hugepages', 'module'}
    assert {s['value'][1] for s in reboot} == {'0'}
    # a rule evaluation or two with the host in sync: no drift alert
    _until('the rules evaluated', lambda: json.loads(_get(
        f'{stack.api}/rules'))['data']['groups'][0]['rules'][0].get(
        'lastEvaluation', '').startswith('20'))
    time.sleep(3)
    assert stack.alerts('KvmtuneDrift') == []

    # plant the drift: the capture's own booted command line, which has
    # no isolcpus
    stack.cmdline.write_text(stack.booted)
    stack.verify(expect=1)
    [alert] = _until('KvmtuneDrift in /api/v1/alerts',
                     lambda: stack.alerts('KvmtuneDrift'))
    assert alert['state'] in ('pending', 'firing')
    assert alert['labels']['hostname'] == HOSTNAME
    assert alert['labels']['profile'] == PROFILE
    assert HOSTNAME in alert['annotations']['summary']
    assert f'kvmtune verify --profile {PROFILE}' in \
        alert['annotations']['description']
    [drift] = stack.query('kvmtune_verify_check_status{status="DRIFT"}')
    assert drift['metric']['check'] == 'cmdline isolcpus'
    assert drift['metric']['hostname'] == HOSTNAME
    firing = _until('KvmtuneDrift firing (for: 2s)', lambda: [
        a for a in stack.alerts('KvmtuneDrift') if a['state'] == 'firing'])
    assert firing[0]['labels']['hostname'] == HOSTNAME

    # repair the tree (the plan's isolcpus booted): verify passes and the
    # alert goes away
    stack.cmdline.write_text(stack.repaired)
    stack.verify(expect=0)
    _until('KvmtuneDrift cleared', lambda: not stack.alerts('KvmtuneDrift'))
    assert stack.query('kvmtune_verify_checks_by_status{status="DRIFT"}'
                       ' > 0') == []
    print(f'drift planted, fired and cleared in '
          f'{time.monotonic() - started:.1f} s wall')


def test_node_exporter_never_reads_half_a_file(stack):
    """Scrape node_exporter while verify rewrites the file (in sync and
    drifted in turn): every scrape has the whole file and no textfile
    error."""
    writer = subprocess.Popen(
        ['sh', '-c', 'for n in 1 2 3 4 5 6 7 8; do '
         'if [ $((n % 2)) = 1 ]; then printf %s "$DRIFTED" > "$CMDLINE"; '
         'else printf %s "$REPAIRED" > "$CMDLINE"; fi; '
         '"$PY" -m kvmtune.cli verify --profile "$PROFILE" --root "$TREE" '
         '--layer host --host "$HOST" -f value -c status '
         '--prometheus "$PROM" >/dev/null; done'],
        env={**os.environ, 'DRIFTED': stack.booted,
             'REPAIRED': stack.repaired, 'CMDLINE': str(stack.cmdline),
             'PY': _python(), 'PROFILE': PROFILE, 'HOST': HOSTNAME,
             'TREE': str(stack.tree), 'PROM': str(stack.prom)})
    scrapes, seen = 0, set()
    try:
        deadline = time.monotonic() + 600
        while writer.poll() is None and time.monotonic() < deadline:
            found = {}
            for family in text_string_to_metric_families(
                    _get(f'{stack.node_url}/metrics')):
                for s in family.samples:
                    found.setdefault(s.name, []).append(s)
            scrapes += 1
            [error] = found['node_textfile_scrape_error']
            assert error.value == 0, 'node_exporter could not read a file'
            counts = {s.labels['status']: s.value
                      for s in found['kvmtune_verify_checks_by_status']}
            assert sum(counts.values()) == len(
                found['kvmtune_verify_check_status'])
            seen.add(counts['DRIFT'])
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait(timeout=30)
        stack.cmdline.write_text(stack.repaired)
    assert writer.returncode == 0
    assert scrapes > 8 and seen == {0, 1}, (scrapes, seen)
    print(f'{scrapes} scrapes during 8 rewrites, none torn')


def test_the_scrape_check_sees_a_torn_write(stack):
    """The check above can fail: the same file written in place, in two
    halves (what a writer without the rename does), is caught by it."""
    import threading
    text = stack.prom.read_text().replace('kvmtune_', 'torn_')
    torn = stack.textfiles / 'torn.prom'
    stop = threading.Event()

    def write_in_place():
        while not stop.is_set():
            with open(torn, 'w') as f:
                f.write(text[:len(text) // 2])
                f.flush()
                time.sleep(0.01)
                f.write(text[len(text) // 2:])

    thread = threading.Thread(target=write_in_place)
    thread.start()

    def caught():
        found = {}
        for family in text_string_to_metric_families(
                _get(f'{stack.node_url}/metrics')):
            for s in family.samples:
                found.setdefault(s.name, []).append(s)
        if found['node_textfile_scrape_error'][0].value == 1:
            return 'node_textfile_scrape_error 1'
        by_status = found.get('torn_verify_checks_by_status', [])
        if sum(s.value for s in by_status) != len(
                found.get('torn_verify_check_status', [])):
            return 'a file cut in two'
        return None

    try:
        assert _until('a torn write seen', caught, bound=120)
    finally:
        stop.set()
        thread.join(timeout=30)
        torn.unlink()


def _python():
    import sys
    return sys.executable
