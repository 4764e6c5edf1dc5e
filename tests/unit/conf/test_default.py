"""kvmtune.conf.default: [DEFAULT] profile_dirs, read from a kvmtune.conf
(how profiles use it: tests/unit/cmd/test_profile_list.py)."""

from oslo_config import cfg

from kvmtune import conf as kvmtune_conf
from kvmtune.conf import default


def load(tmp_path, text):
    path = tmp_path / 'kvmtune.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    default.register_opts(conf)
    conf(args=[], project='kvmtune', default_config_files=[str(path)],
         validate_default_values=True)
    return conf


def test_profile_dirs_default_to_none(tmp_path):
    assert load(tmp_path, '[DEFAULT]\n').profile_dirs == []


def test_profile_dirs_is_a_comma_separated_list_in_order(tmp_path):
    conf = load(tmp_path, '[DEFAULT]\nprofile_dirs = /srv/b, /srv/a\n')
    assert conf.profile_dirs == ['/srv/b', '/srv/a']


def test_listed_first_for_the_sample(tmp_path):
    assert default.list_opts() == [('DEFAULT', default.default_opts)]
    group, opts = kvmtune_conf.list_opts()[0]
    assert group == 'DEFAULT'
    assert [opt.name for opt in opts] == ['profile_dirs']
