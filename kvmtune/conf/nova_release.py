"""kvmtune's [nova] release option: the Nova release plans are made for.

It joins the [nova] group of kvmtune/conf/nova.py (the same OptGroup
object, so oslo.config and the sample generator see one group).
"""

from typing import Any

from oslo_config import cfg

from kvmtune.conf import nova

release_opts = [
    cfg.IntOpt(
        'release',
        default=None,
        min=1,
        help="""
The Nova release (its major version: 29 is 2024.1 Caracal) that plans,
``nova-conf apply``, exports and flavors are made for.

kvmtune plans only the nova.conf options, values and flavor extra specs
that release has; where the release lacks something a profile needs, the
command stops with one line naming the release and the option. The
``--nova-release`` argument takes precedence over this option.

Possible values:

* Unset (the default): the Nova importable in kvmtune's own Python, else
  the newest release kvmtune knows.
* A release kvmtune knows (user guide, "Nova releases"; ``kvmtune plan
  --nova-release 0`` lists them in its error).

Related options:

* ``python_executable``: the Nova that checks values before they are
  written; it should be the same release.
"""),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(nova.nova_group)
    conf.register_opts(release_opts, group=nova.nova_group)


def list_opts() -> list[tuple[Any, list[cfg.Opt]]]:
    return [(nova.nova_group, release_opts)]
