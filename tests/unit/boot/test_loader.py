"""kvmtune.boot.loader: how a host tree boots, where kvmtune's kernel
arguments go, and the distribution's tool. The drop-in and the block are
read back by the shell as grub-mkconfig reads them (the real
grub-mkconfig run is in test_apply.py)."""

import subprocess

import pytest

from kvmtune.boot import loader
from kvmtune.errors import InputError
from kvmtune.tuning.export import common

ARGS = ['isolcpus=2-19', 'hugepagesz=2M', 'hugepages=512']


def test_debian_gets_the_grub_d_drop_in_and_update_grub(tree):
    root = tree('debian-12')
    found = loader.detect(str(root))
    assert (found.name, found.config) == ('grub-debian', common.GRUB_FILE)
    assert found.os_name == 'Debian GNU/Linux 12 (bookworm)'
    assert loader.commands(found, [], ARGS) == [['update-grub']]


def test_ubuntu_is_debian_by_its_id_like(tree):
    root = tree('debian-12')
    (root / 'etc/os-release').write_text(
        'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nID_LIKE=debian\n')
    assert loader.detect(str(root)).name == 'grub-debian'


def test_rhel_9_with_bls_entries_gets_grubby(tree):
    root = tree('rhel-9-bls')
    found = loader.detect(str(root))
    assert (found.name, found.config) == ('grubby-bls', 'etc/default/grub')
    assert loader.commands(found, [], ARGS) == [
        ['grubby', '--update-kernel=ALL', '--args=' + ' '.join(ARGS)]]
    # arguments kvmtune added before and the plan dropped are removed first
    assert loader.commands(found, ['isolcpus=2-11', 'hugepagesz=2M'],
                           ARGS)[0] == [
        'grubby', '--update-kernel=ALL', '--remove-args=isolcpus=2-11']


def test_rhel_7_without_bls_gets_grub2_mkconfig_on_its_grub_cfg(tree):
    root = tree('rhel-7')
    found = loader.detect(str(root))
    assert (found.name, found.grub_cfgs) == ('grub-rhel',
                                             ('boot/grub2/grub.cfg',))
    assert loader.commands(found, [], ARGS) == [
        ['grub2-mkconfig', '-o', '/boot/grub2/grub.cfg']]


@pytest.mark.parametrize('distro, change, words', [
    ('debian-12', lambda root: (root / 'etc/os-release').write_text(
        'PRETTY_NAME="Alpine Linux v3.20"\nID=alpine\n'),
     "'Alpine Linux v3.20' is neither"),
    ('debian-12', lambda root: (root / 'etc/os-release').unlink(),
     "'unknown' is neither"),
    ('debian-12', lambda root: (root / 'etc/default/grub').unlink(),
     'without etc/default/grub'),
    ('rhel-9-bls', lambda root: [p.unlink() for p in
                                 (root / loader.BLS_ENTRIES).iterdir()],
     'GRUB_ENABLE_BLSCFG=true but no'),
    ('rhel-7', lambda root: (root / 'boot/grub2/grub.cfg').unlink(),
     'without BLS and without a grub.cfg'),
])
def test_an_unknown_bootloader_is_one_line(tree, distro, change, words):
    root = tree(distro)
    change(root)
    with pytest.raises(InputError) as err:
        loader.detect(str(root))
    assert 'unknown bootloader' in err.value.line()
    assert words in err.value.line()
    assert '\n' not in err.value.line()


def _sourced(root, *files):
    """GRUB_CMDLINE_LINUX after sourcing ``files`` with /bin/sh, as
    grub-mkconfig does (``. ${sysconfdir}/default/grub``, then each
    default/grub.d/*.cfg)."""
    script = ''.join(f'. "{root / name}"\n' for name in files)
    done = subprocess.run(['sh', '-c', script + 'printf %s '
                           '"$GRUB_CMDLINE_LINUX"'],
                          capture_output=True, text=True, check=True)
    return done.stdout


def test_the_drop_in_adds_to_what_default_grub_sets(tree):
    root = tree('debian-12')
    found = loader.detect(str(root))
    (root / common.GRUB_FILE).parent.mkdir()
    (root / common.GRUB_FILE).write_text(
        loader.render(found, str(root), 'p', ARGS))
    (root / 'etc/default/grub').write_text(
        (root / 'etc/default/grub').read_text()
        + 'GRUB_CMDLINE_LINUX="console=ttyS0"\n')
    assert _sourced(root, 'etc/default/grub', common.GRUB_FILE).split() \
        == ['console=ttyS0'] + ARGS
    assert loader.owned_args(found, str(root)) == ARGS


def test_the_rhel_block_is_replaced_never_repeated(tree):
    root = tree('rhel-7')
    found = loader.detect(str(root))
    grub = root / 'etc/default/grub'
    before = grub.read_text()
    grub.write_text(loader.render(found, str(root), 'p', ['isolcpus=4']))
    grub.write_text(loader.render(found, str(root), 'p', ARGS))
    text = grub.read_text()
    assert text.startswith(before)
    assert text.count(loader.BEGIN) == 1
    assert loader.owned_args(found, str(root)) == ARGS
    assert _sourced(root, 'etc/default/grub').split() == [
        'console=tty0', 'console=ttyS0,115200n8', 'crashkernel=auto',
        'rhgb', 'quiet'] + ARGS


def test_a_block_without_its_end_is_refused(tree):
    root = tree('rhel-9-bls')
    grub = root / 'etc/default/grub'
    grub.write_text(grub.read_text() + loader.BEGIN + '\n')
    found = loader.detect(str(root))
    with pytest.raises(InputError, match='no END line'):
        loader.render(found, str(root), 'p', ARGS)


def test_a_kernel_argument_the_shell_would_expand_is_refused(tree):
    root = tree('debian-12')
    found = loader.detect(str(root))
    with pytest.raises(InputError, match='the shell would expand'):
        loader.render(found, str(root), 'p', ['dyndbg="file x +p"'])
