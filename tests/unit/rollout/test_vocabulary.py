"""kvmtune.rollout.vocabulary: one step table and one mode type, held to
the kvmtune.fleet collection's roles and playbook (read as YAML here):
every step the roles report is in the table and every step of the table
has its tasks there, where the table says it runs; a recorded step's
command is called with the state file, an unrecorded one's is not."""

import os

import pytest
import yaml

from kvmtune.cmd import rollout_step
from kvmtune.rollout import playbook
from kvmtune.rollout import state
from kvmtune.rollout import vocabulary


def _tasks(node):
    """Every task of a task list, blocks walked."""
    for task in node or ():
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(task.get(key))


def collection_tasks(root=playbook.COLLECTION):
    """(file, task) of every task of the roles' tasks and handlers and of
    the playbook's plays."""
    for directory, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(directory, name)
            part = os.path.basename(directory)
            if not name.endswith('.yml') or part not in (
                    'tasks', 'handlers', 'playbooks'):
                continue
            with open(path, encoding='utf-8') as source:
                doc = yaml.safe_load(source)
            if part == 'playbooks':
                for play in doc:
                    for key in ('pre_tasks', 'tasks', 'post_tasks',
                                'handlers'):
                        for task in _tasks(play.get(key)):
                            yield path, task
            else:
                for task in _tasks(doc):
                    yield path, task


def table_problems(tasks):
    """What in ``tasks`` disagrees with the step table (empty: nothing)."""
    problems = []
    seen = {}
    for path, task in tasks:
        step = (task.get('vars') or {}).get('kvmtune_step')
        argv = str((task.get('ansible.builtin.command') or {}).get('argv',
                                                                   ''))
        called = next((c for c in vocabulary.COMMANDS
                       if f"'rollout-step', '{c}'" in argv), None)
        if 'rollout-step' in argv and called is None:
            problems.append(f'{path}: {task["name"]}: a rollout-step command '
                            'not in the table')
        if step is None:
            if called is not None:
                problems.append(f'{path}: {task["name"]}: calls rollout-step '
                                f'{called} without kvmtune_step')
            continue
        if step not in vocabulary.NAMES:
            problems.append(f'{path}: {task["name"]}: step {step} is not in '
                            'the table')
            continue
        where = (vocabulary.CONTROLLER if task.get('delegate_to') ==
                 'localhost' else vocabulary.HOST)
        seen.setdefault(step, set()).add(where)
        if called is not None:
            if vocabulary.COMMANDS[called] != step:
                problems.append(f'{path}: {task["name"]}: rollout-step '
                                f'{called} reported as step {step}')
            if vocabulary.step(step).recorded and \
                    'kvmtune_state_file' not in argv + str(task.get('vars')):
                problems.append(f'{path}: {task["name"]}: a recorded step '
                                'without the state file')
    for entry in vocabulary.STEPS:
        if entry.name not in seen:
            problems.append(f'step {entry.name}: no task reports it')
        elif entry.name != 'preflight' and \
                seen[entry.name] != set(entry.where):
            # preflight's settings check runs on the host's own play line
            problems.append(f'step {entry.name}: runs on '
                            f'{sorted(seen[entry.name])}, the table says '
                            f'{list(entry.where)}')
    return problems


def test_the_roles_report_the_table_s_steps_where_it_says():
    assert table_problems(collection_tasks()) == []


def test_table_problems_finds_a_step_the_table_does_not_have():
    tasks = list(collection_tasks())
    odd = {'name': 'odd', 'vars': {'kvmtune_step': 'evacuate'}}
    assert table_problems(tasks + [('x.yml', odd)]) == [
        'x.yml: odd: step evacuate is not in the table']
    dropped = [(p, t) for p, t in tasks
               if (t.get('vars') or {}).get('kvmtune_step') != 'textfile']
    assert table_problems(dropped) == ['step textfile: no task reports it']
    moved = {'name': 'moved', 'vars': {'kvmtune_step': 'reboot'},
             'delegate_to': 'localhost'}
    assert table_problems(tasks + [('y.yml', moved)]) == [
        "step reboot: runs on ['controller', 'host'], the table says "
        "['host']"]


def test_the_state_file_and_rollout_step_use_the_table():
    assert state.STEPS == vocabulary.RECORDED == (
        'preflight', 'disable', 'drain', 'apply', 'gate', 'enable')
    assert set(rollout_step.STEPS) == set(vocabulary.COMMANDS)
    assert vocabulary.COMMANDS['record-plan'] == 'apply'
    assert 'apply' not in rollout_step.STEPS


def test_one_mode_type():
    assert vocabulary.MODES == ('drain', 'in-place', 'stage')
    assert str(vocabulary.Mode.IN_PLACE) == 'in-place'
    assert playbook.MODES == vocabulary.MODES
    with pytest.raises(KeyError):
        vocabulary.step('evacuate')
