"""The verify contract: Check, compare, unknown, run, exit_code."""

import sys
import types

import pytest

from kvmtune import verify


def test_compare_is_pass_only_when_equal_and_keeps_the_fix_for_drift():
    same = verify.compare('host', 'isolcpus', '2-7', '2-7', 'reboot')
    assert (same.status, same.fix) == ('PASS', None)
    moved = verify.compare('host', 'isolcpus', '2-7', '2-5', 'reboot',
                           host='c1', profile='p')
    assert (moved.status, moved.fix, moved.host, moved.profile) == (
        'DRIFT', 'reboot', 'c1', 'p')


def test_unknown_carries_its_reason_and_never_a_live_value():
    check = verify.unknown('guests', 'pins', 'in 2-7', 'no libvirt')
    assert (check.status, check.live, check.reason) == (
        'UNKNOWN', None, 'no libvirt')
    assert verify.exit_code([check]) == 0
    assert verify.exit_code([check, verify.compare(
        'host', 'x', 'a', 'b', 'f')]) == 1


def test_a_status_outside_the_three_is_refused():
    with pytest.raises(ValueError, match='status'):
        verify.Check(layer='host', name='x', expected='a', status='OK')


def test_run_asks_each_layer_in_order(monkeypatch):
    seen = []
    for layer in ('host', 'cloud'):
        module = types.ModuleType(f'kvmtune.verify.{layer}')

        def checks(plans, ctx, layer=layer):
            seen.append((layer, plans, ctx))
            return [verify.unknown(layer, 'n', 'e', 'r')]
        module.checks = checks
        monkeypatch.setitem(sys.modules, module.__name__, module)
    ctx = verify.Context(root='/captured')
    found = verify.run(['plan'], ctx, layers=('host', 'cloud'))
    assert [c.layer for c in found] == ['host', 'cloud']
    assert seen == [('host', ['plan'], ctx), ('cloud', ['plan'], ctx)]
    with pytest.raises(ValueError, match='unknown layer'):
        verify.run([], ctx, layers=('kernel',))
