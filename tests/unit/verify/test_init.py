"""The verify contract: Check, compare, unknown, run, exit_code."""

import sys
import types

import pytest

from kvmtune.errors import EXIT_UNCHECKED
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
    # nothing checked: every check UNKNOWN, or none at all
    assert verify.exit_code([check]) == EXIT_UNCHECKED == 3
    assert verify.exit_code([]) == EXIT_UNCHECKED
    assert verify.exit_code([check, verify.compare(
        'host', 'x', 'a', 'b', 'f')]) == 1
    # a mix of PASS and UNKNOWN: in sync as far as it could tell (the
    # UNKNOWN rows are shown and counted, they do not undo the PASS)
    assert verify.exit_code([check, verify.compare(
        'host', 'x', 'a', 'a', 'f')]) == 0
    assert verify.exit_code(iter([check])) == EXIT_UNCHECKED


def test_the_origin_names_another_host_only():
    assert verify.origin_of(None, None) is None
    assert verify.origin_of('/', None) is None          # --root /: here
    assert verify.origin_of('/captured', None) == '--root'
    assert verify.origin_of(None, 'facts.json') == '--facts'
    ctx = verify.Context(origin='--facts')
    assert ctx.elsewhere and not ctx.has_tree
    assert verify.Context().has_tree and not verify.Context().elsewhere
    with pytest.raises(ValueError, match='origin'):
        verify.Context(origin='--elsewhere')


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
