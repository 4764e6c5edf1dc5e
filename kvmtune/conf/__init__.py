"""kvmtune's own options, one module per option group (as nova/conf/ does).

Every module in this package defines ``register_opts(conf)`` and
``list_opts()``; they are found by walking the package, so a new group is a
new module and nothing else.
"""

from collections.abc import Iterable
from collections.abc import Iterator
import importlib
import pkgutil
from types import ModuleType
from typing import Any

from oslo_config import cfg

CONF = cfg.ConfigOpts()
DEFAULT_CONFIG_FILES = ['/etc/kvmtune/kvmtune.conf']


def _modules() -> Iterator[ModuleType]:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        yield importlib.import_module(f'{__name__}.{info.name}')


def register_opts(conf: cfg.ConfigOpts = CONF) -> None:
    for mod in _modules():
        mod.register_opts(conf)


def list_opts() -> list[tuple[Any, list[cfg.Opt]]]:
    """oslo-config-generator's entry point: [(group, [opts])]."""
    merged: dict[Any, list[cfg.Opt]] = {}
    for mod in _modules():
        for group, opts in mod.list_opts():
            merged.setdefault(group, []).extend(opts)

    def name(group: Any) -> str:
        found: str = getattr(group, 'name', group)
        return found

    # DEFAULT first, then by name; a group is a str or an OptGroup.
    return sorted(merged.items(),
                  key=lambda kv: (name(kv[0]) != 'DEFAULT', name(kv[0])))


_registered = False


def load(config_files: Iterable[str] | None = None,
         conf: cfg.ConfigOpts = CONF) -> cfg.ConfigOpts:
    """Register and parse kvmtune.conf; the CLI calls this lazily.

    :param config_files: paths given with --config-file; when empty the
        default /etc/kvmtune/kvmtune.conf is read if it exists.
    """
    import os

    from kvmtune.errors import InputError
    from kvmtune import inputs

    global _registered
    if not _registered:
        register_opts(conf)
        _registered = True
    files = list(config_files or [])
    for path in files:
        # A regular, readable file of sane size (a directory was an
        # internal error, a FIFO would hang oslo.config): the one reader.
        inputs.read_bytes(path, source=path,
                          fix='give a readable kvmtune.conf path')
    if not files:
        files = [p for p in DEFAULT_CONFIG_FILES if os.path.exists(p)]
    try:
        conf(args=[], project='kvmtune', default_config_files=files,
             validate_default_values=True)
    except (cfg.Error, ValueError) as exc:
        raise InputError(str(exc), source=', '.join(files) or 'kvmtune.conf',
                         fix='correct the option as its help text says')
    return conf
