"""The test cloud's computes 2..N (kvmtune cloud up --computes N): their
shapes, CPU sets, files and state entries, and finding one to restart.
Pure: no cloud, no file outside tmp_path."""

import os

import pytest

from kvmtune.errors import InputError
from kvmtune.testcloud import config
from kvmtune.testcloud import novacompute
from tests.unit.testcloud.test_config import _oslo_sections


def _facts(name):
    import json

    from kvmtune.testcloud import services

    with open(os.path.join(services.FILES, 'hosts', name)) as f:
        return json.load(f)


def test_extra_computes_cycle_the_shipped_shapes():
    from kvmtune.testcloud import services

    names = [os.path.basename(novacompute.default_extra_facts(
        i, services.FILES)) for i in (2, 3, 4, 5)]
    assert names == ['intel-2s-smt-ept-1g.json', 'amd-epyc-npt.json',
                     '32intel64-2p8co2t.json', 'intel-2s-smt-ept-1g.json']
    for name in novacompute.EXTRA_SHAPES:
        assert novacompute.check_extra_facts(_facts(name)) is None, name


def test_shipped_shapes_are_the_fixture_captures_as_inspected():
    """files/hosts/*.json are `kvmtune host inspect` of the fixture trees
    their "source" names (regenerate them when the facts change)."""
    import json

    from kvmtune import facts as facts_mod
    from tests import paths

    for name in novacompute.EXTRA_SHAPES:
        shipped = _facts(name)
        tree = os.path.join(paths.REPO, shipped['source'])
        gathered = json.loads(json.dumps(facts_mod.gather(tree)))
        assert gathered['cpu'] == shipped['cpu'], name
        assert gathered['numa'] == shipped['numa'], name


@pytest.mark.parametrize('name, shared, dedicated', [
    ('intel-2s-smt-ept-1g.json', '0,40', '1-39,41-79'),
    ('amd-epyc-npt.json', '0,64', '1-63,65-127'),
    ('32intel64-2p8co2t.json', '0,16', '1-15,17-31'),
])
def test_extra_cpu_sets_share_cpu0_and_its_siblings(name, shared,
                                                    dedicated):
    assert novacompute.extra_cpu_sets(_facts(name)) == (shared, dedicated)


def test_extra_cpu_sets_use_only_online_cpus_of_numa_nodes():
    facts = {'cpu': {'online': [2, 3, 4, 5, 6],
                     'thread_siblings': [[2, 5], [3, 6]]},
             'numa': {'nodes': [{'id': 0, 'cpus': [0, 1, 2, 3],
                                 'memory_mb': 1024},
                                {'id': 1, 'cpus': [5, 6, 7],
                                 'memory_mb': 1024}]}}
    # 4 is online but in no node; 0, 1, 7 are in a node but offline
    assert novacompute.extra_cpu_sets(facts) == ('2,5', '3,6')


@pytest.mark.parametrize('facts, problem', [
    ([], 'not a JSON object'),
    ({'cpu': {}}, 'no numa.nodes'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [0, 1]}]}},
     'a NUMA node without id, cpus or memory_mb'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [0, 1], 'memory_mb': 512}]},
      'cpu': {'thread_siblings': [[0, 1]]}},
     'no CPU sets: only CPU 0-1: nothing left to dedicate'),
    ({'numa': {'nodes': [{'id': 0, 'cpus': [3], 'memory_mb': 512}]},
      'cpu': {'online': [0, 1]}},
     'no CPU sets: no online CPU in a NUMA node'),
])
def test_unusable_facts_are_named(facts, problem):
    assert novacompute.check_extra_facts(facts) == problem


def test_extra_compute_file_has_its_own_host_state_and_cpu_sets(tmp_path):
    lay = config.Layout(str(tmp_path), '/srv/venv')
    text = config.render(novacompute.extra_compute(lay, 3, '0,64',
                                                   '1-63,65-127'))
    conf = _oslo_sections(text, tmp_path)
    state = str(tmp_path / 'data' / 'nova-compute-3')
    assert conf['DEFAULT']['host'] == ['kvmtune-compute-3']
    assert conf['DEFAULT']['state_path'] == [state]
    assert conf['DEFAULT']['compute_driver'] == [config.FAKE_DRIVER]
    assert conf['compute']['cpu_shared_set'] == ['0,64']
    assert conf['compute']['cpu_dedicated_set'] == ['1-63,65-127']
    assert conf['oslo_concurrency']['lock_path'] == [state + '/lock']
    # the first compute's settings otherwise (ratios, the DEBUG report
    # restart-compute waits for), nothing of libvirt's
    first = _oslo_sections(config.render(config.compute(lay, 'fake', None)),
                           tmp_path)
    for key in ('cpu_allocation_ratio', 'ram_allocation_ratio',
                'reserved_host_memory_mb', 'debug'):
        assert conf['DEFAULT'][key] == first['DEFAULT'][key]
    assert 'libvirt' not in conf and 'nova_sys_admin' not in conf


