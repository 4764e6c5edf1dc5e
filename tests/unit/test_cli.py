"""The kvmtune command: every registered command imports (or kvmtune
says it is broken), and a command whose extra is missing says which pip
install to run, in one line."""

import os
import subprocess
import sys
import types

import pytest

from kvmtune import cli
from kvmtune import extras


def test_every_registered_command_imports():
    loaded = list(cli._load_commands())
    assert len(loaded) == len(cli.COMMANDS)
    for words, mod, help_, needs in loaded:
        assert callable(mod.add_arguments) and callable(mod.run), words
        if needs:
            extra, modules = needs
            assert extra in extras.MODULES, words
            assert set(modules or ()) <= set(extras.MODULES[extra]), words


def test_a_command_that_fails_to_import_is_an_error(monkeypatch, capsys):
    monkeypatch.setattr(cli, 'COMMANDS', cli.COMMANDS + [
        (('broken',), 'no_such_module_kvmtune_test', 'x')])
    assert cli.main(['profile', 'list']) == cli.INTERNAL_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith('kvmtune: internal error: command "broken": '
                             'kvmtune.cmd.no_such_module_kvmtune_test does '
                             'not import: ModuleNotFoundError')


def test_an_import_error_inside_a_module_is_an_error(monkeypatch, capsys):
    """Not only a missing file: a module whose own imports fail too."""
    real = cli.importlib.import_module

    def import_module(name):
        if name == 'kvmtune.cmd.report':
            raise ImportError("cannot import name 'analyse' from "
                              "'kvmtune.report'")
        return real(name)
    monkeypatch.setattr(cli.importlib, 'import_module', import_module)
    assert cli.main(['host', 'inspect']) == cli.INTERNAL_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['kvmtune: internal error: command "report": '
                   'kvmtune.cmd.report does not import: ImportError: '
                   "cannot import name 'analyse' from 'kvmtune.report' "
                   '(reinstall kvmtune, or report it)']


def _without(modules, argv):
    """Run kvmtune in a Python where these modules cannot be imported."""
    code = ('import sys\n'
            f'for m in {modules!r}: sys.modules[m] = None\n'
            'from kvmtune import cli\n'
            f'sys.exit(cli.main({argv!r}))\n')
    return subprocess.run([sys.executable, '-c', code], text=True,
                          capture_output=True)


def test_report_without_the_bench_extra_names_the_pip_install(tmp_path):
    proc = _without(['numpy', 'matplotlib'],
                    ['report', str(tmp_path / 'results.json')])
    assert proc.returncode == 2
    assert proc.stdout == ''
    assert proc.stderr.splitlines() == [
        'kvmtune: error: kvmtune report needs the bench extra (missing: '
        "numpy, matplotlib) (fix: pip install 'kvmtune[bench]')"]


def test_report_needs_only_the_plots_of_the_bench_extra(tmp_path):
    """Without Rally, report still runs (it reads Rally's JSON only)."""
    proc = _without(['rally', 'rally_openstack'],
                    ['report', str(tmp_path / 'results.json')])
    assert proc.returncode == 2
    assert 'extra' not in proc.stderr and 'results.json' in proc.stderr


def test_main_job_without_rally_names_the_pip_install():
    proc = _without(['rally', 'rally_openstack'], ['main-job'])
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        'kvmtune: error: kvmtune main-job needs the bench extra (missing: '
        "rally, rally_openstack) (fix: pip install 'kvmtune[bench]')"]


def test_compute_host_commands_need_no_extra(tmp_path):
    """What a compute host runs works without Rally, numpy, matplotlib."""
    proc = _without(list(extras.MODULES['bench']),
                    ['profile', 'list'])
    assert proc.returncode == 0, proc.stderr
    assert 'pinned-hugepages' in proc.stdout


def test_missing_extra_module_at_run_time_is_one_line(monkeypatch,
                                                      capsys):
    """A command that imports an extra's module without declaring it."""
    def run(args):
        raise ModuleNotFoundError("No module named 'matplotlib'",
                                  name='matplotlib')
    parser = cli.build_parser()
    args = parser.parse_args(['profile', 'list'])
    monkeypatch.setattr(cli, 'build_parser', lambda: types.SimpleNamespace(
        parse_args=lambda argv: types.SimpleNamespace(
            **dict(vars(args), _run=run))))
    assert cli.main(['profile', 'list']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['kvmtune: error: kvmtune profile list needs the bench '
                   "extra (missing: matplotlib) (fix: pip install "
                   "'kvmtune[bench]')"]


def test_other_missing_module_is_an_internal_error(monkeypatch, capsys):
    def run(args):
        raise ModuleNotFoundError("No module named 'foo'", name='foo')
    parser = cli.build_parser()
    args = parser.parse_args(['profile', 'list'])
    monkeypatch.setattr(cli, 'build_parser', lambda: types.SimpleNamespace(
        parse_args=lambda argv: types.SimpleNamespace(
            **dict(vars(args), _run=run))))
    assert cli.main(['profile', 'list']) == cli.INTERNAL_ERROR
    assert 'internal error: ModuleNotFoundError' in capsys.readouterr().err


@pytest.mark.parametrize('argv', [
    ['export', '--profile', 'cpu-pinning', '--target', 'kolla',
     '--target', 'helm', '--output', 'out'],
    ['export', '--profile', 'cpu-pinning', '--target', 'kolla',
     '--host', 'a', '--host', 'b', '--output', 'out'],
    ['nova-conf', 'apply', '--profile', 'io-tuned', '--config', 'n.conf',
     '--service', 'compute', '--service', 'scheduler'],
    ['plan', '--profile', 'cpu-pinning', '--profile', 'hugepages'],
])
def test_a_single_valued_option_given_twice_is_refused(argv, capsys,
                                                       tmp_path,
                                                       monkeypatch):
    # Before: the last one silently won (issue 26).
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match='^2$') as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert 'given more than once' in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_repeatable_options_still_repeat(capsys, tmp_path):
    first, second = tmp_path / 'a.conf', tmp_path / 'b.conf'
    first.write_text('[DEFAULT]\n')
    second.write_text('[DEFAULT]\n')
    assert cli.main(['--config-file', str(first), '--config-file',
                     str(second), 'profile', 'list']) == 0
    assert 'pinned-hugepages' in capsys.readouterr().out
