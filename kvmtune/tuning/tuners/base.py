"""What every tuner is: declarations, and a little logic where the host
decides.

A tuner (one per concern; stevedore namespace ``kvmtune.tuners``) says
in class attributes which parameters a profile may
give it, which flavor extra specs it sets and owns, which nova.conf options,
kernel arguments and kvm module options it wants, and which host checks it
runs. Values are templates over the parameters (``'{policy}'``) or
``FromHost('method')`` when the host's facts decide them; a template naming a
parameter that is unset (``None``) leaves the item out.
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
import dataclasses
import re
import string
from typing import Any
from typing import cast
from typing import TYPE_CHECKING
from typing import TypedDict
from typing import TypeVar

from kvmtune.errors import InputError
from kvmtune.facts import cmdline
from kvmtune.facts.types import Facts
from kvmtune.facts.types import NumaNode
from kvmtune import inputs
from kvmtune.tuning import extra_specs as specs
from kvmtune.tuning.tuners import releasefit

if TYPE_CHECKING:
    from kvmtune.nova_releases import Release

PASS = 'pass'
WARN = 'warn'
FAIL = 'fail'

# The kvm module whose options apply, by the CPU's virtualization flag.
HARDWARE_MODULES = (('vmx', 'kvm_intel'), ('svm', 'kvm_amd'))

# The filter pinning and huge pages need, after the planned release's
# default [filter_scheduler] enabled_filters (nova/conf/scheduler.py, read
# from kvmtune.nova_releases; Tuner.numa_filters); the defaults stay, in
# their order.
NUMA_FILTER = 'NUMATopologyFilter'

# Where a kernel argument goes on Debian/Ubuntu hosts.
KERNEL_ARGS_FIX = ('add {args} to GRUB_CMDLINE_LINUX in /etc/default/grub, '
                   'then update-grub && reboot')

TYPE_NAMES: dict[type, str] = {str: 'a string', int: 'an integer',
                               bool: 'true or false', list: 'a list'}


@dataclasses.dataclass(frozen=True)
class Param:
    """A parameter a profile may set for a tuner."""

    name: str
    type: type = str
    default: object = None
    help: str = ''
    choices: tuple[Any, ...] = ()
    # an extra spec whose rules the value follows
    spec: str | None = None
    min: int | None = None
    max: int | None = None
    # lists: a regex each item must match
    item_pattern: str | None = None

    def convert(self, value: Any, source: object = None,
                key: str | None = None) -> Any:
        """Return the value checked and typed, or raise InputError."""
        key = key or self.name
        if value is None:
            return None
        if self.type is bool:
            ok = isinstance(value, bool)
        elif self.type is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.type is list:
            ok = isinstance(value, list) and all(
                isinstance(item, str) for item in value)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise InputError(
                f'{value!r} is {_type_name(value)}, expected '
                f'{TYPE_NAMES[self.type]}', source=source, key=key,
                fix=self.help_line())
        inputs.plain_text(value, source=source, key=key)
        if self.choices and value not in self.choices:
            raise InputError(
                f'{value!r} is not valid', source=source, key=key,
                fix='valid values: ' + ', '.join(map(str, self.choices)))
        if self.min is not None and value < self.min:
            raise InputError(f'{value} is too small', source=source,
                             key=key, fix=f'give {self.min} or more')
        if self.max is not None and value > self.max:
            raise InputError(f'{value} is too large', source=source,
                             key=key, fix=f'give {self.max} or less')
        if self.item_pattern:
            for item in value:
                if not re.fullmatch(self.item_pattern, item):
                    raise InputError(
                        f'{item!r} is not valid', source=source, key=key,
                        fix=f'each item must match {self.item_pattern}')
        if self.spec:
            specs.validate(self.spec, value, source=source, key=key)
        return list(value) if self.type is list else value

    def help_line(self) -> str | None:
        return ' '.join(self.help.split()) or None


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return 'a boolean'
    for kind, name in TYPE_NAMES.items():
        if isinstance(value, kind):
            return name
    return 'a mapping' if isinstance(value, dict) else type(value).__name__


@dataclasses.dataclass(frozen=True)
class FromHost:
    """A value the tuner's method ``name`` derives from the host facts."""

    method: str


@dataclasses.dataclass(frozen=True)
class FromRelease(FromHost):
    """A value the tuner's method ``name`` derives from the Nova release
    the plan is for (``Tuner.release``)."""


class TunerCheckDict(TypedDict):
    """A check in a plan's JSON (doc/design.md 4)."""

    tuner: str
    name: str
    status: str
    message: str
    fix: str | None


