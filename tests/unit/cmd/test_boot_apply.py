"""kvmtune boot apply: what it prints, its JSON, and the refusals as one
line and exit status 2 (the library is kvmtune.boot.apply, tested in
tests/unit/boot/test_apply.py)."""

import json

from kvmtune.boot import record
from kvmtune import cli
from tests import hosttrees


def test_table_names_the_file_the_command_not_run_and_the_reasons(
        tmp_path, capsys):
    root = hosttrees.make(tmp_path / 'h', 'rhel-7')
    argv = ['boot', 'apply', '--profile', 'cpu-pinning', '--root',
            str(root)]
    assert cli.main(argv + ['--dry-run']) == 0
    assert capsys.readouterr().out.splitlines() == [
        'would write /etc/default/grub',
        'not run (dry run): grub2-mkconfig -o /boot/grub2/grub.cfg',
        # what GRUB_CMDLINE_LINUX(_DEFAULT) give the next boot
        "next boot's kernel arguments: console=tty0 console=ttyS0,115200n8"
        ' crashkernel=auto rhgb quiet isolcpus=1-7,9-15,17-23,25-31',
        'reboot required (cmdline: isolcpus=1-7,9-15,17-23,25-31); record '
        'would write']
    assert record.read(str(root)) is None
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'wrote /etc/default/grub'
    assert out[1] == (f'not run (--root {root} is not this machine): '
                      'grub2-mkconfig -o /boot/grub2/grub.cfg')
    assert out[3].endswith('record written')


def test_json_is_the_result_document(tmp_path, capsys):
    root = hosttrees.make(tmp_path / 'h', 'debian-12')
    assert cli.main(['boot', 'apply', '--profile', 'nested-host', '--root',
                     str(root), '-f', 'json']) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc['files'] == [{'path': '/etc/modprobe.d/kvm.conf',
                             'status': 'wrote'}]
    assert doc['reboot_required'] is False
    assert doc['reasons'] == {'cmdline': [], 'hugepages': [], 'module': []}


def test_an_unknown_bootloader_is_one_line_exit_2(tmp_path, capsys):
    root = hosttrees.make(tmp_path / 'h', 'debian-12')
    (root / 'etc/os-release').write_text('ID=alpine\n')
    assert cli.main(['boot', 'apply', '--profile', 'cpu-pinning', '--root',
                     str(root)]) == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert len(err.splitlines()) == 1
    assert err.startswith('kvmtune: error: ') and 'unknown bootloader' in err
    assert not (root / 'etc/default/grub.d').exists()


def test_a_tree_that_is_no_host_is_one_line_exit_2(tmp_path, capsys):
    assert cli.main(['boot', 'apply', '--profile', 'cpu-pinning', '--root',
                     str(tmp_path)]) == 2
    assert 'not a host tree' in capsys.readouterr().err


def test_a_plan_made_before_is_staged_as_it_is(tmp_path, capsys):
    """--plan FILE stages that plan, not one made again from the tree's
    facts: the same files and reasons as --profile on the facts it was
    made from, and its own plan in the document; a file that is not a
    plan is one line, nothing written."""
    root = hosttrees.make(tmp_path / 'h', 'rhel-7')
    assert cli.main(['plan', '--profile', 'cpu-pinning', '--root',
                     str(root), '-f', 'json']) == 0
    made = tmp_path / 'plan.json'
    made.write_text(capsys.readouterr().out)
    assert cli.main(['boot', 'apply', '--profile', 'cpu-pinning', '--root',
                     str(root), '--dry-run', '-f', 'json']) == 0
    by_profile = json.loads(capsys.readouterr().out)
    assert cli.main(['boot', 'apply', '--plan', str(made), '--root',
                     str(root), '--dry-run', '-f', 'json']) == 0
    by_plan = json.loads(capsys.readouterr().out)
    assert by_plan == by_profile
    assert by_plan['plan'] == json.loads(made.read_text())
    made.write_text('{"profile": "cpu-pinning"}')
    before = hosttrees.snapshot(root)
    assert cli.main(['boot', 'apply', '--plan', str(made), '--root',
                     str(root)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and 'missing key' in err
    assert hosttrees.snapshot(root) == before


def test_a_fail_check_boot_apply_does_not_clear_is_refused(
        tmp_path, capsys):
    """pinned-hugepages on a tree without a 2M pool: boot apply is the
    fix, it runs; a host without EPT for pinned-hugepages-ept is refused
    with nothing written, unless --accept-failed-checks."""
    import os
    from tests import paths

    pvm = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')
    argv = ['boot', 'apply', '--profile', 'pinned-hugepages-ept',
            '--root', pvm, '--dry-run']
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert 'kvmtune boot apply: refused' in err
    assert 'FAIL ept ept-enabled' in err
    # told: the refusal is gone (this tree's unknown boot loader is next)
    assert cli.main(argv + ['--accept-failed-checks']) == 2
    err = capsys.readouterr().err
    assert 'FAIL ept ept-enabled accepted' in err
    assert 'unknown bootloader' in err
    # the Intel tree has 1G pages, no 2M pool: FAIL hugepage-pool, which
    # the plan's kernel arguments clear
    root = hosttrees.make(tmp_path / 'h', 'rhel-9-bls')
    assert cli.main(['plan', '--profile', 'pinned-hugepages', '--root',
                     str(root)]) == 1
    assert 'FAIL hugepages hugepage-pool' in capsys.readouterr().out
    assert cli.main(['boot', 'apply', '--profile', 'pinned-hugepages',
                     '--root', str(root), '--dry-run']) == 0
    captured = capsys.readouterr()
    assert 'reboot required' in captured.out
    assert captured.err == ''
