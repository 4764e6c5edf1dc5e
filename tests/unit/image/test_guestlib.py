"""The guest init's shell functions (kvmtune/image/guestlib.sh), run as the
guest runs them: sourced by busybox sh with only busybox's applets on PATH,
and by the host's sh (dash), which keeps them POSIX.

network_data.json inputs: tests/fixtures/network_data/, built from nova's
get_network_metadata (see the README there).
"""

import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from kvmtune.workloads import parsers
from tests import paths

LIB = os.path.join(paths.REPO, 'kvmtune', 'image', 'guestlib.sh')
DATA = os.path.join(paths.FIXTURES, 'network_data')


@pytest.fixture(scope='module')
def busybox_path(tmp_path_factory):
    busybox = shutil.which('busybox')
    if not busybox:
        pytest.skip('busybox not installed (apt-get install busybox-static)')
    bin_dir = tmp_path_factory.mktemp('busybox-bin')
    subprocess.run([busybox, '--install', '-s', str(bin_dir)], check=True)
    return str(bin_dir)


@pytest.fixture(params=['busybox', 'sh'])
def run(request):
    """run(shell code) -> stdout, with guestlib.sh sourced first."""
    if request.param == 'busybox':
        path = request.getfixturevalue('busybox_path')
        argv = [os.path.join(path, 'sh')]
        env = {'PATH': path}   # busybox's own awk, sed, tr, dd...
    else:
        argv, env = ['sh'], dict(os.environ)

    def run(code):
        proc = subprocess.run(argv + ['-c', f'. {os.path.abspath(LIB)}; ' +
                                      code],
                              capture_output=True, text=True, env=env,
                              timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()
    return run


def fixture(name):
    return os.path.join(DATA, name)


def _flatten(value, path=''):
    """What json_flat prints, computed by Python's json (the oracle)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f'{path}.{key}' if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _flatten(item, f'{path}.{index}' if path else
                                str(index))
    elif value is None:
        yield f'{path}=null'
    elif isinstance(value, bool):
        yield f'{path}={"true" if value else "false"}'
    else:
        yield f'{path}={value}'


@pytest.mark.parametrize('name', sorted(
    os.path.basename(p) for p in glob.glob(os.path.join(DATA, '*.json'))))
def test_json_flat_agrees_with_python(run, name):
    with open(fixture(name)) as f:
        expected = list(_flatten(json.load(f)))
    assert run(f'json_flat < {fixture(name)}').splitlines() == expected


def test_json_flat_reads_any_layout_and_escapes(run, tmp_path):
    doc = {'a': {'b': [1, {'c': 'x y'}, [], {}], 'd': None},
           'e': 'q"uo\\te/', 'f': -1.5e3, 'g': True}
    path = tmp_path / 'doc.json'
    path.write_text(json.dumps(doc, indent=3).replace('/', '\\/'))
    assert run(f'json_flat < {path}').splitlines() == [
        'a.b.0=1', 'a.b.1.c=x y', 'a.d=null',
        'e=q"uo\\te/', 'f=-1500.0', 'g=true']


@pytest.mark.parametrize('name,mac,expected', [
    # Neutron without a DHCP agent: the port's address, written statically
    ('nova-static-ipv4-ovs.json', 'fa:16:3e:12:34:56',
     'static 10.233.1.15/24 1442 10.233.1.1'),
    # the only link is eth0's even when the MAC is not the one we read
    ('nova-static-ipv4-ovs.json', '52:54:00:00:00:99',
     'static 10.233.1.15/24 1442 10.233.1.1'),
    # a subnet with a DHCP server: DHCP, with the link's MTU
    ('nova-ipv4-dhcp-ovs.json', 'fa:16:3e:ab:cd:ef', 'dhcp - 1450 -'),
    # two NICs: the one whose MAC matches (case aside); its IPv6 (slaac)
    # entry is skipped for its ipv4 one
    ('nova-two-nics-ipv6-slaac.json', 'fa:16:3e:00:00:02',
     'static 172.24.4.20/20 9000 172.24.0.1'),
    ('nova-two-nics-ipv6-slaac.json', 'FA:16:3E:00:00:01',
     'static 10.0.0.5/24 1500 -'),
    # two NICs, none ours: nothing to go by
    ('nova-two-nics-ipv6-slaac.json', '52:54:00:00:00:99', 'dhcp - - -'),
    # newlines, another key order, mtu null, no routes
    ('nova-static-ipv4-indented-mtu-null.json', '52:54:00:6b:00:07',
     'static 10.233.0.130/25 - -'),
])
def test_netdata_eth(run, name, mac, expected):
    assert run(f'netdata_eth {fixture(name)} {mac}') == expected


def test_no_network_data_means_dhcp(run, tmp_path):
    assert run(f'netdata_eth {tmp_path}/absent.json 52:54:00:00:00:01') == \
        'dhcp - - -'
    (tmp_path / 'empty.json').write_text('')
    assert run(f'netdata_eth {tmp_path}/empty.json 52:54:00:00:00:01') == \
        'dhcp - - -'


def test_written_by_bench_local_reads_back(run, tmp_path):
    from kvmtune.bench import qemu

    data = qemu.network_data('0a0a0a0a-0000-4000-8000-000000000001',
                             '52:54:00:6b:00:01', '10.233.0.2/24',
                             mtu=1400, gateway='10.233.0.254')
    (tmp_path / 'nd.json').write_text(json.dumps(data))
    assert run(f'netdata_eth {tmp_path}/nd.json 52:54:00:6b:00:01') == \
        'static 10.233.0.2/24 1400 10.233.0.254'


@pytest.mark.parametrize('mask,prefix', [
    ('255.255.255.0', 24), ('255.255.240.0', 20), ('255.255.255.128', 25),
    ('255.255.255.255', 32), ('0.0.0.0', 0), ('255.0.0.0', 8)])
def test_mask_prefix(run, mask, prefix):
    assert run(f'mask_prefix {mask}') == str(prefix)


@pytest.mark.parametrize('clocks,dmesg,signature,accel', [
    # seen in a guest booted here under QEMU TCG (console capture
    # console-tcg-guest-facts.log): no kvm-clock, TCG's CPUID signature
    ('tsc hpet acpi_pm ', '', 'TCGTCGTCGTCG', 'tcg'),
    # KVM: its paravirtual clock, or the kernel's line for its signature
    ('kvm-clock tsc hpet acpi_pm ', '', 'KVMKVMKVM', 'kvm'),
    ('tsc hpet acpi_pm ', '[    0.000000] Hypervisor detected: KVM', '',
     'kvm'),
    # KVM with its signature hidden (hide_hypervisor_id) or another
    # hypervisor: not claimed either way
    ('tsc hpet acpi_pm ', '', '', 'unknown'),
    ('tsc hpet acpi_pm ', '[    0.000000] Hypervisor detected: VMware',
     'VMwareVMware', 'unknown'),
])
def test_guest_accel(run, clocks, dmesg, signature, accel):
    assert run(f'guest_accel "{clocks}" "{dmesg}" "{signature}"') == accel


OUTPUTS = os.path.join(paths.FIXTURES, 'outputs')


def test_guest_accel_on_what_a_tcg_guest_showed(run):
    """Inputs taken from guests booted here under QEMU TCG: the clock
    sources it offered (a job that cat'ed them), its kernel log (a job that
    ran dmesg) and the CPUID signature it printed."""
    from kvmtune.workloads import console

    facts = '22222222-3333-4444-5555-666666666666'
    with open(os.path.join(OUTPUTS, 'console-tcg-guest-facts.log')) as f:
        text = f.read()
    available, current = console.extract(text, facts)[0]['raw'].split(
        '\n')[:2]
    assert 'kvm-clock' not in available
    with open(os.path.join(OUTPUTS, 'console-tcg-guest-dmesg.log'),
              errors='replace') as f:
        dmesg = f.read()
    assert 'Hypervisor detected' not in dmesg
    signature = console.guest(text, facts)['hypervisor']
    assert run(f'guest_accel "{available}" "" "{signature}"') == 'tcg'
    assert console.guest(text, facts) == {
        'accel': 'tcg', 'clocksource': current, 'hypervisor': signature}


# Nova's console-output API deletes these bytes from every console log
# (nova/api/openstack/compute/console_output.py in nova 34).
NOVA_STRIPS = re.compile('[\x00-\x08\x0B-\x1F]')


@pytest.mark.parametrize('name', ['sockperf-3.7-tcp-pingpong.txt',
                                  'fio-3.33-randread-4k.json'])
def test_console_safe_output_passes_nova_unchanged_and_parses(run, name):
    path = os.path.join(paths.FIXTURES, 'outputs', name)
    with open(path) as f:
        raw = f.read()
    safe = run(f'console_safe < {path}')
    assert NOVA_STRIPS.sub('', safe) == safe
    assert '\x1b' not in safe and '[2;35m' not in safe
    tool = name.split('-')[0]
    assert (parsers.parse(tool, safe + '\n', workload='w') ==
            parsers.parse(tool, raw, workload='w'))


# The start signal. /proc/interrupts and /proc/uptime as a
# 2-vCPU TCG guest of the benchmark image printed them after its NMI
# (QEMU monitor `nmi`; its job ran `cat /proc/interrupts /proc/uptime`).
GUEST_PROC = os.path.join(paths.FIXTURES, 'outputs',
                          'proc-interrupts-uptime-tcg-after-nmi.txt')


def _guest_proc(tmp_path):
    with open(GUEST_PROC) as f:
        text = f.read()
    interrupts, uptime = text.rstrip('\n').rsplit('\n', 1)
    (tmp_path / 'interrupts').write_text(interrupts + '\n')
    (tmp_path / 'uptime').write_text(uptime + '\n')
    return interrupts, uptime


def test_nmi_count_sums_the_nmi_row_over_cpus(run, tmp_path):
    interrupts, _ = _guest_proc(tmp_path)
    row, = [line.split() for line in interrupts.splitlines()
            if line.split()[:1] == ['NMI:']]
    cpus = len(interrupts.splitlines()[0].split())
    expected = sum(int(n) for n in row[1:1 + cpus])
    assert expected >= 1          # the guest took its NMI
    assert run(f'nmi_count {tmp_path}/interrupts') == str(expected)


def test_nmi_count_of_a_kernel_without_the_row_is_zero(run, tmp_path):
    (tmp_path / 'interrupts').write_text('           CPU0\n  0:  5  IO-APIC\n')
    assert run(f'nmi_count {tmp_path}/interrupts') == '0'


def test_uptime_s_is_the_first_field(run, tmp_path):
    _, uptime = _guest_proc(tmp_path)
    assert run(f'uptime_s {tmp_path}/uptime') == uptime.split()[0]
    assert float(uptime.split()[0]) > 0
