"""One rollout step as ``kvmtune rollout-step`` makes it: the result it
prints, the state file it keeps (a step done is not made again), a
refused preflight that touches nothing (a model of Nova's API with the
recorded Placement answers of tests/unit/rollout/test_preflight.py)."""

import json
import os
import shutil

import pytest

from kvmtune.errors import EXIT_OK
from kvmtune.errors import InputError
from kvmtune.rollout import state
from kvmtune.rollout import steps
from tests import paths
from tests.unit.capacity.replay import load
from tests.unit.capacity.replay import RECORDINGS
from tests.unit.capacity.replay import Replay
from tests.unit.rollout.fakenova import FakeNova
from tests.unit.rollout.fakenova import server
from tests.unit.rollout.test_preflight import PINNED

HOSTS = ['compute-0000', 'compute-0001', 'compute-0002']


class Cloud(FakeNova):
    """The model's services and servers; Placement and the hypervisors
    from the recording, replicated over HOSTS."""

    def __init__(self, servers=()):
        super().__init__(HOSTS, servers)
        self.replay = Replay(load('testcloud-libvirt-pinned.json'),
                             hosts=len(HOSTS))

    def compute(self, method, path, body=None):
        if method == 'GET' and path.startswith(('/os-hypervisors',
                                                '/os-aggregates',
                                                '/flavors')):
            return self.replay.compute(method, path)
        return super().compute(method, path, body)

    def placement(self, method, path, body=None):
        return self.replay.placement(method, path)


def _pinned(uuid):
    return server(uuid, 'compute-0000', flavor='pinned', ram=128,
                  specs=PINNED)


def test_disable_then_again_with_the_state_file(tmp_path):
    cloud = Cloud()
    path = str(tmp_path / 'state.json')
    result = steps.make('disable', cloud, ['compute-0000'], 'R1',
                        profiles=['p'], state_file=path)
    assert result.changed and result.exit_code == EXIT_OK
    assert result.line == "disabled ('kvmtune rollout R1: p')"
    assert state.load(path).done('compute-0000', 'disable')
    writes = len(cloud.writes)
    again = steps.make('disable', cloud, ['compute-0000'], 'R1',
                       profiles=['p'], state_file=path)
    assert again.skipped and len(cloud.writes) == writes
    with pytest.raises(InputError):
        steps.make('disable', cloud, ['compute-0000'], 'R2',
                   profiles=['p'], state_file=path)


def test_a_finished_host_is_not_touched_again(tmp_path):
    cloud = Cloud([server('a', 'compute-0000')])
    path = str(tmp_path / 'state.json')
    run, _ = state.open_run(path, 'p', 'R1')
    for step in state.STEPS:
        run.mark('compute-0000', step)
    for step in ('disable', 'drain', 'enable'):
        result = steps.make(step, cloud, ['compute-0000'], 'R1',
                            profiles=['p'], state_file=path)
        assert result.skipped, step
    assert cloud.writes == []


def _facts_dir(tmp_path):
    """HOST.json and HOST.conf per node, as capacity --facts-dir takes
    them: the recorded node's facts and its cpu_dedicated_set."""
    for host in HOSTS:
        shutil.copy(os.path.join(RECORDINGS, 'vm.json'),
                    tmp_path / f'{host}.json')
        (tmp_path / f'{host}.conf').write_text(
            '[compute]\ncpu_dedicated_set = 1\ncpu_shared_set = 0\n')
    return str(tmp_path)


def test_preflight_places_the_guests_and_touches_nothing(tmp_path):
    cloud = Cloud([_pinned('p1'), server('a', 'compute-0000')])
    result = steps.make('preflight', cloud, ['compute-0000'], 'R1',
                        facts_dir=_facts_dir(tmp_path))
    assert result.error is None
    assert [r['to'] for r in result.rows if r['server'] != '(density)'] \
        == ['compute-0001', 'compute-0001']
    assert cloud.writes == []


