"""The guests layer on domain XML that Nova 34's libvirt driver wrote in
the test cloud (tests/fixtures/libvirt/README.md)."""

import os

import pytest

from kvmtune.tuning import extra_specs
from kvmtune.tuning import plan as plans
from kvmtune import verify
from kvmtune.verify import domain
from kvmtune.verify import guests
from tests import paths

LIBVIRT = os.path.join(paths.FIXTURES, 'libvirt')
PROFILE = 'kvmtune-ft-verify'


def fixture(name):
    with open(os.path.join(LIBVIRT, name)) as f:
        return f.read()


PINNED = fixture('nova-pinned-2m.xml')
PLAIN = fixture('nova-plain-port.xml')


def plan(nova_conf, extra_specs=None):
    """The plan of the test cloud's host as nova-conf apply wrote it."""
    return plans.Plan(profile=PROFILE, facts_source='test cloud',
                      nova_conf=nova_conf, extra_specs=extra_specs or {})


TUNED = plan({'compute': {'cpu_dedicated_set': '1',
                          'cpu_shared_set': '0'}})
# the test cloud's host: one node, CPUs 0 and 1
FACTS = {'numa': {'nodes': [{'id': 0, 'cpus': [0, 1]}]}}


def by_name(found):
    return {check.name: check for check in found}


def test_the_pinned_guest_nova_started_passes_every_check():
    found = by_name(guests.check_guests([domain.parse_domain(PINNED)],
                                        [TUNED], facts=FACTS))
    assert set(found) == {
        'instance-00000007 vcpu pins', 'instance-00000007 emulator threads',
        'instance-00000007 pages', 'instance-00000007 numa memory',
        'pinned CPUs shared'}
    assert {c.status for c in found.values()} == {verify.PASS}
    assert found['instance-00000007 vcpu pins'].live == '0->1'


def test_a_pin_outside_the_dedicated_set_is_drift_with_the_reboot():
    # `virsh vcpupin instance-00000007 0 0`, as the functional test does
    moved = PINNED.replace("<vcpupin vcpu='0' cpuset='1'/>",
                           "<vcpupin vcpu='0' cpuset='0'/>")
    found = by_name(guests.check_guests([domain.parse_domain(moved)],
                                        [TUNED], facts=FACTS))
    pins = found['instance-00000007 vcpu pins']
    assert pins.status == verify.DRIFT
    assert pins.live == '0->0 (outside: 0)'
    assert 'openstack server reboot --hard kvmtune-ft-e8e0920c' in pins.fix
    # a pin to a range is floating, not pinned, even inside the set
    floating = PINNED.replace("cpuset='1'/>", "cpuset='0-1'/>", 1)
    found = by_name(guests.check_guests([domain.parse_domain(floating)],
                                        [TUNED], facts=FACTS))
    assert found['instance-00000007 vcpu pins'].status == verify.DRIFT


def test_two_dedicated_guests_on_one_cpu_is_drift():
    other = PINNED.replace('instance-00000007', 'instance-00000008')
    found = by_name(guests.check_guests(
        [domain.parse_domain(PINNED), domain.parse_domain(other)],
        [TUNED], facts=FACTS))
    shared = found['pinned CPUs shared']
    assert shared.status == verify.DRIFT
    assert shared.live == 'CPU 1: instance-00000007, instance-00000008'


@pytest.mark.parametrize('policy, emulatorpin, status', [
    ('share', '0', verify.PASS),        # cpu_shared_set 0: Nova's choice
    ('share', '1', verify.DRIFT),       # not in cpu_shared_set
    ('isolate', '1', verify.DRIFT),     # on the vCPU's own CPU
    ('isolate', '2', verify.PASS),
])
def test_emulator_threads_where_the_policy_puts_them(policy, emulatorpin,
                                                     status):
    xml = PINNED.replace("<emulatorpin cpuset='0'/>",
                         f"<emulatorpin cpuset='{emulatorpin}'/>")
    xml = xml.replace('threads_policy">share<',
                      f'threads_policy">{policy}<')
    wide = plan({'compute': {'cpu_dedicated_set': '1-3',
                             'cpu_shared_set': '0'}})
    found = by_name(guests.check_guests([domain.parse_domain(xml)], [wide]))
    check = found['instance-00000007 emulator threads']
    assert check.status == status, check


def test_pages_other_than_the_flavors_are_drift():
    small = PINNED.replace('<hugepages>', '<nohugepages>').replace(
        "<page size='2048' unit='KiB' nodeset='0'/>", '').replace(
        '</hugepages>', '</nohugepages>')
    check = by_name(guests.check_guests([domain.parse_domain(small)],
                                        [TUNED]))['instance-00000007 pages']
    assert check.status == verify.DRIFT
    assert check.live == 'small pages (4 KiB)'
    one_g = PINNED.replace('"hw:mem_page_size">large<',
                           '"hw:mem_page_size">1GB<')
    check = by_name(guests.check_guests([domain.parse_domain(one_g)],
                                        [TUNED]))['instance-00000007 pages']
    assert check.status == verify.DRIFT
    assert check.expected.startswith('1048576 KiB pages')


