"""The main job's Rally task arguments, task files and sweep lines (the
environment spec: test_rallyenv.py)."""

import os

import pytest
import yaml

from kvmtune.errors import KvmtuneError
from kvmtune.mainjob import rally
from tests import paths


def test_task_args_name_both_flavors_and_an_absolute_baseline():
    args = rally.task_args(3, 'fio-randread-4k',
                           ['m1.bench.baseline', 'm1.bench.x'],
                           'kvmtune-bench', baseline='bm.json')
    assert args['max_vms'] == 3 and args['flavors'][1] == 'm1.bench.x'
    assert args['baseline'].startswith('/')


def test_task_path_is_the_installed_task_file():
    path = rally.task_path('disk-scaling')
    assert os.path.isfile(path)
    assert path == rally.task_path('disk-scaling.yaml')
    assert {'disk-scaling', 'network-scaling'} <= set(rally.task_names())
    with pytest.raises(KvmtuneError,
                       match=r"no Rally task named 'disk' \(fix: one of: "
                             r"disk-scaling, network-scaling\)") as err:
        rally.task_path('disk')
    assert 'one of: disk-scaling' in err.value.line()


def render(**args):
    """The disk task as `rally task start --task-args` renders it."""
    from rally import api

    path = rally.task_path('disk-scaling')
    with open(path) as f:
        text = f.read()
    return yaml.safe_load(api._Task(api=None).render_template(
        task_template=text, template_dir=os.path.dirname(path), **args))


def test_flavor_max_vms_limits_only_that_flavors_sweep():
    flavors = ['m1.bench.baseline', 'm1.bench.pinned-hugepages']
    args = rally.task_args(3, 'fio-randread-4k', flavors, 'kvmtune-bench',
                           flavor_max_vms={flavors[1]: 1})
    task = render(**args)
    runs = {s['scenario']['KvmTune.disk_scaling']['flavor']['name']:
            (s['scenario']['KvmTune.disk_scaling']['vm_counts'],
             s['runner']['constant']['times']) for s in task['subtasks']}
    assert runs == {flavors[0]: ([1, 2, 3], 3), flavors[1]: ([1], 1)}
    # what the progress line expects is what the task runs
    assert rally.vm_counts(3, flavors, {flavors[1]: 1}) == {
        flavors[0]: [1, 2, 3], flavors[1]: [1]}
    # without it every flavor runs every count, as before
    task = render(**rally.task_args(2, 'fio-randread-4k', flavors, 'i'))
    assert [s['runner']['constant']['times'] for s in task['subtasks']] \
        == [2, 2]


# Rally 5.1.1's own log of a main job sweep (tests/fixtures/rally/SOURCE):
# both subtasks' workloads are at position 0; the flavor is in the config
# Rally logs after "Running workload:".
RALLY_LOG = os.path.join(paths.FIXTURES, 'rally', 'main-job-sweep.log')


def progress_lines(counts):
    """The progress lines (without their times) for the real log, the
    sweep being ``counts`` ({flavor: [VM counts]})."""
    shown = []
    progress = rally.Progress(list(counts), counts, show=shown.append,
                              tty=False)
    with open(RALLY_LOG) as handle:
        for line in handle:
            progress.line(line)
    progress.finish()
    assert all(s.endswith(' s)') for s in shown)
    return [s.rsplit(' (', 1)[0] for s in shown]


def test_progress_one_line_per_vm_count():
    assert progress_lines({'m1.bench.baseline': [1, 2, 3],
                           'm1.bench.pinned-hugepages': [1]}) == [
        'sweep: m1.bench.baseline, 1 VM(s), guests reported 1/1',
        'sweep: m1.bench.baseline, 2 VM(s), guests reported 2/2',
        'sweep: m1.bench.baseline, 3 VM(s), guests reported 3/3',
        'sweep: m1.bench.pinned-hugepages, 1 VM(s), guests reported 1/1']


def test_progress_without_a_known_flavor_stays_silent():
    # a workload whose config names none of the sweep's flavors: no line
    # with a wrong flavor, and the next workload is read again
    assert progress_lines({'m1.bench.pinned-hugepages': [1]}) == [
        'sweep: m1.bench.pinned-hugepages, 1 VM(s), guests reported 1/1']


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
    lines = rally.sla_failures(path)
    assert lines[1] == ('disk scaling fio-randread-4k on '
                        'm1.bench.pinned-hugepages: kvmtune_scaling: per-VM '
                        'IOPS at 1 VMs is 3% of bare metal (< 50%)')
    assert lines[0].startswith('disk scaling fio-randread-4k on '
                               'm1.bench.baseline: kvmtune_scaling: per-VM')
    assert lines[0].endswith('...') and len(lines[0]) < 220
    assert rally.sla_failures(report_json(tmp_path, [('f', [PASSED])])) \
        == []