@dataclasses.dataclass
class TunerCheck:
    """A tuner's host check on the facts: ``pass``, ``warn`` or ``fail``
    (kvmtune.verify.Check is the other kind: planned against live)."""
    tuner: str
    name: str
    status: str
    message: str
    fix: str | None = None
    # the kernel arguments the fix stages (kernel_args_fix): a FAIL the
    # plan's own boot-time changes clear (kvmtune.tuning.failed); not part
    # of the plan's JSON
    boot_args: tuple[str, ...] = dataclasses.field(default=(),
                                                   compare=False)

    def to_dict(self) -> TunerCheckDict:
        return TunerCheckDict(tuner=self.tuner, name=self.name,
                              status=self.status, message=self.message,
                              fix=self.fix)


# What a check method returns: (status, message, fix) or None when the
# check is not relevant with the tuner's params.
CheckOutcome = tuple[str, str, str | None] | None
_F = TypeVar('_F', bound=Callable[..., CheckOutcome])


def check(name: str) -> Callable[[_F], _F]:
    """Mark a tuner method as the host check ``name``.

    The method returns ``(status, message, fix)``; fix is one line an
    operator can run or follow, or None when nothing is to be done.
    """
    def mark(func: _F) -> _F:
        func.check_name = name  # type: ignore[attr-defined]
        return func
    return mark


def module_reload_fix(module: str, option: str) -> str:
    """One line that sets a kvm module option and reloads the module."""
    return (f'echo "options {module} {option}" >> '
            f'/etc/modprobe.d/kvm.conf && modprobe -r {module} && '
            f'modprobe {module}')


