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
        'reboot required (cmdline: isolcpus=1-7,9-15,17-23,25-31); record '
        'would write']
    assert record.read(str(root)) is None
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'wrote /etc/default/grub'
    assert out[1] == (f'not run (--root {root} is not this machine): '
                      'grub2-mkconfig -o /boot/grub2/grub.cfg')
    assert out[2].endswith('record written')


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
