"""Guest jobs and status lines (design.md §6) seen from the scenarios."""

import json

from kvmtune.report import guests


def test_job_is_the_protocol_shape():
    job = json.loads(guests.job('fio-randread-4k', 1790000000.7, 10,
                                target='/dev/vdb'))
    assert job == {'workload': 'fio-randread-4k', 'target': '/dev/vdb',
                   'peer': None, 'role': 'client', 'start_at': 1790000000,
                   'runtime': 10, 'hold': False, 'params': {}}


def test_start_at_grows_with_the_batch():
    assert guests.start_at(1000.0, 1, 45, 20) == 1065
    assert guests.start_at(1000.0, 3, 45, 20) == 1105


def test_status_is_the_guests_own_last_line():
    text = ('boot noise\nKVMTUNE-STATUS other-vm ok\n'
            'KVMTUNE-STATUS vm-1 error fio: bad job file\r\n')
    assert guests.status(text.replace('\r', ''), 'vm-1') == (
        'error', 'fio: bad job file')
    assert guests.status(text, 'vm-2') is None
    assert guests.status('KVMTUNE-STATUS vm-1 late', 'vm-1') == ('late', '')
    assert guests.status(None, 'vm-1') is None
