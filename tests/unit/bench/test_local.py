"""Pure logic of bench local: the accelerator choice, the aggregate, when
a client is done, the network_data.json it writes."""

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
    # latency is never summed: mean of means, the worst guest's p99
    assert total['lat_mean_ns'] == 20.0 and total['lat_p99_ns'] == 60.0
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


class _Running:
    """A guest whose QEMU still runs, with this console text."""
    instance_id = '0a0a0a0a-0000-4000-8000-000000000001'

    def __init__(self, text):
        self.text = text

    def poll(self):
        return None

    def console_text(self):
        return self.text


@pytest.mark.parametrize('text,done', [
    ('', False),
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 serving\r\n',
     False),
    # a held guest stays up after its verdict: waiting for it to exit
    # would hang until the deadline
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 error refusing '
     '/dev/vda: it holds this image\r\n', True),
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 ok\r\n', True),
])
def test_a_client_is_done_at_its_verdict_or_exit(text, done):
    assert local._done(_Running(text)) is done


def test_network_data_for_a_guest_is_novas_static_shape():
    data = qemu.network_data('0a0a0a0a-0000-4000-8000-000000000001',
                             '52:54:00:6b:00:01', '10.233.0.2/24')
    (link,) = data['links']
    (net,) = data['networks']
    assert set(link) == {'id', 'vif_id', 'type', 'mtu',
                         'ethernet_mac_address'}
    assert net['type'] == 'ipv4' and net['link'] == link['id']
    assert (net['ip_address'], net['netmask']) == ('10.233.0.2',
                                                   '255.255.255.0')
    assert net['routes'] == [] and link['mtu'] is None


def test_pinned_guests_get_cpus_of_their_own():
    assert local.pinned_cpus(0, 1, [0, 1]) == [0]
    assert local.pinned_cpus(1, 1, [0, 1]) == [1]
    assert local.pinned_cpus(0, 2, [2, 3, 4, 5]) == [2, 3]
    assert local.pinned_cpus(1, 2, [2, 3, 4, 5]) == [4, 5]
    assert local.pinned_cpus(2, 1, [0, 1]) is None


def test_cpu_and_memory_guests_run_alone():
    from kvmtune import workloads
    assert local._plan(workloads.get('sysbench-cpu'), 2) == \
        [('client', None, None)] * 2


def test_guest_argv_carries_the_compared_settings(tmp_path):
    guest = qemu.Guest(0, '0a0a0a0a-0000-4000-8000-000000000001',
                       str(tmp_path))
    argv = guest.argv('tcg', 1, 256, '/img', '/d/data.qcow2', 'qcow2',
                      'writethrough', bus='virtio-scsi', iothread=False,
                      hugepages='/dev/hugepages', pin=[1])
    assert argv[:3] == ['taskset', '-c', '1']
    line = ' '.join(argv)
    assert 'cache=writethrough' in line and 'format=qcow2' in line
    assert 'virtio-scsi-pci,id=scsi0,addr=0x5' in line
    assert 'scsi-hd,drive=data' in line and 'iothread' not in line
    assert 'memory-backend=ram0' in line
    assert 'mem-path=/dev/hugepages' in line and 'size=256M' in line
    plain = ' '.join(guest.argv('tcg', 1, 256, '/img', '/d/data.raw', 'raw',
                                'none'))
    assert 'virtio-blk-pci,drive=data,iothread=io0' in plain
    assert 'taskset' not in plain and 'mem-path' not in plain
