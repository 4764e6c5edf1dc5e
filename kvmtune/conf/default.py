"""kvmtune's [DEFAULT] options."""

from typing import Any

from oslo_config import cfg

default_opts = [
    cfg.ListOpt(
        'profile_dirs',
        default=[],
        help="""
Directories holding more tuning profiles (``<name>.yaml``).

kvmtune first reads the profiles it ships (``kvmtune/data/profiles``,
package data), then these directories in order; a profile in a later
directory replaces one of the same name from an earlier one, so a site can
adjust a shipped profile by copying it here.

Possible values:

* A comma-separated list of directory paths; empty (the default) uses only
  the shipped profiles.

Related options:

* None; ``kvmtune profile list`` shows what is found and where.
"""),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(default_opts)


def list_opts() -> list[tuple[Any, list[cfg.Opt]]]:
    return [('DEFAULT', default_opts)]
