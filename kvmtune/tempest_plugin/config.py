"""The [kvmtune] group of tempest.conf.

DevStack's kvmtune plugin writes these at its test-config phase; by hand,
take the names from ``kvmtune flavor apply`` and ``kvmtune host tag``.
"""

from typing import Any

from oslo_config import cfg

kvmtune_group = cfg.OptGroup(
    name='kvmtune', title='kvmtune tuned-host tests',
    help='What kvmtune set up on the cloud under test.')

KvmtuneGroup = [
    cfg.DictOpt('flavors', default={},
                help='Tuned flavors to check, as profile:flavor pairs, e.g. '
                     '"pinned-hugepages-ept:m1.small.pinned-hugepages-ept" '
                     '(kvmtune flavor apply names them <base>.<profile>). '
                     'Each must carry its profile\'s extra specs as '
                     '"kvmtune plan" computes them for the compute host. '
                     'Empty: the flavor tests skip. Related options: '
                     'facts_file.'),
    cfg.StrOpt('facts_file',
               help='Facts JSON of the compute host ("kvmtune host inspect '
                    '--format json" run there); plans are built for it. '
                    'Unset: the host Tempest runs on (right for a '
                    'single-host cloud).'),
    cfg.BoolOpt('traits_tagged', default=False,
                help='Whether "kvmtune host tag" has set CUSTOM_KVMTUNE_* '
                     'traits on the compute nodes. True: every trait in '
                     'host_traits must be on a compute node. Related '
                     'options: host_traits.'),
    cfg.ListOpt('host_traits', default=[],
                help='The CUSTOM_KVMTUNE_* traits the compute nodes carry, '
                     'e.g. CUSTOM_KVMTUNE_NESTED. Empty with traits_tagged: '
                     'the host has none of the capabilities kvmtune tags.'),
    cfg.StrOpt('benchmark_image',
               help='Glance name of kvmtune\'s benchmark guest image '
                    '("kvmtune image build", then upload it). Unset: the '
                    'benchmark guest test skips.'),
    cfg.StrOpt('benchmark_workload', default='fio-randread-4k',
               help='Workload the benchmark guest runs (see '
                    'kvmtune/data/workloads).'),
    cfg.IntOpt('benchmark_runtime', default=5, min=1,
               help='Seconds the workload runs inside the guest.'),
    cfg.IntOpt('benchmark_timeout', default=300, min=30,
               help='Seconds to wait, once the server is ACTIVE, for the '
                    'guest\'s status line on the console (under QEMU TCG '
                    'a guest needs ~20 s to boot and run).'),
]


def list_opts() -> list[tuple[Any, list[Any]]]:
    return [(kvmtune_group, KvmtuneGroup)]
