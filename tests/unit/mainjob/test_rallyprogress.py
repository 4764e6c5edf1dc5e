"""The sweep's progress from Rally's own record of the task, in Rally's
own database (conftest.rally_db): a line per ended step, the running
step rewritten on a terminal, and the follower's reads."""

from kvmtune.mainjob import rallyprogress


def test_progress_one_line_per_step_from_rallys_record(rally_db):
    from tests.unit.results.test_rally import iteration

    api, uuid, add, _ = rally_db
    shown = []
    progress = rallyprogress.Progress(['m1.a', 'm1.b'], {'m1.a': [1, 2, 3]},
                                      show=shown.append, tty=False)
    subtask, workload = add('m1.a', [1, 2, 3])
    _, other = add('m1.other', [1])        # not the sweep's: silent
    other.add_workload_data(0, {'raw': [iteration([5.0])]})
    progress.update(api.task.get(uuid, detailed=True))
    assert (shown, progress.flavor, progress.vms) == ([], 'm1.a', 1)
    workload.add_workload_data(0, {'raw': [iteration([1000.0])]})
    workload.add_workload_data(1, {'raw': [iteration(
        [800.0], bad=[('late', 'ready after start_at')])]})
    progress.update(api.task.get(uuid, detailed=True))
    assert progress.vms == 3
    failed = {'duration': 2.0, 'idle_duration': 0.0, 'timestamp': 0,
              'atomic_actions': [], 'output': {'complete': []},
              'error': ['TimeoutException', 'Rally tired\nof waiting']}
    workload.add_workload_data(2, {'raw': [failed]})
    subtask.update_status('finished')
    progress.update(api.task.get(uuid, detailed=True))
    assert shown == [
        'sweep: m1.a, 1 VM(s): guests valid 1/1, per-VM 1,000 IOPS (1 s)',
        'sweep: m1.a, 2 VM(s): guests valid 1/2, per-VM 800 IOPS (1 s)',
        'sweep: m1.a, 3 VM(s): iteration failed: TimeoutException: Rally '
        'tired of waiting (2 s)']
    assert progress.flavor is None      # nothing of the sweep runs


def test_follow_reads_the_task_until_the_run_ends(rally_db):
    import threading

    api, uuid, _, conf = rally_db
    subtasks = len(api.task.get(uuid, detailed=True)['subtasks'])
    seen = []

    class Probe:
        def update(self, task):
            seen.append((task['uuid'], len(task['subtasks'])))
            stop.set()      # Rally exited: one more read, then no more

    stop = threading.Event()
    rallyprogress.follow(conf, uuid, Probe(), stop, poll=0.01)
    assert seen == [(uuid, subtasks)] * 2


def test_a_terminal_sees_the_running_step_rewritten(rally_db, monkeypatch):
    from kvmtune.mainjob import steps

    api, uuid, add, _ = rally_db
    written = []
    monkeypatch.setattr(steps.OUT, 'show', written.append)
    progress = rallyprogress.Progress(['m1.tty'], {'m1.tty': [1, 2]},
                                      show=written.append, tty=True)
    add('m1.tty', [1, 2])
    progress.update(api.task.get(uuid, detailed=True))
    progress.finish()
    assert written[0].startswith('\r\033[Kmain-job: sweep: m1.tty, 1 VM(s) (')
    assert written[-1] == '\n'
