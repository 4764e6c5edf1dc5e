"""kvmtune.tuning.failed on the fixture hosts: which FAIL checks of a plan
block an apply command and which its boot-time changes clear; the
refusal's one line. The commands' side is in tests/unit/cmd/test_*_apply.py."""

import os

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning import failed
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from kvmtune.tuning.tuners import base
from tests import paths

PVM = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')


def plan_for(name, root):
    return plans.build_plan(profiles.load(name, profiles.search_dirs()),
                            host_facts.gather(root))


def test_a_pool_the_boot_time_changes_reserve_is_staged_ept_is_not():
    """On the PVM capture (no VT-x, no 1G pages) the missing pool's fix is
    the plan's own kernel arguments: staged; no EPT nothing clears."""
    plan = plan_for('pinned-hugepages-ept', PVM)
    blocking, pending = failed.failed_checks(plan)
    assert [(c.tuner, c.name) for c in blocking] == [('ept', 'ept-enabled')]
    assert [(c.tuner, c.name) for c in pending] == [
        ('hugepages', 'hugepage-pool')]
    # the same check with arguments the plan does not have is not staged
    pool = pending[0]
    assert pool.boot_args and all(
        arg in plan.kernel_args for arg in pool.boot_args)
    other = base.TunerCheck(pool.tuner, pool.name, 'fail', pool.message,
                            pool.fix, boot_args=('hugepages=9',))
    assert not failed.staged(plan, other)


def test_a_module_option_the_plans_modprobe_file_sets_is_staged():
    plan = plans.Plan(profile='p', facts_source='t', modprobe={
        plans.MODPROBE_PATH: 'options kvm_intel ept=1 nested=1\n'})
    off = base.TunerCheck('ept', 'ept-enabled', 'fail', 'kvm_intel ept is '
                          'off', base.module_reload_fix('kvm_intel', 'ept=1'))
    assert failed.staged(plan, off)
    amd = base.TunerCheck('ept', 'ept-enabled', 'fail', 'kvm_amd npt is '
                          'off', base.module_reload_fix('kvm_amd', 'npt=1'))
    assert not failed.staged(plan, amd)
    assert not failed.staged(plan, base.TunerCheck('x', 'y', 'fail', 'm'))


def test_refuse_names_each_blocking_check_and_its_fix():
    plan = plan_for('pinned-hugepages-ept', PVM)
    warned = []
    with pytest.raises(InputError) as caught:
        failed.refuse(plan, 'kvmtune nova-conf apply',
                      warn=warned.append)
    line = caught.value.line()
    assert 'kvmtune nova-conf apply: refused: the plan of ' \
           'pinned-hugepages-ept has 1 FAIL check(s)' in line
    assert 'FAIL ept ept-enabled: no VT-x/AMD-V' in line
    assert 'fix: ept ept-enabled: run on a host whose CPU' in line
    assert line.endswith('(or give --accept-failed-checks to write it '
                         'anyway))')
    # the staged pool: one warning naming the next step, not a refusal
    assert len(warned) == 1
    assert warned[0].startswith('FAIL hugepages hugepage-pool until')
    assert 'kvmtune boot apply --profile pinned-hugepages-ept' in warned[0]
    # told: each blocking check is a warning line, nothing raised
    warned.clear()
    failed.refuse(plan, 'kvmtune boot apply', accept=True,
                  boot_time=True, warn=warned.append)
    assert warned == ['FAIL ept ept-enabled accepted '
                      '(--accept-failed-checks): ' + next(
                          c.message for c in plan.checks
                          if c.name == 'ept-enabled')]


def test_a_plan_without_fail_checks_or_with_staged_ones_passes():
    failed.refuse(plan_for('cpu-pinning', PVM), 'x')
    # boot apply is the fix of the pool: not even a warning
    warned = []
    failed.refuse(plan_for('pinned-hugepages', PVM), 'x',
                  boot_time=True, warn=warned.append)
    assert warned == []
