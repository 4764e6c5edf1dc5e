"""kvmtune.conf.nova_release: [nova] release, read from a kvmtune.conf."""

from oslo_config import cfg
import pytest

from kvmtune import conf as kvmtune_conf
from kvmtune.conf import nova
from kvmtune.conf import nova_release


def _load(tmp_path, text):
    path = tmp_path / 'kvmtune.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    kvmtune_conf.register_opts(conf)
    conf(args=[], project='kvmtune', default_config_files=[str(path)],
         validate_default_values=True)
    return conf


def test_release_joins_the_nova_group(tmp_path):
    conf = _load(tmp_path, '[nova]\nrelease = 31\n')
    assert conf.nova.release == 31
    # The group's other options are still there, in one group.
    assert conf.nova.config_file == '/etc/nova/nova.conf'
    groups = [group for group, _ in kvmtune_conf.list_opts()
              if getattr(group, 'name', group) == 'nova']
    assert groups == [nova.nova_group]
    names = [opt.name for group, opts in kvmtune_conf.list_opts()
             if group is nova.nova_group for opt in opts]
    assert 'release' in names and 'python_executable' in names


def test_release_defaults_to_unset(tmp_path):
    assert _load(tmp_path, '[nova]\n').nova.release is None
    assert nova_release.list_opts()[0][1][0].default is None


def test_a_release_that_is_not_a_number_is_refused(tmp_path):
    conf = _load(tmp_path, '[nova]\nrelease = caracal\n')
    with pytest.raises(cfg.ConfigFileValueError, match='caracal'):
        conf.nova.release
