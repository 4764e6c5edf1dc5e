"""The main job's Rally task arguments, task files and sweep lines (the
environment spec: test_rallyenv.py)."""

import json
import os

import pytest
import yaml

from kvmtune.errors import KvmtuneError
from kvmtune.mainjob import sweep
from tests import paths
from tests.unit.mainjob.conftest import ended_task


def test_task_args_name_both_flavors_and_an_absolute_baseline():
    args = sweep.task_args(3, 'fio-randread-4k',
                           ['m1.bench.baseline', 'm1.bench.x'],
                           'kvmtune-bench', baseline='bm.json')
    assert args['max_vms'] == 3 and args['flavors'][1] == 'm1.bench.x'
    assert args['baseline'].startswith('/')


def test_task_path_is_the_installed_task_file():
    path = sweep.task_path('disk-scaling')
    assert os.path.isfile(path)
    assert path == sweep.task_path('disk-scaling.yaml')
    assert {'disk-scaling', 'network-scaling'} <= set(sweep.task_names())
    with pytest.raises(KvmtuneError,
                       match=r"no Rally task named 'disk' \(fix: one of: "
                             r"disk-scaling, network-scaling\)") as err:
        sweep.task_path('disk')
    assert 'one of: disk-scaling' in err.value.line()


def test_the_installed_task_files_are_the_checkouts_rally_scenarios():
    """One source: rally_scenarios/ at the top of the tree is what a Rally
    user runs from a clone, and the wheel carries the same files as
    kvmtune/rally/tasks (links in the checkout, the files' content in the
    wheel), so `kvmtune rally task-path` names the same content."""
    top = os.path.join(paths.REPO, 'rally_scenarios')
    names = sorted(n[:-5] for n in os.listdir(top) if n.endswith('.yaml'))
    assert names == sweep.task_names() and names
    for name in names:
        with open(os.path.join(top, name + '.yaml'), 'rb') as f:
            checkout = f.read()
        with open(sweep.task_path(name), 'rb') as f:
            assert f.read() == checkout


@pytest.mark.parametrize('name', ['disk-scaling', 'network-scaling'])
def test_each_task_has_an_arguments_file_rally_renders(name):
    """rally_scenarios/args/NAME.yaml holds arguments the task takes: Rally
    renders the task with them (its own template code) to a task of one
    subtask per flavor."""
    with open(os.path.join(paths.REPO, 'rally_scenarios', 'args',
                           name + '.yaml')) as f:
        args = yaml.safe_load(f)
    from rally import api

    path = sweep.task_path(name)
    with open(path) as f:
        text = f.read()
    task = yaml.safe_load(api._Task(api=None).render_template(
        task_template=text, template_dir=os.path.dirname(path), **args))
    assert len(task['subtasks']) == len(args['flavors'])
    assert args['image_name'] in json.dumps(task)


def render(**args):
    """The disk task as `rally task start --task-args` renders it."""
    from rally import api

    path = sweep.task_path('disk-scaling')
    with open(path) as f:
        text = f.read()
    return yaml.safe_load(api._Task(api=None).render_template(
        task_template=text, template_dir=os.path.dirname(path), **args))


def test_flavor_max_vms_limits_only_that_flavors_sweep():
    flavors = ['m1.bench.baseline', 'm1.bench.pinned-hugepages']
    args = sweep.task_args(3, 'fio-randread-4k', flavors, 'kvmtune-bench',
                           flavor_max_vms={flavors[1]: 1})
    task = render(**args)
    runs = {s['scenario']['KvmTune.disk_scaling']['flavor']['name']:
            (s['scenario']['KvmTune.disk_scaling']['vm_counts'],
             s['runner']['constant']['times']) for s in task['subtasks']}
    assert runs == {flavors[0]: ([1, 2, 3], 3), flavors[1]: ([1], 1)}
    # what the progress line expects is what the task runs
    assert sweep.vm_counts(3, flavors, {flavors[1]: 1}) == {
        flavors[0]: [1, 2, 3], flavors[1]: [1]}
    # without it every flavor runs every count, as before
    task = render(**sweep.task_args(2, 'fio-randread-4k', flavors, 'i'))
    assert [s['runner']['constant']['times'] for s in task['subtasks']] \
        == [2, 2]


def test_the_job_rally_writes_each_iteration_when_it_ends(rally_db):
    from rally.common import cfg

    # the job's rally.conf, as Rally's own configuration reads it
    assert cfg.CONF.raw_result_chunk_size == 1


