"""``kvmtune bench nested``: seed 000's experiment, one workload on the bare
host, in a guest (L1) and in a guest of that guest (L2).

L1 and L2 both boot the nested image (``kvmtune image build --nested``):
with ``kvmtune.level=1`` it runs the job itself, with ``kvmtune.level=2``
it loads its KVM module with nested=1 and runs the job in its own guest
(the benchmark image) with QEMU on /dev/kvm, then frames L2's verified
result on its own console (kvmtune/image/nested.sh). The same image, CPU,
vCPUs and RAM for both, so the L2 row differs from the L1 row by the
nesting alone. Under TCG (this project's CI machine) L1 gets an emulated
AMD CPU with SVM and NPT (QEMU emulates no VMX), so its KVM runs on
emulated hardware: every guest figure is emulated. On a VT-x/AMD-V host
with nested=1, L1 runs on KVM with ``-cpu host`` and the figures are
nested KVM's.

Each guest runs once, alone, under a hard timeout (QEMU killed after it);
the guest side has its own (L2's QEMU under ``timeout -s KILL``).
"""

from collections.abc import Callable
from collections.abc import Sequence
import dataclasses
import os
import shutil
import tempfile
import time
from typing import Any
from typing import cast
import uuid

from kvmtune.bench import local
from kvmtune.bench import qemu
from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune.image import nested as nested_image
from kvmtune.results import row as rows
from kvmtune.results.row import Row
from kvmtune.results import units
from kvmtune.results import verdict as verdicts
from kvmtune.workloads import console
from kvmtune.workloads import guestjob as jobs
from kvmtune.workloads import Workload

NESTED = 'KVMTUNE-NESTED'
# The CPU a TCG L1 gets: QEMU emulates SVM (with nested paging), not VMX.
TCG_CPU = 'EPYC,+svm,+npt'
LEVELS = ('host', 'L1', 'L2')
# Hard timeouts, seconds beyond the runtime: L1 boots in ~35 s under TCG;
# L2's boot under L1's emulated SVM took ~130 s here (measured
# 2026-11-25), and L1 gives L2 runtime + nested.sh's L2_ALLOWANCE (600).
TIMEOUT = {'L1': 300, 'L2': 900}
POLL = 1.0
# The seed's figures (doc/experiments.md, 000): UnixBench index (1 core)
# and fio 4k random read IOPS, host / L1 / L2.
ARTICLE = {
    'cpu': ('UnixBench 1 core', 1184.7, 771.0, 583.0),
    'disk': ('4k randread IOPS', 52600.0, 38300.0, 18200.0),
}


def nested_said(console_text: str | None, instance_id: str
                ) -> dict[str, str]:
    """What an L1 guest said of its nesting (``KVMTUNE-NESTED`` lines,
    later words win): e.g. ``{"svm": "present", "module": "kvm_amd",
    "loaded": "yes", "nested": "1", "npt": "Y", "kvm": "/dev/kvm",
    "l2": "ok", "l2_accel": "kvm", "l2_seconds": "136.7"}``; {} when it
    said nothing (not the nested image, or level 1)."""
    said: dict[str, str] = {}
    text = (console_text or '').replace('\r\n', '\n')
    marker = f'{NESTED} {instance_id} '
    for line in text.splitlines():
        if line.startswith(marker):
            # each word holds '=': split once, it gives (key, value)
            said.update(w.split('=', 1)  # type: ignore[misc]
                        for w in line[len(marker):].split() if '=' in w)
    return said


def guest_argv(guest: qemu.Guest, level: int, accel: str, cpu: str,
               vcpus: int, ram_mb: int, image_dir: str, data: str | None,
               the_job: jobs.Job) -> list[str]:
    """QEMU's command line for one nested-image guest at ``level``."""
    argv = guest.argv(accel, vcpus, ram_mb, image_dir, data, 'raw', 'none',
                      job_cmdline=(f'kvmtune.level={level} '
                                   + jobs.cmdline(the_job)),
                      boot='kernel')
    if accel == 'tcg':
        at = argv.index('-m')
        argv[at:at] = ['-cpu', cpu]
    return argv


