"""The nested image's level-1 shell part (kvmtune/image/nested.sh): L2's
framed result re-framed under L1's instance, as kvmtune's console reader
(kvmtune.workloads.console) reads it; run by busybox sh and the host's sh,
like tests/unit/image/test_guestlib.py."""

import hashlib
import os
import shutil
import subprocess

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.workloads import console
from kvmtune.workloads import parsers
from tests import paths

HERE = os.path.join(paths.REPO, 'kvmtune', 'image')
SYSBENCH = os.path.join(paths.FIXTURES, 'outputs',
                        'sysbench-1.0.20-cpu-1t.txt')
L1 = '11111111-2222-3333-4444-555555555555'
L2 = '38a35b95-9a30-414e-8e86-3e56bd854a94'


@pytest.fixture(params=['busybox', 'sh'])
def shell(request, tmp_path_factory):
    if request.param == 'busybox':
        busybox = shutil.which('busybox')
        if not busybox:
            pytest.skip('busybox not installed (apt-get install '
                        'busybox-static)')
        bin_dir = tmp_path_factory.mktemp('busybox-bin')
        subprocess.run([busybox, '--install', '-s', str(bin_dir)],
                       check=True)
        return [str(bin_dir / 'sh')], {'PATH': str(bin_dir)}
    return ['sh'], dict(os.environ)


def reframe(shell, tmp_path, l2_console):
    """(status, stdout) of nested_reframe on an L2 console (bytes as the
    serial port file holds them: CR LF)."""
    (tmp_path / 'l2.log').write_bytes(l2_console)
    argv, env = shell
    code = (f'. {HERE}/guestlib.sh; . {HERE}/nested.sh; '
            f'tr -d "\\r" < l2.log > l2.txt; '
            f'nested_reframe {L2} {L1} l2.txt')
    proc = subprocess.run(argv + ['-c', code], cwd=tmp_path,
                          env=dict(env, TMPDIR=str(tmp_path)),
                          capture_output=True, timeout=30)
    assert not proc.stderr, proc.stderr
    return proc.returncode, proc.stdout.decode()


def l2_console(payload, digest=None):
    """An L2 console as init.sh frames its result, the tty's CR LF."""
    data = payload.encode()
    digest = digest or hashlib.sha256(data).hexdigest()
    text = (f'KVMTUNE-GUEST {L2} accel=kvm clocksource=kvm-clock '
            f'hypervisor=KVMKVMKVM\n'
            f'KVMTUNE-RESULT-BEGIN {L2} sysbench-cpu sysbench {len(data)} '
            f'{digest}\n{payload}\nKVMTUNE-RESULT-END {L2}\n'
            f'KVMTUNE-STATUS {L2} ok ready=1.0 start=1.0\n'
            '[   31.000001] reboot: Power down\n')
    return text.replace('\n', '\r\n').encode()


def test_l2_result_reads_as_l1s(shell, tmp_path):
    with open(SYSBENCH) as f:
        payload = f.read()
    status, out = reframe(shell, tmp_path, l2_console(payload))
    assert status == 0
    (frame,) = console.extract(out, L1)
    assert frame['raw'] == payload
    assert frame['workload'] == 'sysbench-cpu'
    result = parsers.parse('sysbench', frame['raw'], 'sysbench-cpu')
    assert result['events_s'] > 0
    with pytest.raises(KvmtuneError):   # nothing under L2's id is left
        console.extract(out, L2)


def test_garbled_l2_result_is_refused_with_the_reason(shell, tmp_path):
    with open(SYSBENCH) as f:
        payload = f.read()
    digest = hashlib.sha256(b'something else').hexdigest()
    status, out = reframe(shell, tmp_path, l2_console(payload, digest))
    assert status == 1
    assert out.strip() == "L2's result failed its sha256 on L2's console"


def test_no_l2_frame_is_refused_with_the_reason(shell, tmp_path):
    status, out = reframe(
        shell, tmp_path, f'KVMTUNE-STATUS {L2} ok\r\n'.encode())
    assert status == 1
    assert out.strip() == 'L2 said ok but framed no result'
