"""Result records: what they hold and what report checks before it
compares (refuse different workloads, warn about the rest)."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune import facts
from kvmtune.results import records
from kvmtune import workloads
from tests import paths


def _facts(name):
    return facts.gather(root=os.path.join(paths.HOSTS, name))


@pytest.fixture(scope='module')
def hosts():
    return sorted(n for n in os.listdir(paths.HOSTS)
                  if os.path.isdir(os.path.join(paths.HOSTS, n)))


def test_record_of_a_captured_host(hosts):
    f = _facts(hosts[0])
    w = workloads.get('sysbench-cpu')
    rec = records.make('bench-local', w, f, 'tcg', records.Conditions(
        params={'threads': 1}, runtime=5, settings={'cache': 'none'},
        virt='tcg', why='asked for'))
    assert rec['kind'] == 'bench-local' and rec['emulated'] is True
    assert rec['host']['cpu_model'] == f['cpu']['model_name']
    assert rec['host']['nodes'] == len(f['numa']['nodes'])
    assert rec['host']['cpus'] == len(f['cpu']['online'])
    assert rec['host']['virt'] == 'tcg'
    assert rec['workload'] == {'name': 'sysbench-cpu', 'tool': 'sysbench',
                               'params': {'threads': 1}, 'runtime': 5,
                               'command': None}
    assert rec['kvmtune_version'] and rec['time'].endswith('Z')
    json.dumps(rec)   # plain JSON


def test_host_digest_ignores_tuning_but_not_the_machine(hosts):
    f = _facts(hosts[0])
    tuned = json.loads(json.dumps(f))
    tuned['kernel']['cmdline'] += ' hugepages=16'
    for node in tuned['numa']['nodes']:
        for pool in node['hugepages']:
            pool['total'] += 4
    assert records.host(tuned)['digest'] == records.host(f)['digest']
    assert records.facts_digest(tuned) != records.facts_digest(f)
    others = [records.host(_facts(h))['digest'] for h in hosts]
    assert len(set(others)) == len(hosts)


def _rec(workload='fio-randread-4k', digest='a', accel='tcg', params=None,
         runtime=10, kind='bench-local'):
    return {'kind': kind, 'accel': accel,
            'host': {'digest': digest, 'hostname': f'host-{digest}',
                     'cpu_model': 'cpu'},
            'workload': {'name': workload, 'params': params or {},
                         'runtime': runtime}}


def test_rally_record_from_task_arguments():
    rec = records.from_rally({'flavor': {'name': 'm1.tuned'},
                              'workload': 'sysbench-cpu', 'runtime': 10,
                              'emulated': True,
                              'record': {'profile': 'pinned-hugepages',
                                         'host': {'digest': 'x'}}},
                             started='2026-11-22T20:00:00')
    assert rec['kind'] == 'rally-sweep' and rec['emulated']
    assert rec['settings'] == {'flavor': 'm1.tuned'}
    assert rec['profile'] == 'pinned-hugepages'
    assert rec['host'] == {'digest': 'x'}
    assert rec['workload']['name'] == 'sysbench-cpu'
    assert rec['time'] == '2026-11-22T20:00:00'


def test_sweep_record_holds_the_profiles_plan(hosts):
    f = _facts('intel-2s-smt-ept-1g')
    rec = records.for_sweep('pinned-hugepages', f, 'kvm', 'fio-randread-4k',
                            runtime=10)
    assert rec['kind'] == 'rally-sweep' and rec['profile'] == \
        'pinned-hugepages'
    from kvmtune.tuning import plan
    from kvmtune.tuning import profiles
    made = plan.build_plan(profiles.load('pinned-hugepages',
                                         profiles.search_dirs()), f)
    assert rec['extra_specs'] == made.to_dict()['extra_specs']
    assert rec['nova_conf'] == made.to_dict()['nova_conf']
    assert rec['extra_specs']['hw:cpu_policy'] == 'dedicated'
    assert 'cpu_dedicated_set' in rec['nova_conf']['compute']
    assert rec['host']['digest'] == records.host(f)['digest']
    assert not rec['emulated']
    # what report makes of a sweep whose task passed it
    back = records.from_rally({'flavor': {'name': 'm1.tuned'},
                               'workload': 'fio-randread-4k',
                               'record': rec})
    assert back['extra_specs'] == rec['extra_specs']
    assert back['host'] == rec['host']
    unknown = records.for_sweep('baseline', None, 'tcg', 'fio-randread-4k')
    assert unknown['host'] is None and unknown['extra_specs'] is None


@pytest.mark.parametrize('record, key', [
    ('oops', 'record'),
    ({'host': ['x']}, 'record.host'),
    ({'workload': {'name': 3}}, 'record.workload.name'),
    ({'workload': {'params': 'a=b'}}, 'record.workload.params'),
    ({'workload': {'runtime': True}}, 'record.workload.runtime'),
    ({'settings': [1]}, 'record.settings'),
    ({'host': {'digest': {}}}, 'record.host.digest'),
    ({'workload': {'command': 'fio --name=x'}}, 'record.workload.command'),
])
def test_a_record_of_the_wrong_shape_is_one_line(record, key):
    # Before: AttributeError, "internal error".
    with pytest.raises(InputError, match=rf'^r.json: {key}: must be '):
        records.validate(record, 'r.json')


def test_records_kvmtune_writes_are_of_the_shape(tmp_path):
    assert records.validate(None, 'r') is None
    good = {'kind': 'bench-local', 'accel': 'tcg', 'emulated': True,
            'host': {'digest': 'd', 'hostname': 'h', 'cpu_model': 'c'},
            'settings': {}, 'workload': {'name': 'w', 'params': {},
                                         'runtime': 10, 'tool': 'fio'}}
    assert records.validate(good, 'r') is good
    # a baseline's record holds its command line, a list (before: refused
    # by kvmtune report and bench local --compare --baseline run)
    from kvmtune import workloads
    bare = records.make('baseline', workloads.get('sysbench-cpu'), None,
                        'bare', records.Conditions(
                            command=['sysbench', 'cpu', 'run']))
    assert records.validate(bare, 'b.json') is bare