def report_json(tmp_path, slas):
    """A `rally task report --json` file with one subtask per flavor."""
    import json

    doc = {'info': {}, 'tasks': [{'subtasks': [
        {'title': f'disk scaling fio-randread-4k on {flavor}',
         'workloads': [{'sla_results': {'sla': sla}}]}
        for flavor, sla in slas]}]}
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(doc))
    return str(path)


PASSED = {'criterion': 'failure_rate', 'success': True,
          'detail': 'Failure rate criteria 0.00% <= 0.00% <= 0.00% - Passed'}


def test_sla_failures_name_each_flavors_subtask(tmp_path):
    """Both subtasks' workloads are at position 0 (sla-check's "pos"):
    the subtask, not the position, names the flavor."""
    long = ' | '.join(f'per-VM IOPS at {n} VMs is 1% of bare metal (< 50%)'
                      for n in (1, 2, 3, 4))
    path = report_json(tmp_path, [
        ('m1.bench.baseline', [PASSED, {'criterion': 'kvmtune_scaling',
                                        'success': False,
                                        'detail': long + ' - Failed'}]),
        ('m1.bench.pinned-hugepages', [PASSED, {
            'criterion': 'kvmtune_scaling', 'success': False,
            'detail': 'per-VM IOPS at 1 VMs is 3% of bare metal (< 50%) '
                      '- Failed'}])])
    lines = sweep.sla_failures(path)
    assert lines[1] == ('disk scaling fio-randread-4k on '
                        'm1.bench.pinned-hugepages: kvmtune_scaling: per-VM '
                        'IOPS at 1 VMs is 3% of bare metal (< 50%)')
    assert lines[0].startswith('disk scaling fio-randread-4k on '
                               'm1.bench.baseline: kvmtune_scaling: per-VM')
    assert lines[0].endswith('...') and len(lines[0]) < 220
    assert sweep.sla_failures(report_json(tmp_path, [('f', [PASSED])])) \
        == []


def test_task_args_take_the_runtime():
    assert sweep.task_args(1, 'w', [], 'i', runtime=5)['runtime'] == 5


def test_reports_are_rallys_own_and_the_sla_their_failed_criteria(
        rally_db, tmp_path):
    from kvmtune import inputs

    conf = rally_db[3]
    runner = sweep.Rally(os.path.dirname(os.path.dirname(conf)))
    assert runner.conf == conf
    failed = ended_task(rally_db, 'finished', [
        {'criterion': 'kvmtune_scaling', 'success': False,
         'detail': 'per-VM IOPS at 1 VMs is 7% of bare metal (< 50%) - '
                   'Failed'}])
    out_json, out_html = str(tmp_path / 'r.json'), str(tmp_path / 'r.html')
    assert runner.reports(failed, 'disk-scaling', out_json, out_html) \
        is False
    assert runner.sla_failures == [
        'disk scaling on m1.x: kvmtune_scaling: per-VM IOPS at 1 VMs is 7% '
        'of bare metal (< 50%)']
    doc = inputs.load_json(out_json)
    assert [t['uuid'] for t in doc['tasks']] == [failed]
    with open(out_html) as f:
        page = f.read()
    assert page.lstrip().lower().startswith('<!doctype html>')
    assert 'disk scaling on m1.x' in page

    met = ended_task(rally_db, 'finished', [
        {'criterion': 'kvmtune_scaling', 'success': True, 'detail': 'ok'}])
    assert runner.reports(met, 'disk-scaling', out_json, out_html) is True
    assert runner.sla_failures == []
    assert [t['uuid'] for t in inputs.load_json(out_json)['tasks']] == [met]


def test_a_task_that_did_not_end_is_one_error_and_no_report(
        rally_db, tmp_path):
    conf = rally_db[3]
    runner = sweep.Rally(os.path.dirname(os.path.dirname(conf)))
    crashed = ended_task(rally_db, 'crashed', [])
    out_json = str(tmp_path / 'r.json')
    with pytest.raises(KvmtuneError) as caught:
        runner.reports(crashed, 'disk-scaling', out_json,
                       str(tmp_path / 'r.html'))
    assert caught.value.line().startswith(
        f'disk-scaling: rally task {crashed} ended crashed: no sweep ran')
    assert not os.path.exists(out_json)
