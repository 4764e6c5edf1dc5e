"""Tuners: one plugin per tuning concern.

stevedore loads them from the entry-point namespace ``kvmtune.tuners``.

Profiles name tuners by their entry-point names; see base.Tuner for what a
tuner declares.
"""

from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError

if TYPE_CHECKING:
    from kvmtune.tuning.tuners.base import Tuner

NAMESPACE = 'kvmtune.tuners'


def _manager() -> Any:
    from stevedore import extension
    return extension.ExtensionManager(NAMESPACE, invoke_on_load=False)


def names() -> list[str]:
    """The installed tuners' names, sorted."""
    return sorted(_manager().names())


def get(name: str, source: object = None,
        key: str | None = None) -> type['Tuner']:
    """The tuner class called ``name``; InputError lists the known ones."""
    manager = _manager()
    if name not in manager.names():
        raise InputError(f'unknown tuner {name!r}', source=source, key=key,
                         fix='known tuners: ' + ', '.join(
                             sorted(manager.names())))
    plugin: type[Tuner] = manager[name].plugin
    return plugin
