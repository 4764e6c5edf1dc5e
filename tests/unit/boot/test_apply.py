"""kvmtune.boot.apply on real captures with their distribution's boot
files (tests/hosttrees.py). The Debian drop-in is proven by Debian's own
grub-mkconfig (grub2-common, tools/bootstrap): the boot entries it
generates carry the plan's arguments, and a host booted with that entry
needs nothing more."""

import os
import re
import shutil
import subprocess

import pytest

from kvmtune.boot import apply
from kvmtune.boot import loader
from kvmtune.boot import record
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning.export import common
from tests import hosttrees

PROFILE = 'pinned-hugepages'
# tests/fixtures/hosts/real/20em64t-hybrid-1p6c2t+2ca4co1t/proc/cmdline
DEBIAN_KERNEL = '6.1.0-13-amd64'
# grub-mkconfig probes the devices of / and /boot; the test's tree has
# none, so this stand-in answers for them (nothing else is replaced).
GRUB_PROBE = '''#!/bin/sh
for arg; do
  case "$arg" in
    --target=device) echo /dev/kvmtune-test ;;
    --target=fs) echo ext2 ;;
    --target=fs_uuid) echo 4d3f1c2e-8a5b-4b61-9f0e-2c7d9a1b3e55 ;;
  esac
done
'''


