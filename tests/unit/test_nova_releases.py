"""kvmtune.nova_releases: the release table and which release a plan is
for. The table itself is checked against every release by the matrix tier
(tests/matrix); here, how kvmtune reads it."""

import subprocess
import sys

import pytest

from kvmtune import cli
from kvmtune.errors import InputError
from kvmtune import nova_releases
from tests import paths

EPYC = f'{paths.HOSTS}/real/x86_64-epyc_7451'


def test_the_table_names_the_supported_releases():
    assert {29, 31, 33, 34} <= set(nova_releases.known())
    assert nova_releases.newest() == max(nova_releases.known())
    release = nova_releases.Release(29)
    assert release.nova.startswith('29.')
    assert release.label == 'Nova 29 (2024.1 Caracal)'


def test_what_a_release_has():
    caracal = nova_releases.Release(29)
    fallback = caracal.option('workarounds', 'disable_fallback_pcpu_query')
    # Nova 29's nova/conf/workarounds.py: deprecated_for_removal=True,
    # deprecated_since='20.0.0'; read by nova/scheduler/manager.py.
    assert fallback['exists'] and fallback['deprecated_for_removal']
    assert fallback['deprecated_since'] == '20.0.0'
    assert fallback['read_in'] == ['nova/scheduler/manager.py']
    assert caracal.option('libvirt', 'no_such_option') is None
    assert caracal.option('libvirt', 'rx_queue_size')['choices'] == [
        '1024', '256', '512']
    assert caracal.default_filters()[0] == 'ComputeFilter'
    assert caracal.has_filter('NUMATopologyFilter')
    assert caracal.spec('hw:cpu_policy')['enum'] == [
        'dedicated', 'mixed', 'shared']
    assert not caracal.has_feature('libvirt_guest_iothread')
    assert nova_releases.Release(34).has_feature('libvirt_guest_iothread')


def test_precedence(monkeypatch):
    monkeypatch.setattr(nova_releases, '_configured', lambda: 30)
    monkeypatch.setattr(nova_releases, 'installed_major', lambda: 31)
    assert nova_releases.get(29).major == 29        # --nova-release
    assert nova_releases.get().major == 30          # kvmtune.conf
    monkeypatch.setattr(nova_releases, '_configured', lambda: None)
    assert nova_releases.get().major == 31          # installed Nova
    monkeypatch.setattr(nova_releases, 'installed_major', lambda: 99)
    assert nova_releases.get().major == nova_releases.newest()
    monkeypatch.setattr(nova_releases, 'installed_major', lambda: None)
    assert nova_releases.get().major == nova_releases.newest()


@pytest.mark.parametrize('given', [28, 99, 'caracal'])
def test_an_unknown_release_is_one_line(given):
    with pytest.raises(InputError, match='kvmtune knows Nova 29 to') as info:
        nova_releases.get(given)
    assert info.value.source == '--nova-release'


def test_an_unknown_installed_nova_names_its_source(monkeypatch):
    monkeypatch.setattr(nova_releases, '_configured', lambda: None)
    monkeypatch.setattr(nova_releases, 'installed_major', lambda: 20)
    with pytest.raises(InputError, match='not 20') as info:
        nova_releases.get()
    assert info.value.source == 'the Nova installed here'


def test_installed_major_in_a_python_without_nova():
    # kvmtune's own Python has no Nova (Nova lives in its own venv).
    code = ('from kvmtune import nova_releases; '
            'print(nova_releases.installed_major())')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, cwd=paths.REPO, check=True)
    assert done.stdout.strip() in ('None', *map(str, range(1, 100)))


@pytest.fixture
def reset_conf():
    # kvmtune.conf is parsed into one global ConfigOpts: parse it again
    # without the test's file, so later plans are not for its release.
    from kvmtune import conf
    yield
    conf.load([])


def test_cli_release_from_kvmtune_conf_and_argument(tmp_path, capsys,
                                                    reset_conf):
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text('[nova]\nrelease = 30\n')
    assert cli.main(['--config-file', str(conf), 'plan', '--profile',
                     'io-tuned', '--root', EPYC]) == 0
    out = capsys.readouterr().out
    assert 'for Nova 30\n' in out
    assert 'Nova 30 (2024.2 Dalmatian) gives libvirt guests no I/O ' \
        'thread' in out
    assert cli.main(['--config-file', str(conf), 'plan', '--profile',
                     'io-tuned', '--root', EPYC, '--nova-release',
                     '34']) == 0
    out = capsys.readouterr().out
    assert 'for Nova 34\n' in out and 'already gives every libvirt ' \
        'guest one I/O thread' in out


def test_cli_unknown_release_exits_2_with_one_line(capsys):
    assert cli.main(['plan', '--profile', 'cpu-pinning', '--root', EPYC,
                     '--nova-release', '28']) == 2
    captured = capsys.readouterr()
    assert captured.out == ''
    assert captured.err.count('\n') == 1
    assert 'kvmtune knows Nova 29 to' in captured.err


def test_the_table_covers_every_option_and_spec_a_tuner_plans():
    # A tuner that plans a new option needs the table rewritten
    # (tools/nova-matrix --write-table), else no release is asked.
    from kvmtune.tuning import tuners

    options, specs = set(), set()
    for name in tuners.names():
        cls = tuners.get(name)
        options.update(f'{s}.{o}' for s, o in (*cls.NOVA_CONF,
                                               *cls.NOVA_CONF_OPTIONS))
        specs.update(cls.OWNED_EXTRA_SPECS, cls.EXTRA_SPECS)
    assert options <= set(nova_releases.table()['options'])
    assert specs <= set(nova_releases.table()['specs'])