@pytest.mark.parametrize('spec, kib', [
    ('large', 'large'), ('small', 'small'), ('any', 'any'),
    ('2048', 2048), ('2MB', 2048), ('1GB', 1048576), ('2Mb', 256),
    ('2048KiB', 2048)])
def test_page_sizes_as_nova_reads_them(spec, kib):
    assert extra_specs.page_size_kb(spec) == kib


def test_memory_on_another_node_than_the_vcpus_is_drift():
    two_nodes = {'numa': {'nodes': [{'id': 0, 'cpus': [0]},
                                    {'id': 1, 'cpus': [1]}]}}
    check = by_name(guests.check_guests(
        [domain.parse_domain(PINNED)], [TUNED],
        facts=two_nodes))['instance-00000007 numa memory']
    assert check.status == verify.DRIFT
    assert check.live == 'cell 0: memory 0, vCPUs on 1'
    unknown = by_name(guests.check_guests(
        [domain.parse_domain(PINNED)], [TUNED]))[
        'instance-00000007 numa memory']
    assert unknown.status == verify.UNKNOWN


def test_disk_cache_and_format_as_the_plan_says():
    io = plan({'libvirt': {'disk_cachemodes': 'file=none,block=none',
                           'images_type': 'raw'}})
    found = by_name(guests.check_guests([domain.parse_domain(PLAIN)], [io]))
    assert found['instance-0000000c disk cache'].status == verify.PASS
    fmt = found['instance-0000000c disk format']
    # Nova made this disk as qcow2 (images_type default): raw is drift
    assert fmt.status == verify.DRIFT and fmt.live == 'vda qcow2'
    writeback = plan({'libvirt': {'disk_cachemodes': 'file=writeback'}})
    found = by_name(guests.check_guests([domain.parse_domain(PLAIN)],
                                        [writeback]))
    assert found['instance-0000000c disk cache'].status == verify.DRIFT


def test_an_interface_without_vhost_is_drift_where_vhost_is_planned():
    # Nova under virt_type=qemu writes driver qemu; on KVM it is vhost.
    net = plan({'libvirt': {'rx_queue_size': '1024'}})
    check = by_name(guests.check_guests([domain.parse_domain(PLAIN)],
                                        [net]))['instance-0000000c vhost']
    assert check.status == verify.DRIFT
    assert check.live == 'driver qemu rx_queue_size=default'
    vhost = PLAIN.replace("<driver name='qemu'/>",
                          "<driver name='vhost' rx_queue_size='1024'/>")
    check = by_name(guests.check_guests([domain.parse_domain(vhost)],
                                        [net]))['instance-0000000c vhost']
    assert check.status == verify.PASS


def test_domains_nova_did_not_make_are_counted_not_checked():
    other = ("<domain type='kvm'><name>by-hand</name><vcpu>1</vcpu>"
             "<cputune><vcpupin vcpu='0' cpuset='0'/></cputune></domain>")
    ctx = verify.Context(domains=[('a.xml', PINNED), ('b.xml', other)],
                         facts=FACTS)
    found = guests.checks([TUNED], ctx)
    assert found[0].live == '1 Nova domains, 1 others'
    assert not any('by-hand' in c.name for c in found)


@pytest.mark.parametrize('text, words', [
    ('<domain><name>x</name', 'not XML'),
    ('<network/>', 'not <domain>'),
])
def test_bad_xml_is_unknown_with_the_reason(text, words):
    found = guests.checks([TUNED], verify.Context(domains=[('x.xml', text)]))
    bad = [c for c in found if c.status == verify.UNKNOWN]
    assert len(bad) == 1 and words in bad[0].reason


@pytest.mark.parametrize('old, new, words', [
    ("<vcpupin vcpu='0'", '<vcpupin', '<vcpupin vcpu=None>: not an integer'),
    ("<memnode cellid='0'", "<memnode cellid='zero'",
     "<memnode cellid='zero'>: not an integer"),
])
def test_a_nova_domain_with_a_bad_attribute_is_unknown(old, new, words):
    # Nova's real XML, one attribute broken: one UNKNOWN row, no traceback.
    assert old in PINNED
    text = PINNED.replace(old, new, 1)
    found = guests.checks([TUNED], verify.Context(domains=[('x.xml', text)]))
    bad = [c for c in found if c.status == verify.UNKNOWN]
    assert len(bad) == 1 and words in bad[0].reason, bad


def test_a_libvirt_that_refuses_is_unknown(monkeypatch):
    def refuse(uri):
        raise domain.LibvirtUnavailable(f'libvirt at {uri} refused: no')
    monkeypatch.setattr(domain, 'read_domains', refuse)
    found = guests.checks([TUNED], verify.Context(libvirt_uri='test:///x'))
    assert [c.status for c in found] == [verify.UNKNOWN]
    assert found[0].reason == 'libvirt at test:///x refused: no'
