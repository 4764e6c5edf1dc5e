"""kvmtune.rollout.runlock: one rollout at a time on a state file."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import run
from kvmtune.rollout import runlock


def test_a_second_rollout_on_the_state_file_is_refused_naming_the_holder(
        tmp_path):
    state = str(tmp_path / 'rollout.json')
    with runlock.hold(state, 'R1'):
        holder = json.loads(open(runlock.path_of(state)).read())
        assert (holder['run_id'], holder['pid']) == ('R1', os.getpid())
        with pytest.raises(InputError) as err:
            with runlock.hold(state, None):
                raise AssertionError('held twice')
        line = err.value.line()
        assert line.startswith(f'{state}: another kvmtune rollout runs on '
                               f'this state file: run R1, process '
                               f'{os.getpid()} on ')
        assert '\n' not in line and line.count('(fix: ') == 1
        # the state file itself is not touched
        assert not os.path.exists(state)
    # let go: the next run holds it
    with runlock.hold(state, 'R2'):
        assert json.loads(open(runlock.path_of(state)).read())[
            'run_id'] == 'R2'


def test_the_rollout_is_refused_before_it_reads_anything(tmp_path,
                                                         monkeypatch):
    state = str(tmp_path / 'rollout.json')

    def planned(*args, **kwargs):
        raise AssertionError('planned while another run holds the file')

    monkeypatch.setattr(run.check, 'plan', planned)
    with runlock.hold(state, 'R1'):
        with pytest.raises(InputError, match='another kvmtune rollout'):
            run.run('inv', [], profile='p', limit='all', batch=1,
                    mode='drain', cloud=None, run_id=None, state_file=state)


def test_a_holder_that_wrote_nothing_is_still_refused(tmp_path):
    state = str(tmp_path / 'rollout.json')
    with runlock.hold(state, 'R1'):
        open(runlock.path_of(state), 'w').close()     # emptied
        with pytest.raises(InputError, match='a run that did not say'):
            with runlock.hold(state, 'R2'):
                pass
