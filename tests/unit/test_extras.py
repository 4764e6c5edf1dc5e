"""kvmtune.extras: which modules each extra installs, which of them this
Python lacks, and the one-line error naming the pip install. How the CLI
says an extra is missing is tested in tests/unit/test_cli.py."""

import sys

import pytest

from kvmtune import extras


def test_extras_match_setup_cfg():
    """kvmtune.extras names the extras setup.cfg declares."""
    import configparser

    from tests import paths

    cfg = configparser.ConfigParser()
    cfg.read(f'{paths.REPO}/setup.cfg')
    assert set(cfg['extras']) == set(extras.MODULES)
    bench = cfg['extras']['bench'].split()
    assert any(r.startswith('rally-openstack') for r in bench)
    assert any(r.startswith('numpy') for r in bench)
    assert any(r.startswith('matplotlib') for r in bench)
    with open(f'{paths.REPO}/requirements.txt') as f:
        core = [line.split('>')[0].strip().lower() for line in f
                if line.strip() and not line.startswith('#')]
    assert not {'rally-openstack', 'rally', 'numpy', 'matplotlib'} & \
        set(core)


@pytest.fixture
def blocked(monkeypatch):
    """Make modules unimportable the way a failed import leaves them."""
    def block(*names):
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)
    return block


def test_missing_names_only_what_cannot_be_imported(blocked):
    assert extras.missing('cloud', ['json', 'os']) == []
    blocked('numpy', 'matplotlib')
    assert extras.missing('bench', ['numpy', 'json', 'matplotlib']) == [
        'numpy', 'matplotlib']


def test_missing_checks_every_module_of_the_extra_by_default(blocked):
    blocked(*extras.MODULES['bench'])
    assert extras.missing('bench') == list(extras.MODULES['bench'])


def test_a_module_that_does_not_exist_is_missing():
    assert extras.missing('bench', ['kvmtune_no_such_module_x']) == [
        'kvmtune_no_such_module_x']


def test_require_raises_one_line_with_the_pip_install(blocked):
    blocked('matplotlib')
    with pytest.raises(extras.MissingExtra) as err:
        extras.require('bench', ['json', 'matplotlib'],
                       what='kvmtune report')
    assert err.value.line() == (
        'kvmtune report needs the bench extra (missing: matplotlib) '
        "(fix: pip install 'kvmtune[bench]')")


def test_require_passes_when_installed():
    assert extras.require('cloud', ['json']) is None


@pytest.mark.parametrize('module, extra', [
    ('rally.task.context', 'bench'),
    ('rally_openstack', 'bench'),
    ('numpy', 'bench'),
    ('openstack.connection', 'cloud'),
    ('yaml', None),
    ('rallyx', None),
    ('', None),
    (None, None),
])
def test_extra_of(module, extra):
    assert extras.extra_of(module) == extra


def test_install_hint():
    assert extras.install_hint('cloud') == "pip install 'kvmtune[cloud]'"
