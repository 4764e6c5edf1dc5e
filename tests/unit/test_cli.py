"""The kvmtune command: every registered command imports (or kvmtune
says it is broken), a command whose extra is missing says which pip
install to run, in one line, and a plugin adds a command through an entry
point but cannot shadow one."""

import os
import re
import subprocess
import sys
import types

import pytest

from kvmtune import cli
from kvmtune import extras
from tests import plugins


def test_every_registered_command_imports():
    loaded = cli.registered()
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
        'numpy, matplotlib) (fix: ' + extras.install_hint('bench') + ')']


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
        'rally, rally_openstack) (fix: ' + extras.install_hint('bench') + ')']


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
    monkeypatch.setattr(cli, 'build_parser', lambda *a: types.SimpleNamespace(
        parse_args=lambda argv: types.SimpleNamespace(
            **dict(vars(args), _run=run))))
    assert cli.main(['profile', 'list']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ['kvmtune: error: kvmtune profile list needs the bench '
                   'extra (missing: matplotlib) (fix: '
                   f"{extras.install_hint('bench')})"]


def test_other_missing_module_is_an_internal_error(monkeypatch, capsys):
    def run(args):
        raise ModuleNotFoundError("No module named 'foo'", name='foo')
    parser = cli.build_parser()
    args = parser.parse_args(['profile', 'list'])
    monkeypatch.setattr(cli, 'build_parser', lambda *a: types.SimpleNamespace(
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
    # Before: the last one silently won.
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


# -- plugins: commands from the kvmtune.cli entry points ------------------

def test_a_plugin_command_is_in_help_and_runs(tmp_path, monkeypatch,
                                              capsys):
    plugins.install(tmp_path, monkeypatch,
                    {'disk_wipe': '{module}:command'})
    with pytest.raises(SystemExit, match='^0$'):
        cli.main(['--help'])
    out, err = capsys.readouterr()
    assert re.search(r'^ +disk +disk commands$', out, re.M), out
    assert err == ''
    with pytest.raises(SystemExit, match='^0$'):
        cli.main(['disk', '--help'])
    out = capsys.readouterr().out
    assert re.search(r'^ +wipe +Wipe a disk \(a test plugin\)\. '
                     r'\[fakeplug 1\.0\]$', out, re.M), out
    with pytest.raises(SystemExit, match='^0$'):
        cli.main(['disk', 'wipe', '--help'])
    out = capsys.readouterr().out
    assert out.startswith('usage: kvmtune disk wipe [-h] --disk DISK')
    assert 'Longer text of its --help.' in out
    assert cli.main(['--debug', 'disk', 'wipe', '--disk', 'sda']) == 0
    assert capsys.readouterr() == ('wiped sda\n', '')


def test_a_builtin_command_does_not_look_for_plugins(tmp_path, monkeypatch,
                                                     capsys):
    """The entry point scan (about 50 ms) is left out when the command
    line names a built-in command: host inspect starts as fast as before.
    The plugin's module marks its import."""
    mark = tmp_path / 'imported'
    plugins.install(tmp_path, monkeypatch,
                    {'disk_wipe': '{module}:command'}, mark=mark)
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text('[DEFAULT]\n')
    assert cli.main(['--config-file', str(conf), 'profile', 'list']) == 0
    assert 'pinned-hugepages' in capsys.readouterr().out
    assert not mark.exists()
    with pytest.raises(SystemExit, match='^0$'):
        cli.main(['-h', 'profile', 'list'])
    assert mark.read_text() == 'imported\n'


@pytest.mark.parametrize('name, shadowed', [
    ('verify', 'verify'),
    ('profile_list', 'profile list'),
    ('host', 'host inspect'),       # the group of built-in commands
    ('cloud_extra', 'cloud'),       # below a built-in command
    ('disk', 'disk wipe'),          # another plugin's (sorted first)
])
def test_a_plugin_command_cannot_shadow_a_command(name, shadowed, tmp_path,
                                                  monkeypatch, capsys):
    module = plugins.install(tmp_path, monkeypatch, {
        name: '{module}:command', 'disk_wipe': '{module}:command'})
    refused = (f'kvmtune: warning: plugin command '
               f'"{name.replace("_", " ")}" ({module}:command, from '
               f'fakeplug 1.0) would shadow "kvmtune {shadowed}"; refused '
               f'(fix: rename it in the kvmtune.cli entry points of '
               f'fakeplug 1.0, or uninstall it)')
    if name == 'disk':
        # "disk" came first: it runs, and "disk wipe" is the one refused
        refused = refused.replace('"disk" (', '"disk wipe" (').replace(
            'shadow "kvmtune disk wipe"', 'shadow "kvmtune disk"')
        assert cli.main(['disk', '--disk', 'sda']) == 0
    else:
        assert cli.main(['disk', 'wipe', '--disk', 'sda']) == 0
    out, err = capsys.readouterr()
    assert out == 'wiped sda\n'
    assert err.splitlines() == [refused]
    if name != 'disk':
        # the built-in one is what runs
        with pytest.raises(SystemExit, match='^0$'):
            cli.main(shadowed.split() + ['--help'])
        out, err = capsys.readouterr()
        assert out.startswith(f'usage: kvmtune {shadowed} ')
        assert 'test plugin' not in out and err == ''


@pytest.mark.parametrize('value, why', [
    ('no_such_module_kvmtune_test:command',
     "ModuleNotFoundError: No module named 'no_such_module_kvmtune_test'"),
    ('{module}:nothing',
     'TypeError: it has no add_arguments(parser) and run(args)'),
    ('{module}:missing', "AttributeError: module '{module}' has no "
                         "attribute 'missing'"),
])
def test_a_plugin_that_does_not_load_is_refused_in_one_line(
        value, why, tmp_path, monkeypatch, capsys):
    module = plugins.install(tmp_path, monkeypatch, {
        'broken': value, 'disk_wipe': '{module}:command'})
    assert cli.main(['disk', 'wipe', '--disk', 'sda']) == 0
    out, err = capsys.readouterr()
    assert out == 'wiped sda\n'
    assert err.splitlines() == [
        f'kvmtune: warning: plugin command "broken" '
        f'({value.format(module=module)}, from fakeplug 1.0) does not '
        f'load: {why.format(module=module)}; refused (fix: reinstall or '
        f'uninstall fakeplug 1.0)']


@pytest.mark.parametrize('argv, builtin', [
    (['host', 'inspect'], True),
    (['host', 'inspect', '-f', 'json'], True),
    (['--config-file', 'x.conf', '--debug', 'plan', '--profile', 'p'], True),
    (['--config-file=x.conf', 'plan'], True),
    (['--config', 'x.conf', '--deb', 'verify'], True),  # argparse prefixes
    (['report', 'a.json', 'b.json'], True),
    (['cloud', 'up'], True),
    (['host', 'inspect', '--help'], True),  # the command's own help
    ([], False),
    (['-h'], False),
    (['--help', 'host', 'inspect'], False),
    (['host'], False),
    (['host', '--help'], False),
    (['host', 'frobnicate'], False),
    (['disk', 'wipe'], False),
    (['--config-file', 'host', 'disk'], False),  # "host" is the file
    (['--nonsense', 'plan'], False),
])
def test_which_command_lines_need_the_plugins(argv, builtin):
    assert cli._names_builtin(argv) is builtin


def test_version_is_the_installed_distributions(capsys):
    """``kvmtune --version``: what pbr wrote into the installed metadata
    (importlib.metadata), exit 0."""
    from importlib import metadata

    import kvmtune

    assert cli.main(['--version']) == 0
    assert capsys.readouterr().out == \
        f'kvmtune {metadata.version("kvmtune")}\n'
    assert kvmtune.__version__ == metadata.version('kvmtune')
    assert cli.main(['--debug', '--version']) == 0


def test_version_outside_an_installed_distribution(monkeypatch):
    from importlib import metadata

    import kvmtune

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, 'version', missing)
    monkeypatch.delattr(kvmtune, '__version__', raising=False)
    assert kvmtune.__version__.startswith('unknown')
    monkeypatch.delattr(kvmtune, '__version__')


def test_every_command_declares_its_exit_statuses():
    """errors.EXIT_CODES (the CLI reference's table) has a row for each
    command and no other, with codes kvmtune.errors defines, 0 and 2 in
    each (done; could not run)."""
    from kvmtune import errors

    assert set(errors.EXIT_CODES) == {tuple(c[0]) for c in cli.COMMANDS}
    for words, codes in errors.EXIT_CODES.items():
        assert set(codes) <= set(errors.EXIT_STATUS), words
        assert {errors.EXIT_OK, errors.EXIT_ERROR} <= set(codes), words
