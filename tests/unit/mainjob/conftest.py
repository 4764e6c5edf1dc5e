"""Rally's own database for the main job's tests (test_sweep,
test_rallyprogress): one per test session, as Rally's API keeps one
database engine per process."""

import pytest

from kvmtune.mainjob import sweep


@pytest.fixture(scope='session')
def rally_db(tmp_path_factory):
    """Rally's own database in the job's Rally directory, made by Rally's
    Python API from the rally.conf the job writes; (api, add) where
    ``add(flavor, iterations)`` records a subtask of the disk task as
    Rally's engine does (one workload; each iteration written when it
    ends, raw_result_chunk_size 1)."""
    from rally import api as rally_api
    from rally.common import db
    from rally.common import objects

    runner = sweep.Rally(str(tmp_path_factory.mktemp('job')))
    api = rally_api.API(config_file=runner.conf, skip_db_check=True)
    db.schema.schema_create()
    api.deployment.create(config={}, name='kvmtune-test')
    task = objects.Task.get(api.task.create(deployment='kvmtune-test')[
        'uuid'])

    def add(flavor, counts):
        subtask = task.add_subtask(title=f'disk scaling on {flavor}')
        workload = subtask.add_workload(
            'KvmTune.disk_scaling', '', 0, {'times': len(counts)},
            'constant', {}, [], {},
            {'flavor': {'name': flavor}, 'vm_counts': counts})
        return subtask, workload

    return api, task['uuid'], add, runner.conf


def ended_task(rally_db, status, sla):
    """A task of the disk sweep in Rally's database that ended with
    ``status`` and one workload whose SLA results are ``sla``, written
    through Rally's own objects as its engine writes them."""
    import time

    from rally.common import objects
    from tests.unit.results.test_rally import iteration

    api = rally_db[0]
    task = objects.Task.get(api.task.create(deployment='kvmtune-test')[
        'uuid'])
    subtask = task.add_subtask(title='disk scaling on m1.x')
    workload = subtask.add_workload(
        'KvmTune.disk_scaling', '', 0, {'times': 1}, 'constant', {}, [],
        {}, {'flavor': {'name': 'm1.x'}, 'vm_counts': [1]})
    workload.add_workload_data(0, {'raw': [iteration([1000.0])]})
    workload.set_results(load_duration=1.0, full_duration=2.0,
                         start_time=time.time(), sla_results=sla,
                         contexts_results=[])
    task.update_status(status)
    return task['uuid']