def _run_guest(level: int, workload: Workload, accel: str, cpu: str,
               vcpus: int, ram_mb: int, image_dir: str, runtime: int,
               params: dict[str, Any] | None, disk_size: int | str,
               workdir: str, log: Callable[[str], object]
               ) -> dict[str, Any]:
    """Boot one guest, wait for its verdict or the hard timeout."""
    guest = qemu.Guest(level, str(uuid.uuid4()),
                       os.path.join(workdir, f'l{level}'))
    os.makedirs(guest.workdir)
    data = None
    if workload.target == 'disk':
        data = os.path.join(guest.workdir, 'data.raw')
        qemu.data_disk(data, disk_size, 'raw')
    the_job = jobs.build(workload, target=qemu.DATA_DISK if data else None,
                         runtime=runtime, params=params)
    limit = runtime + TIMEOUT[f'L{level}']
    guest.start(guest_argv(guest, level, accel, cpu, vcpus, ram_mb,
                           image_dir, data, the_job))
    log(f'L{level}: guest booting ({qemu.accel_label(accel)}), runtime '
        f'{runtime} s, hard timeout {limit} s')
    deadline = cast(float, guest.started) + limit
    try:
        while time.monotonic() < deadline:
            if guest.poll() is not None:
                break
            seen = console.status(guest.console_text(), guest.instance_id)
            if seen and seen[0] in ('ok', 'late', 'error'):
                time.sleep(POLL)   # its poweroff
                break
            time.sleep(POLL)
        timed_out = guest.poll() is None and not _final(guest)
    finally:
        guest.stop()
    text = guest.console_text()
    row = verdicts.console_row(text, guest.instance_id, 'client',
                               workload.name, emulated=accel == 'tcg')
    if timed_out and row.status == rows.NO_RESULT:
        row = dataclasses.replace(
            row, reason=f'killed at its hard timeout ({limit} s); '
            + row.reason)
    return {'level': f'L{level}', 'instance_id': guest.instance_id,
            'seconds': round(time.monotonic() - cast(float, guest.started),
                             1),
            'row': row.flat(), 'nested': nested_said(text, guest.instance_id)}


def _final(guest: qemu.Guest) -> bool:
    seen = console.status(guest.console_text(), guest.instance_id)
    return bool(seen) and seen[0] in ('ok', 'late', 'error')


def _host(workload: Workload, runtime: int,
          params: dict[str, Any] | None) -> dict[str, Any]:
    from kvmtune.bench import baseline

    started = time.monotonic()
    doc = baseline.run(workload, runtime=runtime, params=params)
    result = dict(doc['result'], workload=workload.name)
    return {'level': 'host', 'instance_id': None,
            'seconds': round(time.monotonic() - started, 1),
            'row': rows.from_result('host', 'client', result, 'bare').flat(),
            'nested': {}}


def run(workload: Workload, runtime: int | str | None = None,
        params: dict[str, Any] | None = None, vcpus: int = 1,
        ram_mb: int = 1024, cpu: str = TCG_CPU, accel: str = 'auto',
        image_dir: str | None = None, disk_size: int | str = '256M',
        levels: Sequence[str] = LEVELS,
        log: Callable[[str], object] = print) -> dict[str, Any]:
    """Run ``workload`` at each of ``levels`` in turn; the run document.

    :param cpu: the L1 guest's QEMU CPU under TCG (must offer svm or vmx
        for L2 to start; ``EPYC,-svm`` shows the refusal)
    :param accel: auto, kvm or tcg (qemu.choose_accel) for L1
    """
    if workload.target not in ('disk', 'none'):
        raise InputError(f'{workload.name} needs a peer: bench nested runs '
                         'disk and CPU/memory workloads', key='--workload',
                         fix='e.g. sysbench-cpu or fio-randread-4k')
    unknown = [level for level in levels if level not in LEVELS]
    if unknown or not levels:
        raise InputError(f'unknown level {unknown[0] if unknown else ""!r}',
                         key='--levels', fix='host, L1 and/or L2')
    image_dir = nested_image.image_dir(image_dir)
    qemu.check_image(image_dir, 'kvmtune image build --nested')
    accel, why = qemu.choose_accel(accel)
    runtime = int(runtime or workload.settings(params).get('runtime', 10))
    started = time.monotonic()
    runs: list[dict[str, Any]] = []
    workdir = tempfile.mkdtemp(prefix='kvmtune-nested-',
                               dir=local.SCRATCH_DIR)
    try:
        for level in levels:
            if level == 'host':
                log(f'host: {workload.name} on the bare host, {runtime} s')
                runs.append(_host(workload, runtime, params))
            else:
                runs.append(_run_guest(
                    int(level[1]), workload, accel, cpu, vcpus, ram_mb,
                    image_dir, runtime, params, disk_size, workdir, log))
            done = runs[-1]
            log(f'{done["level"]}: {done["row"]["status"]}'
                + (f' ({done["row"]["reason"]})' if done['row']['reason']
                   else '') + f', {done["seconds"]} s')
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    from kvmtune.results import bench

    return bench.nested_doc(workload.name, runtime, params, vcpus, ram_mb,
                            accel, why, cpu, image_dir,
                            round(time.monotonic() - started, 1), runs)


