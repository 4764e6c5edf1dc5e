"""Tuners: one plugin per tuning concern (stevedore ``kvmtune.tuners``).

Profiles name tuners by their entry-point names; see base.Tuner for what a
tuner declares.
"""

from kvmtune.errors import InputError

NAMESPACE = 'kvmtune.tuners'


def _manager():
    from stevedore import extension
    return extension.ExtensionManager(NAMESPACE, invoke_on_load=False)


def names():
    """The installed tuners' names, sorted."""
    return sorted(_manager().names())


def get(name, source=None, key=None):
    """The tuner class called ``name``; InputError lists the known ones."""
    manager = _manager()
    if name not in manager.names():
        raise InputError(f'unknown tuner {name!r}', source=source, key=key,
                         fix='known tuners: ' + ', '.join(
                             sorted(manager.names())))
    return manager[name].plugin
