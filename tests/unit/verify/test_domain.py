"""Nova's domain XML as the guests layer reads it: the parse of what Nova
34's libvirt driver wrote in the test cloud (tests/fixtures/libvirt/
README.md), and libvirt's read-only connection refusing."""

import pytest

from kvmtune.errors import InputError
from kvmtune.verify import domain
from tests.unit.verify.test_guests import PINNED
from tests.unit.verify.test_guests import PLAIN


def test_novas_xml_reads_as_novas_metadata_says():
    guest = domain.parse_domain(PINNED)
    assert guest.domain == 'instance-00000007'
    assert guest.name == 'kvmtune-ft-e8e0920c'
    assert guest.vcpus == 1 and guest.dedicated
    assert guest.extra_specs == {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer',
        'hw:emulator_threads_policy': 'share', 'hw:mem_page_size': 'large'}
    assert guest.vcpupins == {0: frozenset({1})}
    assert guest.emulatorpin == frozenset({0})
    assert guest.page_kb == [2048]
    assert guest.cells == {0: frozenset({0})}
    assert guest.memnodes == {0: frozenset({0})}
    # the cdrom (config drive) is not a disk of the guest's
    assert guest.disks == [('file', 'none', 'qcow2', 'vda')]
    plain = domain.parse_domain(PLAIN)
    assert not plain.dedicated and plain.extra_specs == {}
    assert plain.vcpupins == {} and plain.page_kb == []
    assert plain.interfaces == [('virtio', 'qemu', None)]


def test_virsh_refusing_the_connection_is_unknown(tmp_path, monkeypatch):
    # a real virsh against a socket that is not there
    import shutil
    if not shutil.which('virsh'):
        pytest.skip('virsh (libvirt-clients) is not installed')
    monkeypatch.setitem(__import__('sys').modules, 'libvirt', None)
    uri = f'qemu+unix:///system?socket={tmp_path}/none'
    with pytest.raises(domain.LibvirtUnavailable, match='refused'):
        domain.read_domains(uri)


def test_domain_files_are_read_by_name_and_bounded(tmp_path, monkeypatch):
    (tmp_path / 'b.xml').write_text(PLAIN)
    (tmp_path / 'a.xml').write_text(PINNED)
    (tmp_path / 'notes.txt').write_text('not a domain')
    found = dict(domain.read_files(str(tmp_path)))
    assert found == {'a.xml': PINNED, 'b.xml': PLAIN}
    # one guest's XML is a few KiB: a file over MAX_XML is refused
    monkeypatch.setattr(domain, 'MAX_XML', len(PLAIN) - 1)
    with pytest.raises(InputError) as exc:
        domain.read_files(str(tmp_path))
    assert 'b.xml' in exc.value.line() or 'a.xml' in exc.value.line()
