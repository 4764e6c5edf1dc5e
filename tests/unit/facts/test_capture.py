"""host capture on this machine: the tree must give the live facts."""

import json
import os

import pytest

from kvmtune import cli
from kvmtune import facts as host_facts
from kvmtune.facts import capture


def steady(facts):
    """Facts without what the kernel changes while we look.

    On this machine node 0's MemTotal grows for minutes after boot
    (/proc/meminfo's does not), so two live reads may differ there only.
    """
    facts = without(facts, ('source',))
    for node in facts['numa']['nodes']:
        node.pop('memory_mb')
    return facts


def without(facts, *paths):
    facts = json.loads(json.dumps(facts))
    for path in paths:
        parent = facts
        for key in path[:-1]:
            parent = parent[key]
        parent.pop(path[-1])
    return facts


@pytest.fixture(scope='module')
def captured(tmp_path_factory):
    target = tmp_path_factory.mktemp('capture') / 'host'
    record = capture.capture('/', str(target))
    return target, record


def test_tree_gives_the_facts_read_at_capture_time(captured):
    target, record = captured
    replayed = host_facts.gather(str(target))
    assert replayed['source'] == str(target)
    at_capture = without(record['facts'], ('source',))
    assert without(replayed, ('source',)) == at_capture


def test_tree_gives_the_same_facts_as_the_live_host(captured):
    target, _ = captured
    live = host_facts.gather('/')
    replayed = host_facts.gather(str(target))
    assert live['source'] == '/'
    assert steady(live) == steady(replayed)


def test_record(captured):
    target, record = captured
    with open(target / host_facts.CAPTURE_FILE) as f:
        on_disk = json.load(f)
    assert on_disk['kvm_probe'] == record['kvm_probe']
    assert set(on_disk['kvm_probe']) == {'usable', 'api_version', 'error'}
    assert on_disk['captured_at'].endswith('+00:00')
    assert 'kvmtune_version' in on_disk
    for path in on_disk['files']:
        assert (target / path.lstrip('/')).is_file(), path
    assert '/proc/cpuinfo' in on_disk['files']


def test_live_probe_matches_the_device():
    probe = host_facts.gather('/')['virt']
    if not os.path.exists('/dev/kvm'):
        assert probe['kvm_usable'] is False
        assert probe['kvm_error'].startswith('open /dev/kvm')
    else:
        assert isinstance(probe['kvm_usable'], bool)
        assert (probe['kvm_error'] is None) == probe['kvm_usable']


def test_command_refuses_a_non_empty_directory(tmp_path, capsys):
    (tmp_path / 'keep').write_text('x')
    assert cli.main(['host', 'capture', str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f'kvmtune: error: {tmp_path}: exists and is not')
    assert os.listdir(tmp_path) == ['keep']


def test_command_writes_an_empty_directory(tmp_path, capsys):
    assert cli.main(['host', 'capture', str(tmp_path)]) == 0
    assert 'files captured from' in capsys.readouterr().err
    assert (tmp_path / 'proc/cpuinfo').is_file()
    assert not [n for n in os.listdir(tmp_path.parent)
                if n.startswith('.kvmtune-capture-')]


# -- the boot side (kvmtune.facts.capture.boot_side) -----------------------

def _boot_tree(tmp_path):
    from tests import hosttrees
    return hosttrees.make(str(tmp_path / 'host'), 'rhel-7')


def test_boot_side_copies_what_the_boot_commands_read(tmp_path):
    root = _boot_tree(tmp_path)
    os.makedirs(os.path.join(root, 'etc', 'modprobe.d'))
    with open(os.path.join(root, 'etc', 'modprobe.d', 'kvm.conf'), 'w') as f:
        f.write('options kvm_intel nested=1\n')
    with open(os.path.join(root, 'etc', 'modprobe.d', 'notes.txt'),
              'w') as f:
        f.write('not read by modprobe\n')
    copied, refused, masked = capture.boot_side(root)
    assert sorted(copied) == ['boot/grub2/grub.cfg', 'etc/default/grub',
                              'etc/modprobe.d/kvm.conf', 'etc/os-release']
    assert copied['boot/grub2/grub.cfg'] == b''     # a stand-in
    with open(os.path.join(root, 'etc', 'default', 'grub'), 'rb') as f:
        assert copied['etc/default/grub'] == f.read()
    assert (refused, masked) == ({}, [])


def test_boot_side_masks_a_secret_and_refuses_fifo_link_and_size(
        tmp_path, monkeypatch):
    root = _boot_tree(tmp_path)
    with open(os.path.join(root, 'etc', 'default', 'grub'), 'a') as f:
        f.write('GRUB_PASSWORD="password=Sup3rSecretPw"\n')
    entries = os.path.join(root, 'boot', 'loader', 'entries')
    os.makedirs(entries)
    os.mkfifo(os.path.join(entries, 'fifo.conf'))
    outside = tmp_path / 'outside'
    outside.write_text('options root=/dev/sda1\n')
    os.symlink(outside, os.path.join(entries, 'out.conf'))
    os.makedirs(os.path.join(root, 'etc', 'kernel'))
    with open(os.path.join(root, 'etc', 'kernel', 'cmdline'), 'w') as f:
        f.write('x' * 100)
    monkeypatch.setattr(capture, 'BOOT_MAX_BYTES', 64)
    copied, refused, masked = capture.boot_side(root)
    assert set(refused) == {'boot/loader/entries/fifo.conf',
                            'boot/loader/entries/out.conf',
                            'etc/kernel/cmdline', 'etc/default/grub',
                            'etc/os-release'}    # all over 64 bytes
    monkeypatch.setattr(capture, 'BOOT_MAX_BYTES', 1 << 20)
    copied, refused, masked = capture.boot_side(root)
    assert masked == ['etc/default/grub']
    assert b'Sup3rSecretPw' not in copied['etc/default/grub']
    assert b'GRUB_CMDLINE_LINUX' in copied['etc/default/grub']


def test_capture_of_a_tree_writes_the_boot_side_and_says_what_not(
        tmp_path):
    root = _boot_tree(tmp_path)
    os.mkfifo(os.path.join(root, 'etc', 'os-release.fifo'))
    os.makedirs(os.path.join(root, 'etc', 'modprobe.d'))
    os.mkfifo(os.path.join(root, 'etc', 'modprobe.d', 'fifo.conf'))
    target = tmp_path / 'capture'
    nova = ({'/etc/nova/nova.conf': b'[DEFAULT]\n'},
            {'/etc/nova/nova.conf.d/x.conf': 'is a FIFO'})
    record = capture.capture(root, str(target), extra=nova)
    assert record['kvm_probe'] is None      # no probe of a tree's /dev
    for path in ('/etc/os-release', '/etc/default/grub',
                 '/boot/grub2/grub.cfg', '/etc/nova/nova.conf'):
        assert path in record['files']
        assert os.path.isfile(str(target) + path)
    assert set(record['not_copied']) == {'/etc/modprobe.d/fifo.conf',
                                         '/etc/nova/nova.conf.d/x.conf'}
    assert not os.path.exists(target / 'etc' / 'modprobe.d' / 'fifo.conf')