def figure_kind(workload_name: str) -> str:
    """cpu, disk or memory: which of the seed's tables a workload's
    figures go beside (fio: disk; sysbench-cpu*: cpu; the rest: memory)."""
    from kvmtune import workloads

    workload = workloads.get(workload_name)
    if workload.tool == 'fio':
        return 'disk'
    return 'cpu' if workload_name.startswith('sysbench-cpu') else 'memory'


# The seed table's columns per figure kind (Row columns; the renderer
# names and scales them by kvmtune.results.units.UNITS)
COLUMNS = {'cpu': ('events_s', 'lat_mean_ns'),
           'disk': ('iops', 'bw_bytes_s', 'lat_mean_ns'),
           'memory': ('bw_bytes_s', 'lat_mean_ns')}


def table(doc: dict[str, Any]) -> list[str]:
    """The seed's table shape: host, L1, L2, L2 vs L1; lines of text.
    Each level is its Row (one unit set), the change is the report's
    (analysis.change) and the renderer prints the units."""
    from kvmtune.report import render
    from kvmtune.results import analysis

    by_level = {r['level']: rows.from_flat(r['row'], 'bench nested',
                                           f'{r["level"]}.row')
                for r in doc['runs']}
    kind = figure_kind(doc['workload'])
    columns = COLUMNS[kind]
    label = f' ({units.EMULATED})' if doc['emulated'] else ''
    article = ARTICLE.get(kind, ('no figure in the article', None, None,
                                 None))
    head = ['', *(units.UNITS[key][0] for key in columns), 'valid',
            f'article: {article[0]}']
    lines = [[level, *(render.figure(key, by_level[level].figure(key))
                       if level in by_level else '-' for key in columns),
              _valid(by_level.get(level)), render.number(value)]
             for level, value in zip(LEVELS, article[1:])]
    l1, l2 = by_level.get('L1'), by_level.get('L2')
    lines.append(['L2 vs L1', *(
        render.pct(analysis.change(l2.figure(key), l1.figure(key)))
        if l1 and l2 else '-' for key in columns), '',
        render.pct(analysis.change(article[3], article[2]))])
    out = [f'bench nested, {doc["workload"]}, {doc["runtime"]} s, '
           f'{doc["vcpus"]} vCPU, L1 CPU {doc["l1_cpu"]}{label}']
    out.extend(render.grid(head, lines))
    for r in doc['runs']:
        if r['row']['status'] != rows.OK:
            out.append(f'{r["level"]}: {r["row"]["status"]}: '
                       f'{r["row"]["reason"]}')
        if r['nested']:
            said = r['nested']
            out.append(f'{r["level"]}: ' + ' '.join(
                f'{k}={said[k]}' for k in sorted(said)))
    valid = sum(1 for r in doc['runs'] if r['row']['status'] == rows.OK)
    out.append(f'{valid}/{len(doc["runs"])} cells valid; wall time '
               f'{doc["wall_s"]:.0f} s{label}')
    return out


def _valid(row: Row | None) -> str:
    if row is None:
        return '-'
    return '1/1' if row.ok else '0/1'


CAPTURE_BEGIN = 'KVMTUNE-CAPTURE-BEGIN'
CAPTURE_END = 'KVMTUNE-CAPTURE-END'


