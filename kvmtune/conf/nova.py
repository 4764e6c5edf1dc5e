"""kvmtune's [nova] options: where this host's Nova and nova.conf are."""

from typing import Any

from oslo_config import cfg

nova_group = cfg.OptGroup(
    'nova', title='Nova on this compute host',
    help='Used by "kvmtune nova-conf apply" and the DevStack plugin.')

nova_opts = [
    cfg.StrOpt(
        'config_file',
        default='/etc/nova/nova.conf',
        help="""
The nova.conf that ``kvmtune nova-conf apply`` edits when ``--config`` is
not given.

Possible values:

* The path of an existing nova.conf (a symbolic link is followed).

Related options:

* ``python_executable``: the Nova whose option definitions check the values.
"""),
    cfg.StrOpt(
        'python_executable',
        default='',
        help="""
A Python interpreter that can ``import nova``, used to check nova.conf values
against Nova's own option definitions before they are written.

kvmtune runs a small checker under this interpreter (Nova's virtualenv, say
``/opt/stack/data/venv/bin/python`` on DevStack) when Nova is not importable
in kvmtune's own Python. The environment variable ``KVMTUNE_NOVA_PYTHON`` and
the ``--nova-python`` argument take precedence over this option.

Possible values:

* Empty (the default): use kvmtune's own Python when it has Nova, else the
  system ``/usr/bin/python3`` when it has Nova, else check with kvmtune's own
  rules only (one notice says so).
* The path of a Python interpreter that can import nova; when it cannot,
  ``kvmtune nova-conf apply`` stops with an error.

Related options:

* ``config_file``
"""),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(nova_group)
    conf.register_opts(nova_opts, group=nova_group)


def list_opts() -> list[tuple[Any, list[cfg.Opt]]]:
    return [(nova_group, nova_opts)]