def test_a_refused_preflight_says_why_and_touches_nothing(tmp_path):
    cloud = Cloud([_pinned(f'p{i}') for i in range(3)])
    result = steps.make('preflight', cloud, ['compute-0000'], 'R1',
                        facts_dir=_facts_dir(tmp_path))
    assert result.error is not None and cloud.writes == []
    assert 'fits on no other enabled compute' in result.error.line()
    assert result.to_dict()['ok'] is False


def test_drain_and_enable():
    cloud = Cloud([server('a', 'compute-0000'),
                   server('s', 'compute-0000', 'SHUTOFF')])
    steps.make('disable', cloud, ['compute-0000'], 'R1', profiles=['p'])
    result = steps.make('drain', cloud, ['compute-0000'], 'R1', timeout=30)
    assert result.line == 'empty; 2 server(s) moved'
    assert [r['status_after'] for r in result.rows] == ['ACTIVE', 'SHUTOFF']
    result = steps.make('enable', cloud, ['compute-0000'], 'R1')
    assert result.changed and cloud.services['compute-0000']['status'] == \
        'enabled'


def test_disable_needs_the_profile():
    with pytest.raises(InputError) as exc:
        steps.make('disable', Cloud(), ['compute-0000'], 'R1')
    assert exc.value.key == '--profile'


def test_the_gate_of_another_host_needs_its_facts():
    with pytest.raises(InputError) as exc:
        steps.make('gate', Cloud(), ['compute-0000'], 'R1',
                   profiles=['cpu-pinning'], layers=['cloud'])
    assert exc.value.key == '--facts'
    assert 'plans host compute-0000 from its facts' in exc.value.line()


def test_record_plan_records_the_plan_applied_once_without_a_cloud(tmp_path):
    """rollout-step record-plan: the plan the apply step applied on the host,
    recorded with the step in the state file; a plan made again later
    (after the reboot) does not replace it."""
    from kvmtune.tuning import plan

    path = str(tmp_path / 'state.json')
    made = plan.for_host(['cpu-pinning'], root=os.path.join(
        paths.HOSTS, 'real', '32intel64-2p8co2t+8ve'))[0]
    applied = tmp_path / 'applied.json'
    applied.write_text(json.dumps(made.to_dict()))
    result = steps.make('record-plan', None, ['compute-0000'], 'R1',
                        profiles=['cpu-pinning'], state_file=path,
                        plan_file=str(applied))
    assert result.line == ('the plan of cpu-pinning applied, recorded in '
                           'run R1')
    assert not result.skipped and result.to_dict()['ok']
    assert state.load(path).applied('compute-0000') == made.to_dict()
    other = made.to_dict() | {'kernel_args': ['isolcpus=1']}
    applied.write_text(json.dumps(other))
    again = steps.make('record-plan', None, ['compute-0000'], 'R1',
                       profiles=['cpu-pinning'], state_file=path,
                       plan_file=str(applied))
    assert again.skipped and again.line == ('the plan applied in run R1 '
                                            'kept (recorded before)')
    assert again.document['plan'] == made.to_dict()
    assert state.load(path).plans['compute-0000'] == made.to_dict()
    # another run's state file is refused, as for every step
    with pytest.raises(InputError):
        steps.make('record-plan', None, ['compute-0000'], 'R2',
                   state_file=path, plan_file=str(applied))


@pytest.mark.parametrize('state_file, plan_file, key', [
    (None, 'plan.json', '--state'), ('state.json', None, '--plan')])
def test_record_plan_needs_the_state_file_and_the_plan(
        tmp_path, state_file, plan_file, key):
    with pytest.raises(InputError) as exc:
        steps.make('record-plan', None, ['compute-0000'], 'R1',
                   state_file=state_file and str(tmp_path / state_file),
                   plan_file=plan_file)
    assert exc.value.key == key
    assert list(tmp_path.iterdir()) == []
