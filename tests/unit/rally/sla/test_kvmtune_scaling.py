"""kvmtune_scaling SLA over iterations as the runner hands them over."""

import pytest

from rally import plugins
from rally.task import sla

from kvmtune.results import row as rows

from tests.unit.results.test_rally import baseline_file
from tests.unit.results.test_rally import iteration


@pytest.fixture(scope='module', autouse=True)
def rally_plugins():
    plugins.load()


def checker(**config):
    return sla.SLAChecker({'sla': {'kvmtune_scaling': config}})


def run(config, iterations):
    check = checker(**config)
    for it in iterations:
        check.add_iteration(it)
    result, = check.results()
    return result


def test_passes_when_per_vm_throughput_holds():
    result = run({'min_share': 0.5},
                 [iteration([1000.0]), iteration([800.0, 700.0])])
    assert result['success'], result['detail']
    assert 'of 1 VM at every VM count - Passed' in result['detail']


def test_fails_below_the_share_of_one_vm():
    result = run({'min_share': 0.8},
                 [iteration([1000.0]), iteration([850.0, 810.0]),
                  iteration([500.0, 500.0, 500.0])])
    assert not result['success']
    assert result['detail'] == ('per-VM IOPS at 3 VMs is 50% of 1 VM '
                                '(< 80%) - Failed')


def test_order_of_iterations_does_not_matter():
    result = run({'min_share': 0.8},
                 [iteration([500.0, 500.0]), iteration([1000.0])])
    assert not result['success'] and 'at 2 VMs is 50%' in result['detail']


def test_a_guest_without_valid_result_fails_naming_it():
    result = run({'min_share': 0.1}, [
        iteration([1000.0]),
        iteration([900.0], bad=[(rows.ERROR, 'fio: no such job xyz')])])
    assert not result['success']
    assert ('no valid result from bad-0 (2 VMs): error: fio: no such job '
            'xyz') in result['detail']


def test_against_bare_metal(tmp_path):
    # 2000 IOPS on bare metal: 1 VM at 1000 is 50%, 2 VMs at 1100 is 55%
    result = run({'min_share': 0.5, 'baseline': baseline_file(tmp_path)},
                 [iteration([1000.0]), iteration([1200.0, 1000.0])])
    assert result['success'], result['detail']
    assert result['detail'] == ('per-VM throughput >= 50% of bare metal at '
                                'every VM count - Passed')
    result = run({'min_share': 0.6, 'baseline': baseline_file(tmp_path)},
                 [iteration([1000.0])])
    assert not result['success']
    assert 'at 1 VMs is 50% of bare metal (< 60%)' in result['detail']


def test_missing_baseline_figure_is_a_clear_failure(tmp_path):
    path = baseline_file(tmp_path, workload='other')
    result = run({'min_share': 0.5, 'baseline': path},
                 [iteration([1000.0])])
    assert not result['success']
    assert f'no bare-metal reference: {path} (bare host): ' \
        'record.workload.name: measures workload other' in result['detail']
    assert 'kvmtune baseline --workload fio-randread-4k' in result['detail']


def test_merge_of_parallel_checkers():
    a, b = checker(min_share=0.9), checker(min_share=0.9)
    a.add_iteration(iteration([1000.0]))
    b.add_iteration(iteration([500.0, 500.0]))
    assert not a.merge(b)
    assert 'at 2 VMs is 50%' in a.results()[0]['detail']


@pytest.mark.parametrize('config', [{}, {'min_share': 0},
                                    {'min_share': 1.5},
                                    {'min_share': 0.5, 'other': 1}])
def test_schema_rejects(config):
    assert sla.SLA.validate('kvmtune_scaling', None, None, config)


def test_no_guest_results_at_all_is_no_pass():
    failed = dict(iteration([1000.0]), output={'additive': [],
                                               'complete': []})
    result = run({'min_share': 0.5}, [failed])
    assert not result['success']
    assert result['detail'].startswith('no iteration left guest results')
