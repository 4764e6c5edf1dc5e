"""The host layer on host trees: a tuned one, drift injected into copies
of it, and real machine captures (tests/fixtures/hosts/README.md)."""

import os
import shutil

import pytest

from kvmtune.tuning import plan as plans
from kvmtune import verify
from kvmtune.verify import host
from tests import paths

TUNED = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
REAL = os.path.join(paths.HOSTS, 'real')
PROFILE = 'pinned-hugepages-ept'


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(TUNED, root, symlinks=True)
    return root


def checks(root, profiles=(PROFILE,), plan_root=TUNED):
    built = plans.for_host(list(profiles), root=plan_root)
    return verify.run(built, verify.Context(root=str(root)), ('host',))


def by_name(found):
    return {check.name: check for check in found}


def test_a_host_booted_and_loaded_as_planned_passes():
    found = checks(TUNED, (PROFILE, 'nested-host'))
    assert found and all(c.status == 'PASS' for c in found), [
        (c.name, c.live) for c in found if c.status != 'PASS']
    names = set(by_name(found))
    assert {'cmdline isolcpus', 'cmdline hugepages (1G)',
            'pages node0 1G', 'pages node1 1G', 'module kvm_intel ept',
            'module kvm_intel nested'} <= names
    # one row for what both profiles plan, naming both
    assert by_name(found)['module kvm_intel nested'].profile == \
        'nested-host'


def test_a_boot_without_the_tuning_is_drift_with_the_reboot_fix(tree):
    cmdline = tree / 'proc/cmdline'
    cmdline.write_text('BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro\n')
    found = by_name(checks(tree))
    isolcpus = found['cmdline isolcpus']
    assert (isolcpus.status, isolcpus.live) == ('DRIFT', 'absent')
    assert 'isolcpus=1-19,21-39,41-59,61-79' in isolcpus.fix
    assert 'reboot' in isolcpus.fix
    assert found['cmdline hugepages (1G)'].status == 'DRIFT'


def test_another_cpu_set_is_drift_and_extra_flags_are_not(tree):
    cmdline = tree / 'proc/cmdline'
    text = cmdline.read_text()
    cmdline.write_text(text.replace('isolcpus=managed_irq,domain,1-19,',
                                    'isolcpus=managed_irq,domain,2-19,'))
    assert by_name(checks(tree))['cmdline isolcpus'].status == 'DRIFT'
    cmdline.write_text(text.replace('isolcpus=managed_irq,domain,',
                                    'isolcpus=nohz,domain,managed_irq,'))
    assert by_name(checks(tree))['cmdline isolcpus'].status == 'PASS'


def test_a_pool_shrunk_below_the_plan_is_drift(tree):
    pool = (tree / 'sys/devices/system/node/node1/hugepages/'
            'hugepages-1048576kB/nr_hugepages')
    pool.write_text('4\n')
    free = pool.parent / 'free_hugepages'
    free.write_text('2\n')
    check = by_name(checks(tree))['pages node1 1G']
    assert (check.status, check.expected, check.live) == (
        'DRIFT', '>= 16', '4 (2 free, 2 in use)')
    # the booted command line asks for the pool: first the boot's fix,
    # then the fix of a pool shrunk since
    assert check.fix.startswith('the kernel could not reserve the pool at '
                                'boot (the booted command line asks for '
                                'hugepagesz=1G hugepages=32): ')
    # the boot fixed, or another plan: the plan judged is not made again
    # here (a rollout judges the plan it applied until --replan)
    assert check.fix.endswith('hugepages=32): free the memory it needs at '
                              'boot (fewer boot-time reservations, such as '
                              'crashkernel=) and reboot, or plan the host '
                              'again with a smaller pool (a plan made now '
                              'keeps the pool the host has) and boot that '
                              '(shrunk since the boot: kvmtune pages apply '
                              '1:1G:16)')
    # asked per node: the node's own count
    cmdline = tree / 'proc/cmdline'
    text = cmdline.read_text()
    cmdline.write_text(text.replace('hugepages=32', 'hugepages=0:16,1:16'))
    check = by_name(checks(tree))['pages node1 1G']
    assert 'asks for hugepagesz=1G hugepages=0:16,1:16)' in check.fix
    cmdline.write_text(text.replace('hugepages=32', 'hugepages=0:30,1:2'))
    check = by_name(checks(tree))['pages node1 1G']
    assert check.fix.startswith('kvmtune pages apply 1:1G:16')
    cmdline.write_text(text)
    # a pool the command line does not ask for: grown at run time
    cmdline = tree / 'proc/cmdline'
    cmdline.write_text(cmdline.read_text().replace('hugepages=32',
                                                   'hugepages=8'))
    check = by_name(checks(tree))['pages node1 1G']
    assert check.fix.startswith('kvmtune pages apply 1:1G:16')