def test_each_extra_compute_has_its_own_paths(tmp_path):
    lay = config.Layout(str(tmp_path))
    paths_2 = (lay.extra_compute_conf(2), lay.extra_compute_facts(2),
               lay.extra_state_path(2), novacompute.extra_host(2),
               novacompute.extra_service(2))
    paths_3 = (lay.extra_compute_conf(3), lay.extra_compute_facts(3),
               lay.extra_state_path(3), novacompute.extra_host(3),
               novacompute.extra_service(3))
    assert not set(paths_2) & set(paths_3)
    assert lay.compute_conf not in paths_2 + paths_3
    assert lay.extra_compute_conf(2) == \
        str(tmp_path / 'etc' / 'nova' / 'nova-compute-2.conf')
    assert novacompute.extra_service(2) == 'nova-compute-2'


def test_extra_computes_get_the_shipped_shapes_in_order():
    extras = novacompute.extra_facts(3, None)
    assert [(i, os.path.basename(p)) for i, p, _ in extras] == [
        (2, 'intel-2s-smt-ept-1g.json'), (3, 'amd-epyc-npt.json')]
    assert novacompute.extra_facts(1, None) == []


def test_given_compute_facts_come_first(tmp_path):
    import shutil

    from kvmtune.testcloud import services

    mine = tmp_path / 'mine.json'
    shutil.copy(os.path.join(services.FILES, 'hosts',
                             '32intel64-2p8co2t.json'), mine)
    extras = novacompute.extra_facts(3, [str(mine)])
    assert [(i, p) for i, p, _ in extras] == [
        (2, str(mine)),
        (3, novacompute.default_extra_facts(3, services.FILES))]


def test_prepared_extra_computes_are_in_the_state(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    entries = novacompute.prepare_extra_computes(
        lay, novacompute.extra_facts(3, None))
    assert [e['host'] for e in entries] == ['kvmtune-compute-2',
                                            'kvmtune-compute-3']
    second = entries[0]
    assert second['service'] == 'nova-compute-2'
    assert second['conf'] == lay.extra_compute_conf(2)
    assert second['cpu_shared_set'] == '0,40'
    assert second['cpu_dedicated_set'] == '1-39,41-79'
    assert os.stat(second['conf']).st_mode & 0o777 == 0o600
    assert os.path.isdir(os.path.join(second['state_path'], 'lock'))
    import json
    with open(second['facts']) as f:
        assert len(json.load(f)['numa']['nodes']) == 2
    assert lay.compute_conf not in (e['conf'] for e in entries)


def _state_with_extra(lay):
    return {'mode': 'libvirt', 'compute_host': 'vm', 'provider': 'p1',
            'facts': None,
            'services': {'nova-compute': 10, 'nova-compute-2': 11},
            'computes': [{'index': 2, 'host': 'kvmtune-compute-2',
                          'driver': 'fake', 'service': 'nova-compute-2',
                          'conf': lay.extra_compute_conf(2),
                          'facts': lay.extra_compute_facts(2),
                          'provider': 'p2'}]}


def test_restart_compute_finds_the_compute_by_host_name(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    state = _state_with_extra(lay)
    assert novacompute._find_compute(lay, state, None)[
        'service'] == 'nova-compute'
    assert novacompute._find_compute(lay, state, 'vm')['provider'] == 'p1'
    assert novacompute._find_compute(lay, state, 'kvmtune-compute-2')[
        'service'] == 'nova-compute-2'
    with pytest.raises(InputError,
                       match="--host: no compute host 'kvmtune-compute-9' in "
                             "this cloud") as exc:
        novacompute._find_compute(lay, state, 'kvmtune-compute-9')
    assert exc.value.fix == 'one of: vm, kvmtune-compute-2'


def test_a_machine_named_like_an_extra_compute_is_refused():
    novacompute.check_host_name('vm', [2, 3])
    with pytest.raises(InputError) as exc:
        novacompute.check_host_name('kvmtune-compute-3', [2, 3])
    assert 'kvmtune-compute-3' in exc.value.line()


def test_restart_reads_a_changed_compute_facts_file_again(tmp_path):
    """A fleet host's simulated reboot rewrites the facts file it gave to
    cloud up; restart-compute copies it again, and only then."""
    import json

    from kvmtune.testcloud import services

    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    source = tmp_path / 'host.json'
    shipped = novacompute.default_extra_facts(2, services.FILES)
    facts = json.loads(open(shipped).read())
    source.write_text(json.dumps(facts))
    entry, = novacompute.prepare_extra_computes(
        lay, novacompute.extra_facts(2, [str(source)]))
    assert novacompute.reload_facts(entry) is False     # unchanged
    facts['numa']['nodes'][0]['hugepages'][0]['total'] = 4
    source.write_text(json.dumps(facts))
    assert novacompute.reload_facts(entry) is True
    with open(entry['facts']) as f:
        assert json.load(f)['numa']['nodes'][0]['hugepages'][0][
            'total'] == 4
    before = open(entry['facts']).read()
    facts['numa']['nodes'] = []
    source.write_text(json.dumps(facts))
    with pytest.raises(InputError, match='no NUMA node'):
        novacompute.reload_facts(entry)
    assert open(entry['facts']).read() == before
    # the first compute's facts are cloud up --facts', never reloaded
    assert novacompute.reload_facts(dict(entry, index=1)) is False