def capture_archive(console_text: str | None, instance_id: str) -> bytes:
    """The gzip tar L1 framed on its console (nested.sh nested_capture),
    verified by its byte count and sha256; KvmtuneError otherwise."""
    import base64
    import binascii
    import hashlib
    import re

    text = (console_text or '').replace('\r\n', '\n')
    where = f'console of {instance_id}'
    match = re.search(re.escape(CAPTURE_BEGIN) + ' ' + re.escape(instance_id)
                      + r' (\d{1,12}) ([0-9a-f]{64})\n(.*?)\n'
                      + re.escape(CAPTURE_END) + ' ' + re.escape(instance_id),
                      text, re.S)
    if not match:
        raise KvmtuneError(f'no {CAPTURE_BEGIN} ... {CAPTURE_END} frame',
                           source=where, fix='the guest did not finish its '
                           'capture; check its console')
    try:
        data = base64.b64decode(''.join(match.group(3).split()),
                                validate=True)
    except binascii.Error as exc:
        raise KvmtuneError(f'capture is not base64: {exc}', source=where)
    if (len(data) != int(match.group(1)) or
            hashlib.sha256(data).hexdigest() != match.group(2)):
        raise KvmtuneError('capture: byte count or sha256 does not match',
                           source=where, fix='rerun the capture')
    return data


def capture_l1(target: str, image_dir: str | None = None,
               cpu: str = TCG_CPU, vcpus: int = 1, ram_mb: int = 1024,
               accel: str = 'auto', log: Callable[[str], object] = print
               ) -> dict[str, Any]:
    """Boot the nested image's L1 (it runs L2 once), copy the files
    ``kvmtune host inspect`` reads from inside it, and keep what kvmtune
    reads in ``target`` (kvmtune.facts.capture on the unpacked tree).
    Returns the capture record. Its KVM probe is L1's own word: usable
    when L2 ran through L1's /dev/kvm, which is what the probe
    (KVM_CREATE_VM) tests."""
    import io
    import json
    import tarfile

    from kvmtune.facts import capture
    from kvmtune import fileio
    from kvmtune import workloads

    if os.path.exists(target) and os.listdir(target):
        raise InputError('not empty', source=target,
                         fix='give a new or empty directory')
    image_dir = nested_image.image_dir(image_dir)
    qemu.check_image(image_dir, 'kvmtune image build --nested')
    accel, _ = qemu.choose_accel(accel)
    workload = workloads.get('sysbench-cpu')
    workdir = tempfile.mkdtemp(prefix='kvmtune-nested-capture-',
                               dir=local.SCRATCH_DIR)
    try:
        guest = qemu.Guest(1, str(uuid.uuid4()), os.path.join(workdir, 'l1'))
        os.makedirs(guest.workdir)
        the_job = jobs.build(workload, runtime=1)
        argv = guest_argv(guest, 2, accel, cpu, vcpus, ram_mb, image_dir,
                          None, the_job)
        at = argv.index('-append') + 1
        argv[at] = argv[at].replace('kvmtune.level=2',
                                    'kvmtune.level=2 kvmtune.capture=1')
        limit = TIMEOUT['L2'] + 60
        guest.start(argv)
        log(f'L1: booting for a capture ({qemu.accel_label(accel)}), hard '
            f'timeout {limit} s')
        try:
            deadline = cast(float, guest.started) + limit
            while time.monotonic() < deadline and guest.poll() is None:
                time.sleep(POLL)
        finally:
            guest.stop()
        text = guest.console_text()
        said = nested_said(text, guest.instance_id)
        data = capture_archive(text, guest.instance_id)
        tree = os.path.join(workdir, 'tree')
        with tarfile.open(fileobj=io.BytesIO(data), mode='r:gz') as tar:
            tar.extractall(tree, filter='data')
        record = capture.capture(tree, target)
        ran = said.get('l2') == 'ok'
        record['kvm_probe'] = {
            'usable': ran, 'api_version': 12 if ran else None,
            'error': None if ran else f'L2 did not run: l2={said.get("l2")}'}
        record['source'] = (
            'inside an L1 guest of the nested image (kvmtune bench nested '
            f'--capture-l1), QEMU {accel} -cpu {cpu}; the KVM probe is '
            'L1\'s: L2 ran through its /dev/kvm' if ran else
            'inside an L1 guest; L2 did not run')
        record['l1_said'] = said
        keep = {k: v for k, v in record.items() if k != 'facts'}
        fileio.write_atomic(os.path.join(target, 'kvmtune-capture.json'),
                            json.dumps(keep, indent=2) + '\n')
        return record
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
