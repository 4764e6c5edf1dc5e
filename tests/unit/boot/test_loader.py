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
    # the words stage() takes out are removed first
    assert loader.commands(found, ['isolcpus=2-11', 'hugepagesz=1G'],
                           ARGS)[0] == [
        'grubby', '--update-kernel=ALL',
        '--remove-args=isolcpus=2-11 hugepagesz=1G']


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


# -- one argument per key, proven by GRUB's way and grubby's ---------------

# tuned's cpu-partitioning profile (redhat-performance/tuned,
# profiles/cpu-partitioning/tuned.conf, [bootloader] cmdline_cpu_part)
# with isolated_cores=2-7 on a 20-CPU host
TUNED = ('nohz=on nohz_full=2-7 rcu_nocbs=2-7 '
         'tuned.non_isolcpus=000ff003 intel_pstate=disable nosoftlockup')
OPERATOR_LINUX = ('isolcpus=managed_irq,domain,2-7 ' + TUNED +
                  ' default_hugepagesz=1G hugepagesz=1G hugepages=4 '
                  'hugepagesz=2M hugepages=128')
OPERATOR_DEFAULT = 'quiet isolcpus=3-5 splash'
PLANNED = ['isolcpus=2-19', 'default_hugepagesz=2M', 'hugepagesz=2M',
           'hugepages=512']


def _grub_line(root):
    """GRUB's own way: grub-mkconfig sources /etc/default/grub, then
    /etc/default/grub.d/*.cfg, in a shell (Debian's grub-mkconfig), and
    10_linux boots GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT."""
    done = subprocess.run(
        ['bash', '-c', '. ./grub; for f in grub.d/*.cfg; do . "$f"; done;'
         ' echo "$GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT"'],
        cwd=root / 'etc/default', capture_output=True, text=True, check=True)
    return done.stdout.split()


def _operators_grub(root):
    grub = root / 'etc/default/grub'
    grub.write_text(grub.read_text().replace(
        'GRUB_CMDLINE_LINUX_DEFAULT="quiet"',
        f'GRUB_CMDLINE_LINUX_DEFAULT="{OPERATOR_DEFAULT}"').replace(
        'GRUB_CMDLINE_LINUX=""', f'GRUB_CMDLINE_LINUX="{OPERATOR_LINUX}"'))
    # and booted so (the drift is the plan's CPUs and pool)
    (root / 'proc/cmdline').write_text(
        f'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro {OPERATOR_LINUX} '
        f'{OPERATOR_DEFAULT}\n')


def test_grub_boots_one_isolcpus_the_operators_flags_and_args(tree):
    from kvmtune.boot import apply
    from kvmtune.facts import cmdline
    from kvmtune.tuning import plan as plans
    from kvmtune import verify

    root = tree('debian-12')
    _operators_grub(root)
    plan, = plans.for_host(['cpu-pinning'], root=str(root))
    plan.kernel_args = PLANNED
    done = apply.apply(None, root=str(root), plan=plan)
    assert done.reasons == {'cmdline': ['isolcpus=2-19'],
                            'hugepages': PLANNED[1:]}
    words = _grub_line(root)
    # what kvmtune computed is what the shell gives
    assert done.cmdline == [' '.join(words)]
    line = cmdline.read(words)
    assert line.of_key('isolcpus') == [
        'isolcpus=managed_irq,domain,2-19']
    assert line.of_key('default_hugepagesz') == ['default_hugepagesz=2M']
    assert all(item.ok for item in cmdline.judge(PLANNED, line))
    assert line.ignored == [] and line.invalid == []
    # every argument kvmtune does not own, in its order, and the
    # operator's 1G pool still reserved
    theirs = [w for w in (OPERATOR_LINUX + ' ' + OPERATOR_DEFAULT).split()
              if cmdline.key_of(w) not in ('isolcpus', 'default_hugepagesz')
              and w not in ('hugepagesz=2M', 'hugepages=128')]
    assert [w for w in words if w in theirs] == theirs
    assert line.pools[1048576].count == 4
    assert line.pools[2048].count == 512
    # verify before the reboot: staged, reboot pending
    rows = {row.name: row for row in verify.run(
        [plan], verify.Context(root=str(root)), ('host',))}
    assert rows['cmdline isolcpus'].live == (
        'isolcpus=managed_irq,domain,2-7 isolcpus=3-5 (ignored by the '
        'kernel) (staged, reboot pending)')
    assert rows['cmdline isolcpus'].fix.startswith('reboot')
    # booted: nothing more to stage, verify passes
    (root / 'proc/cmdline').write_text(' '.join(words) + '\n')
    again = apply.apply(None, root=str(root), plan=plan, dry_run=True)
    assert again.reasons == {} and again.cmdline == []
    assert all(row.status == 'PASS' for row in verify.run(
        [plan], verify.Context(root=str(root)), ('host',))
        if row.name.startswith('cmdline '))


