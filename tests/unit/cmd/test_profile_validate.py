"""``kvmtune profile validate``: one OK line naming the tuners and the
extra specs count, or the first problem as one line, exit 2."""

from kvmtune import cli
from tests.profilefiles import GOOD
from tests.profilefiles import write


def test_profile_validate(tmp_path, capsys):
    good = write(tmp_path, 'mine.yaml', GOOD)
    assert cli.main(['profile', 'validate', good]) == 0
    assert capsys.readouterr().out.startswith(f'{good}: OK: profile mine')
    bad = write(tmp_path, 'bad.yaml', GOOD.replace('isolate', 'avoid'))
    assert cli.main(['profile', 'validate', bad]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert err.startswith(f'kvmtune: error: {bad}: cpu_pinning.params.'
                          'thread_policy: ')
    assert 'prefer, isolate, require' in err


def test_profile_validate_ok_line_names_tuners(tmp_path, capsys):
    good = write(tmp_path, 'mine.yaml', GOOD)
    assert cli.main(['profile', 'validate', good]) == 0
    out = capsys.readouterr().out
    assert out.count('\n') == 1
    assert '(tuners: cpu_pinning, ept; ' in out
    assert out.rstrip().endswith(' extra specs)')


def test_profile_validate_a_missing_file(tmp_path, capsys):
    missing = str(tmp_path / 'nope.yaml')
    assert cli.main(['profile', 'validate', missing]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and missing in err
