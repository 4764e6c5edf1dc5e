"""The optional parts of kvmtune (setup.cfg [extras]) and how a command
says that one is missing.

kvmtune without extras is what a compute host needs: facts, plan, apply,
export, flavors, traits. The ``bench`` extra adds Rally and the plots (the
sweeps, ``kvmtune report``, the main job), ``cloud`` the
single-host test cloud. A command that needs an extra checks for it before it
starts, and a missing one is one line naming the ``pip install`` to run:
install_hint, the one place for that text. kvmtune is on no package
registry, so it is README's "Install": from a clone, or a wheel built in
one.
"""

from collections.abc import Sequence
import importlib.util

from kvmtune.errors import KvmtuneError

# extra -> the top-level modules it installs (as setup.cfg [extras] lists
# the distributions: rally-openstack brings rally and rally_openstack).
MODULES = {
    'bench': ('rally', 'rally_openstack', 'numpy', 'matplotlib'),
    'cloud': ('openstack',),
    # the fleet rollout's controller: ansible-core's programs
    # (kvmtune.rollout.inventory finds them on PATH or beside this Python)
    'fleet': ('ansible',),
}


class MissingExtra(KvmtuneError):
    """A command needs an extra that is not installed."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        # ValueError: sys.modules holds None (an import that failed, or a
        # module blocked on purpose)
        return False


def missing(extra: str, modules: Sequence[str] | None = None) -> list[str]:
    """The extra's modules (or those of them given) this Python cannot
    import; none: installed."""
    return [m for m in (modules or MODULES[extra]) if not _installed(m)]


def install_hint(extra: str) -> str:
    """How to install kvmtune with ``extra``, as README's "Install" says
    (kvmtune is on no package registry)."""
    return (f"in a kvmtune clone, pip install '.[{extra}]'; elsewhere, the "
            "wheel built in the clone by pip wheel --no-deps -w dist .: "
            f"pip install 'kvmtune-VERSION-py3-none-any.whl[{extra}]'")


def require(extra: str, modules: Sequence[str] | None = None,
            what: str = 'kvmtune') -> None:
    """Raise MissingExtra naming the pip install when extra is missing.

    :param extra: a key of MODULES
    :param modules: the modules of it needed (default: all of them)
    :param what: who needs it, e.g. "kvmtune report"
    """
    absent = missing(extra, modules)
    if absent:
        raise MissingExtra(f'{what} needs the {extra} extra (missing: '
                           f'{", ".join(absent)})', fix=install_hint(extra))


def extra_of(module_name: str | None) -> str | None:
    """The extra a module (dotted name) belongs to, or None."""
    top = (module_name or '').split('.')[0]
    for extra, modules in MODULES.items():
        if top in modules:
            return extra
    return None