def render(value: object) -> str:
    """nova.conf and extra-spec text for a Python value."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


class Tuner:
    """Base of the tuners; subclasses fill in the declarations."""

    name: str = None  # type: ignore[assignment]  # every tuner sets it
    description = ''
    PARAMS: tuple[Param, ...] = ()
    OWNED_EXTRA_SPECS: tuple[str, ...] = ()
    # extra spec name -> template | FromHost
    EXTRA_SPECS: dict[str, str | FromHost] = {}
    # (section, option) -> template | FromHost
    NOVA_CONF: dict[tuple[str, str], str | FromHost] = {}
    # Options a tuner plans from code (wanted_nova_conf) instead of
    # NOVA_CONF: the release matrix describes them too.
    NOVA_CONF_OPTIONS: tuple[tuple[str, str], ...] = ()
    # templates | FromHost (returning a list)
    KERNEL_ARGS: tuple[str | FromHost, ...] = ()
    # kvm module -> {option: template}
    MODPROBE: dict[str, dict[str, str | FromHost]] = {}
    NOTES: tuple[str, ...] = ()
    # nova.conf options the tuner leaves out, with a note, for a Nova
    # release that lacks them (or no longer reads them): {key: why the
    # plan is whole without it}. Any other option a release lacks makes
    # the profile unavailable for that release.
    OPTIONAL_NOVA_CONF: dict[tuple[str, str], str] = {}
    # The kvmtune.nova_releases.Release the plan is for; None: the newest
    # release kvmtune knows. kvmtune.tuning.plan.build_plan sets it.
    release: 'Release | None' = None

    def __init__(self, params: dict[str, Any] | None = None,
                 facts: Facts | None = None,
                 source: str | None = None) -> None:
        self.source = source
        self.params = self.parse_params(params or {}, source)
        self.facts = cast(Facts, facts or {})
        # fix text -> the kernel arguments it stages (kernel_args_fix)
        self._boot_fixes: dict[str, tuple[str, ...]] = {}

    @classmethod
    def parse_params(cls, given: Any,
                     source: str | None = None) -> dict[str, Any]:
        """Check a profile's params for this tuner; fill in defaults."""
        if not isinstance(given, dict):
            raise InputError(f'params must be a mapping, not '
                             f'{_type_name(given)}', source=source,
                             key=f'{cls.name}.params',
                             fix='give params as name: value lines (kvmtune '
                                 'profile show lists them)')
        declared = {param.name: param for param in cls.PARAMS}
        for name in given:
            if name not in declared:
                raise InputError(
                    f'unknown parameter {name!r}', source=source,
                    key=f'{cls.name}.params',
                    fix='known parameters: ' + (', '.join(declared)
                                                or 'none'))
        values: dict[str, Any] = {}
        for name, param in declared.items():
            value = given.get(name, param.default)
            values[name] = param.convert(value, source=source,
                                         key=f'{cls.name}.params.{name}')
        return values

    # -- facts ---------------------------------------------------------

    def fact(self, path: str, default: Any = None) -> Any:
        """The fact at a dotted path (``'cpu.vendor'``), or ``default``."""
        value: Any = self.facts
        for part in path.split('.'):
            if not isinstance(value, dict) or value.get(part) is None:
                return default
            value = value[part]
        return value

    def kernel_args_fix(self, args: list[str]) -> str:
        """The fix for kernel arguments the booted line does not give
        (kvmtune.facts.cmdline.changes: add, or replace what is there)."""
        fix = (cmdline.changes(args, cmdline.read(
            self.fact('kernel.cmdline', ''))) + ' on the kernel command '
            'line (kvmtune boot apply --profile P stages it: one argument '
            'per key), then reboot')
        self._boot_fixes[fix] = tuple(args)
        return fix

    def numa_nodes(self) -> list[NumaNode]:
        """Host NUMA nodes; a host without NUMA data is one node 0."""
        nodes = self.fact('numa.nodes') or []
        if nodes:
            return sorted(nodes, key=lambda node: node['id'])
        return [cast(NumaNode, {
            'id': 0, 'cpus': list(self.fact('cpu.online', [])),
            'hugepages': self.fact('memory.hugepages', [])})]

    def has_flag(self, flag: str) -> bool | None:
        """True or False when the CPU's flags are known, None when its
        cpuinfo could not be read (facts ``cpu.flags`` is null)."""
        flags = self.fact('cpu.flags')
        return None if flags is None else flag in flags

    def hardware_module(self) -> str | None:
        """kvm_intel or kvm_amd when the CPU has VT-x/AMD-V, else None.
        With unknown flags, the loaded vendor module tells (facts
        ``virt.mechanism``)."""
        mechanism = self.fact('virt.mechanism')
        for flag, module in HARDWARE_MODULES:
            if self.has_flag(flag) or (self.has_flag(flag) is None and
                                       mechanism == flag):
                return module
        return None

    # -- what the tuner wants -------------------------------------------

    def _resolve(self, value: str | FromHost) -> Any:
        if isinstance(value, FromHost):
            return getattr(self, value.method)()
        fields = [field for _, field, _, _ in string.Formatter().parse(value)
                  if field]
        if any(self.params[field] is None for field in fields):
            return None
        return value.format(**{field: render(self.params[field])
                               for field in fields})

    def _resolved(self, declarations: Mapping[Any, str | FromHost]
                  ) -> Iterator[tuple[Any, Any]]:
        for key, template in declarations.items():
            value = self._resolve(template)
            if value is not None:
                yield key, value

    def extra_specs(self) -> dict[str, str]:
        return {name: render(value)
                for name, value in self._resolved(self.EXTRA_SPECS)}

    def wanted_nova_conf(self) -> dict[tuple[str, str], str | list[str]]:
        """{(section, option): value} before fitting it to the release."""
        return {key: value if isinstance(value, list) else render(value)
                for key, value in self._resolved(self.NOVA_CONF)}

    def nova_conf(self) -> dict[tuple[str, str], str | list[str]]:
        return self.fit_release(self.wanted_nova_conf())[0]

    # -- the Nova release ------------------------------------------------

    def nova_release(self) -> 'Release':
        from kvmtune import nova_releases
        if self.release is None:
            self.release = nova_releases.Release(nova_releases.newest())
        return self.release

    def numa_filters(self) -> str:
        """The release's default filters plus NUMATopologyFilter."""
        filters = self.nova_release().default_filters()
        if NUMA_FILTER not in filters:
            filters.append(NUMA_FILTER)
        return ','.join(filters)

    def fit_release(self, wanted: dict[tuple[str, str], Any]
                    ) -> tuple[dict[tuple[str, str], Any], list[str],
                               list[str]]:
        """(nova.conf values, notes, what is unavailable) for the release
        (kvmtune.tuning.tuners.releasefit.fit_options)."""
        return releasefit.fit_options(self.nova_release(), wanted,
                                      self.OPTIONAL_NOVA_CONF)

    def fit_specs(self, specs: dict[str, str]) -> list[str]:
        """What of ``specs`` the release's validators refuse (list)."""
        return releasefit.fit_specs(self.nova_release(), specs)

    def unavailable(self) -> list[str]:
        """What the release lacks of what this tuner needs (lines)."""
        return (self.fit_release(self.wanted_nova_conf())[2]
                + self.fit_specs(self.extra_specs()))

    def kernel_args(self) -> list[str]:
        args: list[str] = []
        for template in self.KERNEL_ARGS:
            value = self._resolve(template)
            if isinstance(value, list):
                args.extend(value)
            elif value is not None:
                args.append(value)
        return args

    def modprobe(self) -> dict[str, dict[str, Any]]:
        """{module: {option: value}} for this host's kvm module."""
        module = self.hardware_module()
        if module not in self.MODPROBE:
            return {}
        return {module: dict(self._resolved(self.MODPROBE[module]))}

    def checks(self) -> list[TunerCheck]:
        results = []
        for attr in vars(type(self)).values():
            name = getattr(attr, 'check_name', None)
            if name is None:
                continue
            outcome = attr(self)
            if outcome is None:  # not relevant with these params
                continue
            status, message, fix = outcome
            results.append(TunerCheck(
                self.name, name, status, message, fix,
                boot_args=self._boot_fixes.get(fix or '', ())))
        return results

    def notes(self) -> list[str]:
        return list(self.NOTES) + self.fit_release(
            self.wanted_nova_conf())[1]
