"""Pure logic of bench local: the accelerator choice and the aggregate."""

import pytest

from kvmtune.bench import local
from kvmtune.bench import qemu
from kvmtune.errors import KvmtuneError

PVM = {'kvm_usable': True, 'mechanism': 'pvm', 'nested_mechanism': 'pvm'}


def test_auto_picks_tcg_when_kvm_is_pvm_backed():
    accel, why = qemu.choose_accel('auto', PVM)
    assert accel == 'tcg' and 'pvm' in why
    assert qemu.accel_label(accel) == 'emulated (TCG)'


@pytest.mark.parametrize('mechanism', ['vmx', 'svm'])
def test_auto_picks_kvm_with_hardware_virtualization(mechanism):
    virt = {'kvm_usable': True, 'mechanism': mechanism}
    assert qemu.choose_accel('auto', virt)[0] == 'kvm'


def test_auto_without_usable_kvm():
    assert qemu.choose_accel('auto', {'kvm_usable': False,
                                      'mechanism': None})[0] == 'tcg'


def test_kvm_asked_for_but_unusable_is_an_error():
    with pytest.raises(KvmtuneError, match='not usable'):
        qemu.choose_accel('kvm', {'kvm_usable': False, 'mechanism': None})


def _row(status, iops=None, lat=None):
    result = None
    if status == 'ok':
        result = {'iops': iops, 'bw_bytes_s': iops * 4096, 'gbit_s': None,
                  'tps': None, 'cpu_pct': 10.0,
                  'lat_ns': {'mean': lat, 'p99': 2 * lat}}
    return {'status': status, 'result': result}


def test_aggregate_leaves_failed_guests_out():
    rows = [_row('ok', 100.0, 10.0), _row('ok', 300.0, 30.0),
            _row('late'), _row('no-result')]
    total = local.aggregate(rows)
    assert total['vms_ok'] == 2 and total['vms_failed'] == 2
    assert total['iops'] == 400.0
    assert total['lat_mean_ns'] == 20.0 and total['lat_p99_ns'] == 40.0
    assert total['gbit_s'] is None


def test_start_delay_grows_with_guests():
    assert local.start_delay('tcg', 4) > local.start_delay('tcg', 1) > \
        local.start_delay('kvm', 1)


def test_network_guests_pair_up_server_then_client():
    from kvmtune import workloads
    plan = local._plan(workloads.get('iperf3-tcp-stream'), 4)
    assert plan == [('server', '10.233.0.1/24', None),
                    ('client', '10.233.0.2/24', '10.233.0.1'),
                    ('server', '10.233.0.3/24', None),
                    ('client', '10.233.0.4/24', '10.233.0.3')]
    with pytest.raises(KvmtuneError, match='even number'):
        local._plan(workloads.get('sockperf-tcp-rr'), 3)
    assert local._plan(workloads.get('fio-randread-4k'), 3) == \
        [('client', None, None)] * 3


def test_servers_are_neither_results_nor_failures():
    rows = [{'status': 'server', 'result': None}, _row('ok', 10.0, 1.0)]
    total = local.aggregate(rows)
    assert total['vms_ok'] == 1 and total['vms_failed'] == 0
