"""A rollout state file with the canary gate's measurements, for the
tests of kvmtune.report.canary_page, kvmtune rollout-report and its
page in Chromium: seeded samples of four hosts against their controls,
judged by kvmtune's own judge (kvmtune.rollout.measure_record)."""

import json
import math
import random

from kvmtune.rollout import measure_record as mr
from kvmtune.tuning import measure

MEASURE = measure.parse({'workloads': ['fio-randread', 'iperf3'],
                         'band': {'iops': '>= -5%', 'gbit_s': '>= +2%'},
                         'samples': 10, 'max_samples': 20}, 'canary.yaml')

# host: (control, fio change, iperf change, noise)
HOSTS = {'compute-1': ('compute-9', 1.12, 1.06, 0.03),   # pass, pass
         'compute-2': ('compute-9', 0.82, 1.05, 0.03),   # fail
         'compute-3': ('compute-8', 0.97, 1.03, 0.12),   # inconclusive
         'compute-4': ('compute-8', 1.10, 1.10, 0.02)}   # pass
DRIFT = 0.9   # both hosts 10 % slower after: a noisy neighbour


def _values(rng, median, n, sigma):
    return [(f'vm{i % 5}', i // 5, median * math.exp(rng.gauss(0, sigma)))
            for i in range(n)]


def measurements(hosts=HOSTS, n=10, accept=None):
    data = mr.empty()
    for host, (ctl, fio, iperf, sigma) in hosts.items():
        rng = random.Random(host)
        for workload, metric, base, change in (
                ('fio-randread', 'iops', 52000.0, fio),
                ('iperf3', 'gbit_s', 9.4, iperf)):
            record = mr.begin(data, host, ctl, workload, metric, MEASURE,
                              provider='kvmtune bench',
                              plan_hash=mr.digest({'plan': host}),
                              facts_hash=mr.digest({'facts': host}))
            mr.add(record, 'canary', 'before', _values(rng, base, n, sigma))
            mr.add(record, 'canary', 'after',
                   _values(rng, base * change * DRIFT, n, sigma))
            mr.add(record, 'control', 'before',
                   _values(rng, base * 0.98, n, sigma))
            mr.add(record, 'control', 'after',
                   _values(rng, base * 0.98 * DRIFT, n, sigma))
            mr.judge(record, resamples=1000)
    for host, reason in (accept or {}).items():
        mr.accept(data, host, reason, now='2026-12-01T22:00:00Z')
    return data


def write(path, **kw):
    """The state file (as kvmtune.rollout.state writes one, with its
    measurements section) at ``path``."""
    doc = {'run_id': '20261201T220000Z-48c0de', 'profile': 'canary',
           'hosts': {}, 'plans': {}}
    mr.store(doc, measurements(**kw))
    with open(path, 'w') as f:
        json.dump(doc, f, indent=1)
    return str(path)
