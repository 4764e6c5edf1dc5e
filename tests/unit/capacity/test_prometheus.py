"""kvmtune.capacity.prometheus: capacity's counts as a node_exporter
textfile under os-capacity's gauge names, read back with the Prometheus
client's own parser (what the textfile collector accepts)."""

import os
import stat

from prometheus_client.parser import text_string_to_metric_families

from kvmtune.capacity import Capacity
from kvmtune.capacity import Fit
from kvmtune.capacity import prometheus

RESULT = Capacity(fits=[
    Fit('compute-1', 'm1.pinned', 3, 'PCPU'),
    Fit('compute-2', 'm1.pinned', None, None, 'HTTP 503'),
    Fit('compute-1', 'm1.small', 16, 'VCPU'),
    Fit('compute-2', 'm1.small', 0, 'trait:CUSTOM_KVMTUNE_EPT'),
])


def samples(text):
    return {family.name: [(s.labels, s.value) for s in family.samples]
            for family in text_string_to_metric_families(text)}


def test_the_gauges_and_their_samples():
    found = samples(prometheus.render(RESULT, now=1764150000.25))
    # a count not known is left out of the per-host gauge
    assert found[prometheus.FREE] == [
        ({'hostname': 'compute-1', 'flavor_name': 'm1.pinned'}, 3.0),
        ({'hostname': 'compute-1', 'flavor_name': 'm1.small'}, 16.0),
        ({'hostname': 'compute-2', 'flavor_name': 'm1.small'}, 0.0)]
    # the totals count a partial host as 0
    assert found[prometheus.CLOUD_FREE] == [
        ({'flavor_name': 'm1.pinned'}, 3.0),
        ({'flavor_name': 'm1.small'}, 16.0)]
    assert found[prometheus.LIMITED_BY] == [
        ({'hostname': 'compute-1', 'flavor_name': 'm1.pinned',
          'limit': 'PCPU'}, 1.0),
        ({'hostname': 'compute-1', 'flavor_name': 'm1.small',
          'limit': 'VCPU'}, 1.0),
        ({'hostname': 'compute-2', 'flavor_name': 'm1.small',
          'limit': 'trait:CUSTOM_KVMTUNE_EPT'}, 1.0)]
    assert [value for _, value in found[prometheus.UNKNOWN]] == [
        0.0, 1.0, 0.0, 0.0]
    # cloud-wide: no hostname; a partial result is no success
    assert found['kvmtune_last_run_timestamp_seconds'] == [
        ({'command': 'capacity'}, 1764150000.25)]
    assert found['kvmtune_last_success_timestamp_seconds'] == [
        ({'command': 'capacity'}, 0.0)]


def test_the_old_names_stay_for_one_release_with_the_same_values():
    found = samples(prometheus.render(RESULT, now=1764150000.25))
    assert prometheus.BY_HOST == \
        'openstack_free_capacity_hypervisor_by_flavor'
    assert prometheus.TOTAL == 'openstack_free_capacity_by_flavor_total'
    for old, new in ((prometheus.BY_HOST, prometheus.FREE),
                     (prometheus.LIMIT, prometheus.LIMITED_BY),
                     (prometheus.PARTIAL, prometheus.UNKNOWN)):
        assert found[old] == [
            ({'hypervisor' if k == 'hostname' else k: v
              for k, v in labels.items()}, value)
            for labels, value in found[new]]
    assert found[prometheus.TOTAL] == found[prometheus.CLOUD_FREE]
    assert found[prometheus.LAST_RUN] == [({}, 1764150000.25)]


def test_no_sample_timestamps_and_no_total_on_a_new_gauge():
    text = prometheus.render(RESULT, now=1.0)
    families = list(text_string_to_metric_families(text))
    every = [s for family in families for s in family.samples]
    assert len(every) == 2 * (3 + 2 + 3 + 4) + 1 + 2
    # the textfile collector refuses samples with a timestamp
    assert all(s.timestamp is None for s in every)
    assert all(not f.name.endswith('_total') for f in families
               if f.type == 'gauge' and f.name != prometheus.TOTAL)
    assert text.endswith('\n')


def test_a_complete_count_is_a_success():
    whole = Capacity(fits=[Fit('compute-1', 'm1.small', 16, 'VCPU')])
    found = samples(prometheus.render(whole, now=7.0))
    assert found['kvmtune_last_success_timestamp_seconds'] == [
        ({'command': 'capacity'}, 7.0)]


def test_a_label_value_is_escaped():
    odd = Capacity(fits=[Fit('h"1', 'a\\b\nc', 1, 'VCPU')])
    [(labels, value)] = samples(prometheus.render(odd, now=1.0))[
        prometheus.FREE]
    assert labels == {'hostname': 'h"1', 'flavor_name': 'a\\b\nc'}


def test_an_empty_result_still_says_when_it_ran():
    found = samples(prometheus.render(Capacity(fits=[]), now=5.0))
    assert found[prometheus.FREE] == []
    assert found['kvmtune_last_run_timestamp_seconds'] == [
        ({'command': 'capacity'}, 5.0)]


def test_write_is_readable_by_the_collector(tmp_path):
    path = tmp_path / 'capacity.prom'
    prometheus.write(str(path), RESULT, now=2.0)
    assert path.read_text() == prometheus.render(RESULT, now=2.0)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert os.listdir(tmp_path) == ['capacity.prom']


def test_hostname_is_novas_service_host_not_the_hypervisor_name():
    """openstack-exporter's hostname is the service host; a hypervisor
    named by its FQDN keeps that name only in the old series."""
    fqdn = Capacity(fits=[Fit('compute-1.example.org', 'm1.small', 4,
                              'VCPU', service_host='compute-1')])
    found = samples(prometheus.render(fqdn, now=1.0))
    assert [labels['hostname'] for labels, _ in found[prometheus.FREE]] == \
        ['compute-1']
    assert [labels['hostname'] for labels, _ in
            found[prometheus.LIMITED_BY] + found[prometheus.UNKNOWN]] == \
        ['compute-1', 'compute-1']
    assert [labels['hypervisor'] for labels, _ in
            found[prometheus.BY_HOST]] == ['compute-1.example.org']
