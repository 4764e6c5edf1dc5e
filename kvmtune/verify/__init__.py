"""Did the tuning take effect? The plan against what runs, layer by layer.

``run(plans, ctx, layers)`` asks each layer module for its checks and
returns them in layer order. A layer module (``kvmtune.verify.<layer>``)
has one function, ``checks(plans, ctx) -> [Check]``; it never raises for
what it cannot see (no nova-compute process, no libvirt, no credentials, a
cloud answering 5xx): it returns an UNKNOWN check with the reason, which
never counts as PASS. It raises KvmtuneError only for bad input (a
``--config-file`` that is not a file, a plan of the wrong shape).

Layers (doc/design.md section 9.5):

  host         booted kernel command line, huge page pools per node and
               size, KVM module parameters, vhost_net, tuned
  novacompute  the running nova-compute's effective options (its
               /proc/<pid>/cmdline, oslo.config's order), restart needed
  cloud        this host's resource provider (PCPU/VCPU totals, traits),
               the profiles' flavors (extra specs), read-only API
  guests       the libvirt domain XML Nova wrote for this host's instances

A host's verdict comes from that host alone: with ``ctx.origin`` set
(``--root TREE`` of another host, or ``--facts FILE``) no layer reads this
machine's processes, files or libvirt; what the given files cannot tell is
UNKNOWN naming the flag that gives it.

The command (``kvmtune verify``) prints the checks as a table, ``-f json``
or a Prometheus textfile, and exits 0 in sync, 1 on DRIFT, 2 on error, 3
when nothing could be checked (no check PASS or DRIFT: every one UNKNOWN,
or none at all). A mix of PASS and UNKNOWN with no DRIFT exits 0: the
UNKNOWN rows are shown with their reason and counted, but they do not
hide the checks that were made (``exit_code``).
"""

from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
import importlib
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK
from kvmtune.errors import EXIT_UNCHECKED

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts
    from kvmtune.tuning.plan import Plan

PASS = 'PASS'
DRIFT = 'DRIFT'
UNKNOWN = 'UNKNOWN'
STATUSES = (PASS, DRIFT, UNKNOWN)

# In the order an operator reads them: what the kernel booted with, what
# the service runs with, what the cloud believes, what guests got.
LAYERS = ('host', 'novacompute', 'cloud', 'guests')


@dataclasses.dataclass
class Check:
    """One comparison of a planned value against the live one.

    ``expected`` and ``live`` are strings as an operator would type them
    (``live`` is None when it could not be read: then ``status`` is
    UNKNOWN and ``reason`` says why). ``fix`` is one line to run or follow
    when the status is DRIFT.
    """
    layer: str
    name: str
    expected: str
    live: str | None = None
    status: str = UNKNOWN
    fix: str | None = None
    reason: str | None = None
    host: str | None = None
    profile: str | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f'status {self.status!r} not in {STATUSES}')

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def compare(layer: str, name: str, expected: str, live: str | None,
            fix: str | None, **where: Any) -> Check:
    """A Check that is PASS when ``live == expected``, else DRIFT."""
    status = PASS if live == expected else DRIFT
    return Check(layer=layer, name=name, expected=expected, live=live,
                 status=status, fix=None if status == PASS else fix,
                 **where)


def unknown(layer: str, name: str, expected: str, reason: str,
            **where: Any) -> Check:
    """A Check that could not be made, and why."""
    return Check(layer=layer, name=name, expected=expected, live=None,
                 status=UNKNOWN, reason=reason, **where)


@dataclasses.dataclass
class Context:
    """What the layers may read; None means "find it on this host".

    root          the filesystem root for /proc and /sys (a capture)
    config_files  nova-compute's --config-file list, given explicitly
                  (containers: kolla's files under /etc/kolla/nova-compute)
    config_dirs   likewise for --config-dir
    service       'compute' or 'scheduler': whose options to check
    cloud         a kvmtune.openstack.connection.Cloud, or None (no cloud
    layer) libvirt_uri   libvirt's URI (default qemu:///system, read-only)
    host          this compute's name in Nova (default: its hostname)
    facts         the host facts the plans were built from, when known
    domains       [(source, domain XML)] given instead of reading libvirt
    origin        None: the host is this machine (no --root or --facts, or
                  --root /); '--root': another host's tree at ``root``;
                  '--facts': another host known only by ``facts`` (no
                  tree: ``root`` is unused). Either way no layer reads
                  this machine's processes, files or libvirt
    """
    root: str = '/'
    config_files: list[str] | None = None
    config_dirs: list[str] | None = None
    service: str = 'compute'
    cloud: Any = None
    libvirt_uri: str | None = None
    host: str | None = None
    facts: 'Facts | None' = None
    domains: list[tuple[str, str]] | None = None
    origin: str | None = None

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f'origin {self.origin!r} not in {ORIGINS}')

    @property
    def elsewhere(self) -> bool:
        """The host is not this machine: its processes, libvirt and
        files are not here."""
        return self.origin is not None

    @property
    def has_tree(self) -> bool:
        """``root`` holds the host's files (this machine's /, or a
        tree); False with --facts."""
        return self.origin != FACTS_ONLY


FACTS_ONLY = '--facts'
ORIGINS = (None, '--root', FACTS_ONLY)


def origin_of(root: str | None, facts_file: str | None) -> str | None:
    """``Context.origin`` for the --root / --facts a command was given
    (``--root /`` is this machine: kvmtune.facts.is_live)."""
    from kvmtune.facts import is_live

    if facts_file is not None:
        return FACTS_ONLY
    if root is not None and not is_live(root):
        return '--root'
    return None


def run(plans: Sequence['Plan'], ctx: Context,
        layers: Iterable[str] = LAYERS) -> list[Check]:
    """Every layer's checks for ``plans`` (kvmtune.tuning.plan.Plan
    objects)."""
    found: list[Check] = []
    for layer in layers:
        if layer not in LAYERS:
            raise ValueError(f'unknown layer {layer!r}')
        module = importlib.import_module(f'kvmtune.verify.{layer}')
        found.extend(module.checks(plans, ctx))
    return found


def checked(checks: Iterable[Check]) -> bool:
    """Something was checked: a check is PASS or DRIFT."""
    return any(check.status in (PASS, DRIFT) for check in checks)


def exit_code(checks: Iterable[Check]) -> int:
    """1 when anything drifted; else 3 (EXIT_UNCHECKED) when nothing
    could be checked (every check UNKNOWN, or none); else 0. A mix of
    PASS and UNKNOWN is 0: UNKNOWN is not drift, and not a pass either
    (the table and the textfile's UNKNOWN count say why), but it does not
    undo the checks that passed."""
    checks = list(checks)
    if any(check.status == DRIFT for check in checks):
        return EXIT_DIFFERS
    return EXIT_OK if checked(checks) else EXIT_UNCHECKED
