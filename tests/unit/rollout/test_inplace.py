"""In-place mode's preflight (kvmtune.rollout.inplace): the plan's CPU
sets and page pools against the guests that stay, on the recorded test
cloud's servers (tests/unit/rollout/test_preflight.py's). Pure logic."""

import pytest

from kvmtune.rollout import inplace
from kvmtune.rollout import nova
from tests.unit.rollout.test_preflight import _plan
from tests.unit.rollout.test_preflight import pinned
from tests.unit.rollout.test_preflight import shared
from tests.unit.rollout.test_preflight import TOPOLOGY


@pytest.mark.parametrize('plan, says', [
    (_plan('1', '0', [(0, 2048, 64)]), None),
    (_plan('2-3', '0'), 'pinned to CPUs [1] outside the new '
                        'cpu_dedicated_set 2-3 (Nova only warns'),
    (_plan(None, '0-1'), 'pinned, and the plan sets no cpu_dedicated_set'),
    (_plan('1', '0', [(0, 2048, 10)]),
     'its guests hold 64 pages of 2048 KiB on NUMA node 0; the plan '
     'leaves 10'),
])
def test_in_place_refuses_what_moves_or_shrinks_under_a_guest(plan, says):
    guests = [nova.Server.from_api(pinned('p'))]
    found = inplace.in_place('compute-0000', guests, TOPOLOGY, plan)
    if says is None:
        assert found == []
    else:
        line, = [r.line() for r in found]
        assert says in line and line.startswith(
            'host compute-0000: in-place: ')


def test_in_place_unpinned_guests_need_a_shared_set():
    guests = [nova.Server.from_api(shared('a'))]
    line, = [r.line() for r in inplace.in_place(
        'compute-0000', guests, {}, _plan('0-1'))]
    assert 'unpinned, and the plan sets a cpu_dedicated_set but no ' \
        'cpu_shared_set' in line
    assert inplace.in_place('compute-0000', guests, {},
                            _plan('1', '0')) == []


def test_planned_set_is_the_plans_cpu_list():
    assert inplace.planned_set(_plan('0-2,5'), 'cpu_dedicated_set') == \
        {0, 1, 2, 5}
    assert inplace.planned_set(_plan('1'), 'cpu_shared_set') is None
