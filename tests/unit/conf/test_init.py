"""kvmtune.conf.load: the kvmtune.conf files given with --config-file."""

import pytest

from kvmtune import cli


@pytest.mark.parametrize('make, words', [
    (lambda p: p.mkdir(), 'is a directory'),
    (lambda p: None, 'no such file'),
])
def test_a_config_file_that_is_not_a_file_is_one_line(tmp_path, capsys,
                                                      make, words):
    # Before: a directory was an internal error (IsADirectoryError). A
    # FIFO is refused by the same reader (tests/unit/test_inputs.py),
    # tested there without a chance to hang.
    path = tmp_path / 'kvmtune.conf'
    make(path)
    assert cli.main(['--config-file', str(path), 'profile', 'list']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'internal error' not in err, err
    assert words in err and 'fix: give a readable kvmtune.conf' in err


def test_a_config_file_with_profile_dirs_is_read(tmp_path, capsys):
    extra = tmp_path / 'profiles'
    extra.mkdir()
    (extra / 'mine.yaml').write_text(
        'name: mine\ndescription: d\nsource: s\ntuners: [numa]\n')
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text(f'[DEFAULT]\nprofile_dirs = {extra}\n')
    assert cli.main(['--config-file', str(conf), 'profile', 'list']) == 0
    assert 'mine' in capsys.readouterr().out
