"""The nova-compute layer on a /proc tree made here (a nova-compute's
cmdline, environ and stat) and real nova.conf files, and on a container
layout given explicitly."""

import os
import time

import pytest

from kvmtune.tuning import plan as plans
from kvmtune import verify
from tests import paths

TUNED = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
PID = 4242
TICKS = os.sysconf('SC_CLK_TCK')


def plan(profile='pinned-hugepages-ept'):
    return plans.for_host([profile], root=TUNED)[0]


def conf_for(built, service='compute'):
    """The plan's options for nova-compute as nova.conf text."""
    from kvmtune.tuning.novaconf import services
    lines = []
    for section, options in services.split(built.nova_conf,
                                           service)[0].items():
        lines.append(f'[{section}]')
        for option, value in options.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append(f'{option} = {item}')
    return '\n'.join(lines) + '\n'


@pytest.fixture
def host(tmp_path):
    """A root with /etc/nova/nova.conf as planned and a /proc whose
    nova-compute started now, with --config-file /etc/nova/nova.conf."""
    root = tmp_path / 'root'
    etc = root / 'etc' / 'nova'
    etc.mkdir(parents=True)
    (etc / 'nova.conf').write_text(conf_for(plan()))
    old = time.time() - 3600
    os.utime(etc / 'nova.conf', (old, old))
    proc = root / 'proc'
    (proc / str(PID)).mkdir(parents=True)
    (proc / str(PID) / 'cmdline').write_bytes(
        b'/usr/bin/python3\0/usr/bin/nova-compute\0--config-file\0'
        b'/etc/nova/nova.conf\0')
    (proc / str(PID) / 'environ').write_bytes(b'HOME=/var/lib/nova\0')
    boot = int(time.time()) - 7200
    (proc / 'stat').write_text(f'cpu  1 2 3\nbtime {boot}\n')
    started = 7200 - 60          # a minute ago, after the file changed
    fields = ['S'] + ['0'] * 18 + [str(started * TICKS)] + ['0'] * 10
    (proc / str(PID) / 'stat').write_text(
        f'{PID} (nova-compute) ' + ' '.join(fields) + '\n')
    return root


def run(root, **ctx):
    return {c.name: c for c in verify.run(
        [plan()], verify.Context(root=str(root), **ctx), ('novacompute',))}


def test_a_service_running_the_plan_passes(host):
    found = run(host)
    assert found and all(c.status == 'PASS' for c in found.values()), [
        (c.name, c.live, c.fix) for c in found.values()]
    assert 'option [compute] cpu_dedicated_set' in found
    assert 'nova-compute restart' in found


def test_a_file_edited_after_the_start_needs_a_restart(host):
    conf = host / 'etc/nova/nova.conf'
    conf.write_text(conf.read_text())        # mtime: now, after the start
    check = run(host)['nova-compute restart']
    assert check.status == 'DRIFT'
    assert '/etc/nova/nova.conf changed' in check.live
    assert check.fix.startswith('restart nova-compute')


def _start_then_edit(host, after):
    """nova-compute started at a whole second; nova.conf written
    ``after`` seconds later."""
    boot = int((host / 'proc/stat').read_text().split('btime ')[1])
    started = boot + 7200 - 60
    conf = host / 'etc/nova/nova.conf'
    os.utime(conf, (started + after, started + after))
    return run(host)['nova-compute restart']


def test_a_file_written_within_btimes_second_of_the_start_passes(host):
    # btime is whole seconds: an apply-then-restart inside one second
    # may read as a start just before the write (seen in CI, stop 41).
    check = _start_then_edit(host, 0.6)
    assert check.status == 'PASS', check.live


def test_a_file_written_two_seconds_after_the_start_drifts(host):
    check = _start_then_edit(host, 2.0)
    assert check.status == 'DRIFT'
    assert 'started 2 s before' in check.live


def test_a_later_drop_in_that_overrides_is_drift_naming_it(host):
    # started without --config-file, the drop-in dir is read after
    # nova.conf: its value wins
    (host / 'proc' / str(PID) / 'cmdline').write_bytes(
        b'/usr/bin/nova-compute\0')
    drop = host / 'etc/nova/nova-compute.conf.d'
    drop.mkdir()
    (drop / '90-ops.conf').write_text('[compute]\ncpu_dedicated_set = 2-5\n')
    old = time.time() - 3600
    os.utime(drop / '90-ops.conf', (old, old))
    check = run(host)['option [compute] cpu_dedicated_set']
    assert check.status == 'DRIFT'
    assert check.live == ('2-5 (from /etc/nova/nova-compute.conf.d/'
                          '90-ops.conf)')
    assert '90-ops.conf is read last and wins' in check.fix


def test_an_environment_override_is_drift(host):
    (host / 'proc' / str(PID) / 'environ').write_bytes(
        b'HOME=/var/lib/nova\0OS_COMPUTE__CPU_DEDICATED_SET=1\0')
    check = run(host)['option [compute] cpu_dedicated_set']
    assert (check.status, check.live) == ('DRIFT', '1 (from environment)')
    assert check.fix.startswith('unset OS_COMPUTE__CPU_DEDICATED_SET')


def test_a_container_layout_given_explicitly(host, tmp_path):
    # kolla: the service's files are under /etc/kolla/nova-compute on the
    # host; no process is looked for.
    kolla = host / 'etc/kolla/nova-compute'
    kolla.mkdir(parents=True)
    (kolla / 'nova.conf').write_text('[compute]\ncpu_dedicated_set = 1\n')
    found = run(host, config_files=['/etc/kolla/nova-compute/nova.conf'])
    assert found['option [compute] cpu_dedicated_set'].status == 'DRIFT'
    assert 'nova-compute restart' not in found


def test_no_process_or_an_unreadable_proc_is_unknown(host):
    (host / 'proc' / str(PID) / 'cmdline').unlink()
    [check] = run(host).values()
    assert check.status == 'UNKNOWN'
    assert 'no nova-compute process' in check.reason


def test_only_what_the_service_reads_is_checked(host):
    found = run(host, service='scheduler')
    # no nova-scheduler runs in this /proc
    assert [c.status for c in found.values()] == ['UNKNOWN']
    (host / 'proc' / str(PID) / 'cmdline').write_bytes(
        b'/usr/bin/nova-scheduler\0--config-file\0/etc/nova/nova.conf\0')
    names = set(run(host, service='scheduler'))
    assert 'option [compute] cpu_dedicated_set' not in names