def test_a_line_the_shell_would_compute_is_refused_not_guessed(tree):
    root = tree('debian-12')
    grub = root / 'etc/default/grub'
    grub.write_text(grub.read_text() +
                    'GRUB_CMDLINE_LINUX="$(cat /etc/args) isolcpus=2"\n')
    found = loader.detect(str(root))
    with pytest.raises(InputError, match='does not evaluate'):
        loader.stage(found, str(root), ['isolcpus=2-19'], [], 'ro')


def _bls_operator(root, options, tuned=True):
    """The operator's arguments in the BLS entry's options; tuned's in
    $tuned_params of GRUB's environment block, where tuned's bootloader
    plugin keeps them."""
    entry, = (root / 'boot/loader/entries').glob('*.conf')
    entry.write_text(entry.read_text().replace(
        'rd.lvm.lv=rhel/root', 'rd.lvm.lv=rhel/root ' + options))
    if tuned:
        (root / 'boot/grub2').mkdir(parents=True, exist_ok=True)
        (root / 'boot/grub2/grubenv').write_text(
            '# GRUB Environment Block\ntuned_params=' + TUNED + '\n')
    return entry


def _options(entry):
    return next(line.split(None, 1)[1] for line in
                entry.read_text().splitlines()
                if line.startswith('options '))


OPERATOR_BLS = ('isolcpus=managed_irq,domain,2-7 default_hugepagesz=1G '
                'hugepagesz=2M hugepages=128 quiet isolcpus=3-5')


def test_grubby_leaves_one_isolcpus_in_each_bls_entry(tree):
    from kvmtune.facts import cmdline
    from tests import hosttrees

    root = tree('rhel-9-bls')
    entry = _bls_operator(root, OPERATOR_BLS)
    found = loader.detect(str(root))
    staged = loader.stage(found, str(root), PLANNED, [], 'ro')
    argvs = loader.commands(found, staged.remove, staged.args)
    options = hosttrees.grubby_bls(_options(entry), argvs)
    assert '$tuned_params' in options.split()
    # as GRUB boots it: $tuned_params from the environment block
    words = options.replace('$tuned_params', TUNED).split()
    assert words == staged.lines[0].split()
    line = cmdline.read(words)
    assert line.of_key('isolcpus') == ['isolcpus=managed_irq,domain,2-19']
    assert line.of_key('default_hugepagesz') == ['default_hugepagesz=2M']
    assert all(item.ok for item in cmdline.judge(PLANNED, line))
    assert line.ignored == []
    assert {'nohz_full=2-7', 'rcu_nocbs=2-7', 'quiet'} <= set(words)


def test_grubby_cannot_add_a_second_pool_size_so_it_is_refused(tree):
    """grubby-bls replaces the first hugepagesz= instead of adding
    hugepagesz=2M beside the operator's hugepagesz=1G: refused, naming
    what would be lost, nothing staged."""
    from tests import hosttrees

    root = tree('rhel-9-bls')
    _bls_operator(root, OPERATOR_BLS + ' hugepagesz=1G hugepages=4')
    found = loader.detect(str(root))
    with pytest.raises(InputError, match='grubby would not stage') as exc:
        loader.stage(found, str(root), PLANNED, [], 'ro')
    assert 'hugepagesz=1G hugepages=4 would be lost' in str(exc.value)
    # the test's model of grubby-bls agrees: the 1G pool would be gone
    edited = hosttrees.grubby_bls('ro hugepagesz=1G hugepages=4', [
        ['grubby', '--update-kernel=ALL',
         '--args=hugepagesz=2M hugepages=512']])
    assert edited == 'ro hugepagesz=2M hugepages=512'


def test_grubby_would_break_on_tuned_args_in_the_options_refused(tree):
    """tuned.non_isolcpus= holds isolcpus=: grubby-bls would edit it with
    a sed the isolcpus flags' commas break."""
    root = tree('rhel-9-bls')
    _bls_operator(root, OPERATOR_BLS + ' ' + TUNED, tuned=False)
    found = loader.detect(str(root))
    with pytest.raises(InputError, match='grubby would fail to add '
                                         'isolcpus=managed_irq,domain,2-19'):
        loader.stage(found, str(root), PLANNED, [], 'ro')
