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
        "(fix: in a kvmtune clone, pip install '.[bench]'; elsewhere, the "
        'wheel built in the clone by pip wheel --no-deps -w dist .: pip '
        "install 'kvmtune-VERSION-py3-none-any.whl[bench]')")


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
    assert extras.install_hint('cloud') == (
        "in a kvmtune clone, pip install '.[cloud]'; elsewhere, the wheel "
        'built in the clone by pip wheel --no-deps -w dist .: pip install '
        "'kvmtune-VERSION-py3-none-any.whl[cloud]'")


def _readme_install():
    """README.md's "## Install" section."""
    from tests import paths

    with open(f'{paths.REPO}/README.md', encoding='utf-8') as f:
        text = f.read()
    section = text.split('\n## Install\n', 1)[1].split('\n## ', 1)[0]
    assert 'pip install' in section
    return section


@pytest.mark.parametrize('extra', sorted(extras.MODULES))
def test_install_hint_is_what_readme_says(extra):
    """Every command the hint names is in README's Install section (the
    wheel line there shows the bench extra), and none names a package
    registry's kvmtune (there is none)."""
    section = _readme_install()
    hint = extras.install_hint(extra)
    assert f"pip install '.[{extra}]'" in hint
    assert f"pip install '.[{extra}]'" in section
    assert 'pip wheel --no-deps -w dist .' in hint
    assert 'pip wheel --no-deps -w dist .' in section
    wheel = "pip install 'kvmtune-VERSION-py3-none-any.whl[{}]'"
    assert wheel.format(extra) in hint
    assert wheel.format('bench') in section
    assert 'kvmtune[' not in hint
