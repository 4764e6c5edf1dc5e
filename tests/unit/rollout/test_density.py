"""The density cost of a plan on a batch host: guests per flavor the empty
host holds now and under the plan (on the recorded test cloud node,
tests/unit/rollout/test_preflight.py's fleet)."""

from kvmtune.rollout import density
from tests.unit.rollout.test_preflight import _plan
from tests.unit.rollout.test_preflight import FACTS
from tests.unit.rollout.test_preflight import pinned
from tests.unit.rollout.test_preflight import shared
from tests.unit.rollout.test_preflight import snapshot


def test_before_and_after_per_flavor():
    snap = snapshot(guests=[pinned('p'), shared('a')])
    rows = density.density(snap, 'compute-0000', _plan('0-1'))
    assert rows == [
        # now: PCPU 1 (CPU 1); the plan dedicates both CPUs: 2
        {'host': 'compute-0000', 'flavor': 'kvmtune-ft-002e681a-pinned',
         'before': 1, 'after': 2},
        # now: VCPU 1 x 16; the plan leaves no shared CPU: none
        {'host': 'compute-0000', 'flavor': 'kvmtune-ft-base-94120b',
         'before': 16, 'after': 0}]


def test_pools_the_plan_reserves_are_counted():
    large = dict(pinned('h'))
    large['flavor'] = dict(large['flavor'], original_name='pinned-large',
                           extra_specs={'hw:cpu_policy': 'dedicated',
                                        'hw:mem_page_size': 'large'})
    snap = snapshot(guests=[large])
    rows = density.density(snap, 'compute-0000',
                           _plan('1', '0', [(0, 2048, 128)]))
    # no 2M pages now; 128 x 2 MiB = 256 MiB after: a 128 MiB guest fits,
    # and the one dedicated CPU limits it to one
    assert [(r['before'], r['after']) for r in rows] == [(0, 1)]
    changed = density.planned_facts(FACTS, _plan('1', '0',
                                                 [(0, 2048, 128)]))
    assert {p['size_kb']: p['total'] for p in
            changed['numa']['nodes'][0]['hugepages']}[2048] == 128


def test_without_a_plan_after_is_not_known():
    snap = snapshot(guests=[shared('a')])
    assert density.density(snap, 'compute-0000', None) == [
        {'host': 'compute-0000', 'flavor': 'kvmtune-ft-base-94120b',
         'before': 16, 'after': None}]