def test_module_parameters_off_or_module_unloaded_is_drift(tree):
    nested = tree / 'sys/module/kvm_intel/parameters/nested'
    nested.write_text('N\n')
    check = by_name(checks(tree, (PROFILE, 'nested-host')))[
        'module kvm_intel nested']
    assert (check.status, check.live) == ('DRIFT', 'nested=N')
    assert 'modprobe -r kvm_intel' in check.fix
    shutil.rmtree(tree / 'sys/module/kvm_intel')
    check = by_name(checks(tree))['module kvm_intel ept']
    assert (check.status, check.live) == ('DRIFT', 'module not loaded')


def test_an_unreadable_cmdline_is_unknown_never_pass(tree):
    cmdline = tree / 'proc/cmdline'
    cmdline.unlink()
    os.mkfifo(cmdline)
    check = by_name(checks(tree))['cmdline isolcpus']
    assert (check.status, check.live) == ('UNKNOWN', None)
    assert 'could not be read' in check.reason
    assert verify.exit_code([check]) == 3     # nothing checked


def test_a_profile_other_than_the_applied_one_is_drift_not_a_crash(tree):
    # 2M pages planned, 1G pages booted: the rows say which values differ.
    found = by_name(checks(TUNED, ('hugepages',), plan_root=TUNED))
    assert all(c.status in verify.STATUSES for c in found.values())
    profile = tree / 'mine.yaml'
    profile.write_text('name: mine\ndescription: d\nsource: s\ntuners:\n'
                       '  - name: hugepages\n    params: {host_page_size: '
                       '2M, memory_percent: 50}\n')
    found = by_name(checks(TUNED, (str(profile),)))
    assert found['cmdline default_hugepagesz'].status == 'DRIFT'
    assert found['cmdline default_hugepagesz'].live == \
        'default_hugepagesz=1G'


def test_tuned_checked_only_where_kvmtune_wrote_its_variables(tree):
    variables = tree / host.TUNED_VARIABLES
    variables.parent.mkdir(parents=True)
    # tuned's own packaged file: not kvmtune's, no tuned rows
    variables.write_text('isolated_cores=${f:calc_isolated_cores:1}\n')
    assert not [c for c in checks(tree) if c.name.startswith('tuned')]
    variables.write_text('# Written by "kvmtune export" from profile x\n'
                         'isolated_cores=1-19,21-39,41-59,61-79\n')
    (tree / host.TUNED_ACTIVE).write_text('cpu-partitioning\n')
    found = by_name(checks(tree))
    assert found['tuned profile'].status == 'PASS'
    assert found['tuned isolated_cores'].status == 'PASS'
    (tree / host.TUNED_ACTIVE).write_text('throughput-performance\n')
    variables.write_text('# Written by "kvmtune export" from profile x\n'
                         'isolated_cores=2-19\n')
    found = by_name(checks(tree))
    assert found['tuned profile'].status == 'DRIFT'
    assert found['tuned isolated_cores'].status == 'DRIFT'


REAL_WITH_CMDLINE = sorted(
    name for name in os.listdir(REAL)
    if os.path.isfile(os.path.join(REAL, name, 'proc', 'cmdline')))


@pytest.mark.parametrize('name', REAL_WITH_CMDLINE)
def test_real_captures_read_as_their_own_files_say(name):
    # The captures' command lines (read here from the file, not through
    # kvmtune) carry no isolcpus: pinning planned there is not booted.
    root = os.path.join(REAL, name)
    with open(os.path.join(root, 'proc', 'cmdline')) as handle:
        booted = handle.read()
    assert 'isolcpus=' not in booted
    built = plans.for_host(['cpu-pinning'], root=root)
    found = by_name(verify.run(built, verify.Context(root=root),
                               ('host',)))
    assert found['cmdline isolcpus'].status == 'DRIFT'
    assert found['cmdline isolcpus'].live == 'absent'
