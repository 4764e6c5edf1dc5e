"""The gate: it passes only when every check of the host, novacompute and
cloud layers is PASS; a DRIFT or UNKNOWN keeps the host disabled with one
line naming the first such check and its fix."""

import os

from kvmtune import facts as host_facts
from kvmtune.rollout import gate
from kvmtune.tuning import plan
from kvmtune import verify
from tests import paths

CAPTURE = os.path.join(paths.HOSTS, 'real', '32intel64-2p8co2t+8ve')


def _check(status, name='kernel arg', **kw):
    return verify.Check(layer='host', name=name, expected='x',
                        live='y' if status != verify.UNKNOWN else None,
                        status=status, **kw)


def test_all_pass_passes():
    verdict = gate.Verdict('c2', [_check(verify.PASS)] * 3)
    assert verdict.passed and verdict.line() == '3 checks PASS'


def test_no_check_is_no_pass():
    verdict = gate.Verdict('c2', [])
    assert not verdict.passed and 'on nothing' in verdict.line()


def test_a_drift_names_the_check_and_its_fix():
    verdict = gate.Verdict('c2', [
        _check(verify.PASS), _check(verify.DRIFT, 'hugepages node 0',
                                    fix='kvmtune pages apply'),
        _check(verify.UNKNOWN, reason='no nova-compute process')])
    assert not verdict.passed
    assert verdict.line() == ('host hugepages node 0: expected x, live y '
                              '(and 1 more); the host stays disabled (fix: '
                              'kvmtune pages apply)')
    assert verdict.to_dict()['passed'] is False


def test_unknown_is_not_a_pass():
    verdict = gate.Verdict('c2', [_check(verify.UNKNOWN,
                                         reason='no libvirt')])
    assert not verdict.passed
    assert verdict.line().startswith('host kernel arg: unknown (no libvirt)')


def test_a_host_not_booted_with_the_plan_does_not_pass():
    # a real capture that never booted the profile's kernel arguments
    facts = host_facts.gather(CAPTURE)
    plans = plan.for_host(['pinned-hugepages'], facts=facts)
    verdict = gate.gate(plans, verify.Context(root=CAPTURE, facts=facts),
                        ['host'])
    assert verdict.checks and not verdict.passed
    assert 'the host stays disabled' in verdict.line()
    assert {c.layer for c in verdict.checks} == {'host'}