def _grub_mkconfig(root, tmp_path):
    """Debian's grub-mkconfig run on the tree: its etc/default and boot
    bind-mounted over /etc/default and /boot in a mount namespace of the
    test's own (unshare), so the machine's own are never touched. Returns
    the arguments of each generated ``linux`` line."""
    assert shutil.which('grub-mkconfig') and shutil.which('unshare'), (
        'install grub2-common and util-linux (tools/bootstrap)')
    (root / 'boot' / 'grub').mkdir(parents=True, exist_ok=True)
    for name in (f'vmlinuz-{DEBIAN_KERNEL}', f'initrd.img-{DEBIAN_KERNEL}'):
        (root / 'boot' / name).write_bytes(b'')
    probe = tmp_path / 'grub-probe'
    probe.write_text(GRUB_PROBE)
    probe.chmod(0o755)
    out = root / 'boot' / 'grub' / 'grub.cfg'
    done = subprocess.run(
        ['unshare', '--mount', '--map-root-user', 'sh', '-ec',
         'mount --bind "$1/etc/default" /etc/default; '
         'mount --bind "$1/boot" /boot; '
         'mount --bind "$2" "$(command -v grub-probe)"; '
         'grub-mkconfig -o "$3"', 'sh', str(root), str(probe), str(out)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line.split(None, 2)[2] for line in out.read_text().splitlines()
            if re.match(r'\s*linux\s', line)]


def _boot(root, cmdline, boot_id):
    """The test's stand-in for a reboot: the tree now runs ``cmdline``."""
    (root / 'proc' / 'cmdline').write_text(cmdline + '\n')
    path = root / record.BOOT_ID
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(boot_id + '\n')


def test_debian_drop_in_through_grub_mkconfig_then_booted(tree, tmp_path):
    root = tree('debian-12')
    _boot(root, (root / 'proc/cmdline').read_text().strip(), 'boot-1')
    done = apply.apply(PROFILE, root=str(root))
    assert done.loader == 'grub-debian'
    assert done.files == [('/' + common.GRUB_FILE, 'wrote')]
    assert done.commands == [['update-grub']] and not done.ran
    assert done.reasons == {
        'cmdline': ['isolcpus=2-19'],
        'hugepages': ['default_hugepagesz=2M', 'hugepagesz=2M',
                      'hugepages=6940']}
    assert record.pending(str(root)) == done.reasons
    # Debian's grub-mkconfig puts them on every entry (recovery too)
    lines = _grub_mkconfig(root, tmp_path)
    assert len(lines) == 3
    n = len(done.kernel_args)
    for line in lines:
        words = line.split()
        assert any(words[i:i + n] == done.kernel_args
                   for i in range(len(words))), line
    # a second run before the reboot: nothing written, still pending
    again = apply.apply(PROFILE, root=str(root))
    assert again.files == [('/' + common.GRUB_FILE, 'unchanged')]
    assert again.record == 'unchanged'
    # boot the first entry: nothing to write, the record goes
    before = hosttrees.snapshot(root)
    _boot(root, f'BOOT_IMAGE=/boot/vmlinuz-{DEBIAN_KERNEL} {lines[0]}',
          'boot-2')
    assert record.pending(str(root)) == {}       # stale: another boot
    booted = apply.apply(PROFILE, root=str(root))
    assert (booted.reasons, booted.commands, booted.record) == (
        {}, [], 'removed')
    assert booted.files == []
    after = hosttrees.snapshot(root)
    assert sorted(set(before) - set(after)) == [record.PATH]
    assert all(after[name] == before[name] for name in after
               if not name.startswith('proc/'))


def test_rhel_9_bls_gets_the_block_and_grubby_not_run_under_root(tree):
    root = tree('rhel-9-bls')
    done = apply.apply(PROFILE, root=str(root))
    grub = (root / 'etc/default/grub').read_text()
    assert loader.BEGIN in grub
    assert done.commands == [['grubby', '--update-kernel=ALL',
                              '--args=' + ' '.join(done.kernel_args)]]
    assert not done.ran
    # the capture booted isolcpus=managed_irq,domain,<the plan's CPUs>:
    # booted as planned (the operator's flags are theirs), and staged
    # with those flags kept
    assert set(done.reasons) == {'hugepages'}
    assert done.kernel_args[0] == (
        'isolcpus=managed_irq,domain,1-19,21-39,41-59,61-79')
    assert done.to_dict()['commands'][0]['ran'] is False


def test_rhel_7_gets_grub2_mkconfig_for_its_grub_cfg(tree):
    root = tree('rhel-7')
    done = apply.apply('cpu-pinning', root=str(root))
    assert done.commands == [['grub2-mkconfig', '-o',
                              '/boot/grub2/grub.cfg']]
    assert done.reasons == {'cmdline': ['isolcpus=1-7,9-15,17-23,25-31']}


def test_booted_already_nothing_is_written(tree):
    root = tree('rhel-7')
    line = (root / 'proc/cmdline').read_text().strip()
    (root / 'proc/cmdline').write_text(line + ' isolcpus=1-7,9-15,17-23,'
                                       '25-31\n')
    before = hosttrees.snapshot(root)
    done = apply.apply('cpu-pinning', root=str(root))
    assert (done.files, done.commands, done.reasons, done.record) == (
        [], [], {}, 'none')
    assert hosttrees.snapshot(root) == before


def test_module_options_are_written_and_pending_while_loaded_otherwise(
        tree):
    root = tree('rhel-9-bls')       # kvm_intel loaded with nested=Y
    done = apply.apply('nested-host', root=str(root))
    assert done.files == [('/etc/modprobe.d/kvm.conf', 'wrote')]
    assert done.reasons == {}
    (root / 'sys/module/kvm_intel/parameters/nested').write_text('N\n')
    done = apply.apply('nested-host', root=str(root))
    assert done.files == [('/etc/modprobe.d/kvm.conf', 'unchanged')]
    assert done.reasons == {'module': ['kvm_intel nested=1']}
    assert record.pending(str(root)) == {'module': ['kvm_intel nested=1']}


def test_a_profile_without_kernel_arguments_takes_back_kvmtunes(tree):
    root = tree('debian-12')
    apply.apply('cpu-pinning', root=str(root))
    line = (root / 'proc/cmdline').read_text().strip()
    (root / 'proc/cmdline').write_text(line + ' isolcpus=2-19\n')  # booted
    done = apply.apply('nested-host', root=str(root))
    assert ('/' + common.GRUB_FILE, 'wrote') in done.files
    assert done.reasons == {'cmdline': ['-isolcpus=2-19']}
    assert loader.owned_args(loader.detect(str(root)), str(root)) == []


@pytest.mark.parametrize('distro, change, words', [
    ('debian-12', lambda root: (root / 'etc/os-release').write_text(
        'ID=alpine\n'), 'unknown bootloader'),
    ('debian-12', lambda root: (root / 'proc/cmdline').unlink(),
     'booted command line is unknown'),
    # no MemTotal: the huge page pool cannot be sized, the plan withholds
    ('debian-12', lambda root: (root / 'proc/meminfo').unlink(),
     'withheld'),
    # the record cannot be written: refused before the drop-in is
    ('debian-12', lambda root: (root / 'var').write_text(''),
     'cannot create the directory'),
])
def test_refused_with_one_line_and_nothing_written(tree, distro, change,
                                                   words):
    root = tree(distro)
    change(root)
    before = hosttrees.snapshot(root)
    with pytest.raises(InputError) as err:
        apply.apply(PROFILE, root=str(root))
    assert words in err.value.line()
    assert '\n' not in err.value.line()
    assert hosttrees.snapshot(root) == before
    assert not os.path.exists(record.path(str(root)))


def test_a_failing_tool_on_this_machine_leaves_no_record(tree, tmp_path,
                                                         monkeypatch):
    """The run on '/' (pure call logic: a stand-in update-grub that
    fails; the real tool is never run by the tests)."""
    root = tree('debian-12')
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'update-grub').write_text('#!/bin/sh\necho "/boot: no '
                                        'space" >&2\nexit 1\n')
    (bindir / 'update-grub').chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    monkeypatch.setattr(apply, 'is_this_machine', lambda path: True)
    real = host_facts.resolve
    monkeypatch.setattr(host_facts, 'resolve',
                        lambda root=None, facts_file=None: real(
                            root=str(tree_root)))
    tree_root = root
    with pytest.raises(apply.KvmtuneError) as err:
        apply.apply(PROFILE, root=str(root))
    assert err.value.line().startswith('update-grub failed (exit 1): '
                                       '/boot: no space')
    assert not os.path.exists(record.path(str(root)))
