"""kvmtune.conf.nova: [nova] config_file and python_executable, read from a
kvmtune.conf."""

from oslo_config import cfg

from kvmtune.conf import nova


def load(tmp_path, text):
    path = tmp_path / 'kvmtune.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    nova.register_opts(conf)
    conf(args=[], project='kvmtune', default_config_files=[str(path)],
         validate_default_values=True)
    return conf


def test_defaults(tmp_path):
    group = load(tmp_path, '').nova
    assert group.config_file == '/etc/nova/nova.conf'
    assert group.python_executable == ''


def test_values_from_the_file(tmp_path):
    group = load(tmp_path, '[nova]\nconfig_file = /srv/nova/nova.conf\n'
                           'python_executable = /opt/nova/bin/python\n'
                 ).nova
    assert group.config_file == '/srv/nova/nova.conf'
    assert group.python_executable == '/opt/nova/bin/python'


def test_options_are_in_the_nova_group():
    [(group, opts)] = nova.list_opts()
    assert group is nova.nova_group and group.name == 'nova'
    assert [opt.name for opt in opts] == ['config_file',
                                          'python_executable']
