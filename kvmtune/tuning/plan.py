"""A profile applied to one host's facts: what to change, and what is wrong.

``build_plan(profile, facts)`` runs each of the profile's tuners on the
facts and merges what they want. Two tuners asking for different values of
one nova.conf option, kernel argument, module option or extra spec is a
mistake in the profile, reported as an InputError; equal values merge.
"""

from collections.abc import Hashable
from collections.abc import Iterable
import dataclasses
from typing import Any
from typing import TYPE_CHECKING
from typing import TypedDict

from kvmtune.errors import InputError
from kvmtune.facts.types import Facts
from kvmtune import inputs
from kvmtune.tuning import extra_specs as specs
from kvmtune.tuning.novaconf import services

if TYPE_CHECKING:
    from kvmtune.nova_releases import Release
    from kvmtune.tuning.profiles import Profile
    from kvmtune.tuning.tuners.base import Tuner
    from kvmtune.tuning.tuners.base import TunerCheck
    from kvmtune.tuning.tuners.base import TunerCheckDict

# nova.conf values are strings; a multi-valued option is a list of them.
NovaConfValue = str | list[str]
# {section: {option: value}}
NovaConf = dict[str, dict[str, NovaConfValue]]


class HugepageRequest(TypedDict):
    """A huge page pool of one NUMA node the plan wants."""

    node: int
    size_kb: int
    count: int


class Note(TypedDict):
    tuner: str
    note: str


class Withheld(TypedDict):
    """A host value a tuner left out: the facts cannot support it."""

    tuner: str
    reason: str


class PlanDict(TypedDict):
    """A plan as JSON (``kvmtune plan -f json``, doc/design.md 4)."""

    profile: str
    facts_source: str | None
    nova_conf: NovaConf
    # {section: {option: [service, ...]}}: who reads each option
    nova_conf_services: dict[str, dict[str, list[str]]]
    kernel_args: list[str]
    modprobe: dict[str, str]
    extra_specs: dict[str, str]
    owned_extra_specs: list[str]
    hugepages: list[HugepageRequest]
    checks: list['TunerCheckDict']
    notes: list[Note]
    withheld: list[Withheld]
    nova_release: int | None


# One file for every kvm module, the name OpenStack-Ansible's os_nova role
# writes (tasks/drivers/kvm/nova_compute_kvm.yml) and kvmtune export uses:
# two files setting options of one module would fight.
MODPROBE_PATH = '/etc/modprobe.d/kvm.conf'


@dataclasses.dataclass
class Plan:
    profile: str
    facts_source: str | None
    nova_conf: NovaConf = dataclasses.field(default_factory=dict)
    kernel_args: list[str] = dataclasses.field(default_factory=list)
    # {path: file content}
    modprobe: dict[str, str] = dataclasses.field(default_factory=dict)
    extra_specs: dict[str, str] = dataclasses.field(default_factory=dict)
    owned_extra_specs: list[str] = dataclasses.field(default_factory=list)
    # [{'node', 'size_kb', 'count'}]: huge page pools per NUMA node and
    # page size, set by kvmtune.tuning.pages.apply.
    hugepages: list[HugepageRequest] = dataclasses.field(
        default_factory=list)
    checks: list['TunerCheck'] = dataclasses.field(default_factory=list)
    notes: list[Note] = dataclasses.field(default_factory=list)
    # [{'tuner', 'reason'}]: host values a tuner left out because the facts
    # cannot support them safely; ``plan`` and ``nova-conf apply`` exit 2.
    withheld: list[Withheld] = dataclasses.field(default_factory=list)
    # The Nova release (major) the plan is for (kvmtune.nova_releases).
    nova_release: int | None = None

    def to_dict(self) -> PlanDict:
        return {
            'profile': self.profile,
            'facts_source': self.facts_source,
            'nova_conf': {section: dict(options) for section, options
                          in self.nova_conf.items()},
            # {section: {option: [service, ...]}}: who reads each option
            # (kvmtune.tuning.novaconf.services, from Nova's source).
            'nova_conf_services': {
                section: {option: list(readers)
                          for option, readers in options.items()}
                for section, options
                in services.tag(self.nova_conf).items()},
            'kernel_args': list(self.kernel_args),
            'modprobe': dict(self.modprobe),
            'extra_specs': dict(self.extra_specs),
            'owned_extra_specs': list(self.owned_extra_specs),
            'hugepages': [HugepageRequest(**pool) for pool in self.hugepages],
            'checks': [check.to_dict() for check in self.checks],
            'notes': list(self.notes),
            'withheld': [Withheld(**item) for item in self.withheld],
            'nova_release': self.nova_release,
        }

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)


class _Merge:
    """Values by key, remembering which tuner set each (for conflicts)."""

    def __init__(self, what: str, source: str) -> None:
        self.what = what
        self.source = source
        self.values: dict[Any, Any] = {}
        self.owners: dict[Hashable, str] = {}

    # key: a str, or a tuple that comes with its label
    def add(self, key: Any, value: Any, tuner: str,
            label: str | None = None) -> None:
        # Whatever a tuner computed (from params or facts) reaches a
        # generated file only on one line.
        inputs.plain_text(value, source=self.source,
                          key=f'{tuner}: {label or key}')
        if key in self.values and self.values[key] != value:
            raise InputError(
                f'tuners {self.owners[key]} and {tuner} set different '
                f'{self.what}: {self.values[key]!r} and {value!r}',
                source=self.source, key=label or key,
                fix='drop one of them from the profile or give them '
                    'matching params')
        self.values.setdefault(key, value)
        self.owners.setdefault(key, tuner)


def _kernel_key(arg: str) -> str:
    return arg.partition('=')[0]


def refuse_unavailable(profile: 'Profile', tuner: 'Tuner') -> None:
    """The one-line InputError when the plan's Nova release lacks what
    ``tuner`` needs (Tuner.unavailable)."""
    lacking = tuner.unavailable()
    if lacking:
        raise InputError(
            f'profile {profile.name} is unavailable: {lacking[0]}, which '
            f'its tuner {tuner.name} needs', source=profile.path,
            key='--nova-release',
            fix='plan for a release that has it (user guide, "Nova '
                'releases"), or drop the tuner from the profile')


def build_plan(profile: 'Profile', facts: Facts,
               release: 'int | str | Release | None' = None) -> Plan:
    """Merge the tuners of ``profile`` (kvmtune.tuning.profiles.Profile) on
    ``facts`` (the design.md section 1 dict) into a Plan for the Nova
    ``release`` (a major, default: kvmtune.nova_releases.get's choice);
    InputError when that release lacks what a tuner needs."""
    from kvmtune import nova_releases

    nova = nova_releases.get(release)
    source = profile.path
    nova_conf = _Merge('nova.conf values', source)
    kernel = _Merge('kernel arguments', source)
    module_options = _Merge('module options', source)
    extra = _Merge('extra spec values', source)
    pools = _Merge('huge page counts', source)
    owned: set[str] = set()
    checks: list[TunerCheck] = []
    notes: list[Note] = []
    withheld: list[Withheld] = []

    for tuner in profile.tuners(facts):
        tuner.release = nova
        for (section, option), value in tuner.nova_conf().items():
            nova_conf.add((section, option), value, tuner.name,
                          label=f'[{section}] {option}')
        for arg in tuner.kernel_args():
            kernel.add(_kernel_key(arg), arg, tuner.name)
        for module, options in tuner.modprobe().items():
            for option, value in options.items():
                module_options.add((module, option), value, tuner.name,
                                   label=f'{module} {option}')
        for name, value in tuner.extra_specs().items():
            specs.validate(name, value, source=source,
                           key=f'{tuner.name}: {name}')
            extra.add(name, value, tuner.name)
        for pool in getattr(tuner, 'hugepage_pools', list)():
            pools.add((pool['node'], pool['size_kb']), pool['count'],
                      tuner.name,
                      label=f'node {pool["node"]} {pool["size_kb"]} kB')
        owned.update(tuner.OWNED_EXTRA_SPECS)
        checks.extend(tuner.checks())
        notes.extend(Note(tuner=tuner.name, note=note)
                     for note in tuner.notes())
        withheld.extend(Withheld(tuner=tuner.name, reason=reason)
                        for reason in getattr(tuner, 'withheld', list)())
        # After kvmtune's own checks, so a value no release accepts is
        # named as such, not as missing from this one.
        refuse_unavailable(profile, tuner)

    plan = Plan(profile=profile.name, facts_source=facts.get('source'),
                nova_release=nova.major)
    for (section, option), value in sorted(
            nova_conf.values.items(),
            key=lambda item: (item[0][0] != 'DEFAULT', item[0][0])):
        plan.nova_conf.setdefault(section, {})[option] = value
    plan.kernel_args = list(kernel.values.values())
    modules: dict[str, list[str]] = {}
    for (module, option), value in module_options.values.items():
        modules.setdefault(module, []).append(f'{option}={value}')
    if modules:
        plan.modprobe = {MODPROBE_PATH: ''.join(
            f'options {module} {" ".join(options)}\n'
            for module, options in modules.items())}
    plan.extra_specs = dict(extra.values)
    plan.hugepages = [HugepageRequest(node=node, size_kb=size_kb,
                                      count=count)
                      for (node, size_kb), count
                      in sorted(pools.values.items())]
    plan.owned_extra_specs = sorted(owned | set(extra.values))
    plan.checks = checks
    plan.notes = notes
    plan.withheld = withheld
    return plan


def refuse_if_withheld(plan: Plan) -> None:
    """Raise the one-line InputError when the plan withheld values: the
    fix is the one of the withholding tuner's failed check (what the
    operator does next), else where to read them."""
    if plan.withheld:
        item = plan.withheld[0]
        fixes = [check.fix for check in plan.checks
                 if check.tuner == item['tuner'] and check.status == 'fail'
                 and check.fix]
        raise InputError(f'{item["tuner"]}: {item["reason"]}; the plan is '
                         'incomplete for this host',
                         source=plan.facts_source,
                         fix=fixes[0] if fixes else
                         f'follow the fix of each FAIL check "kvmtune plan '
                         f'--profile {plan.profile}" prints')


def for_host(profile_names: 'str | Iterable[str | Profile]', *,
             root: str | None = None, facts_file: str | None = None,
             facts: Facts | None = None, config_files: Iterable[str] = (),
             release: 'int | str | Release | None' = None,
             refuse_withheld: bool = True) -> list[Plan]:
    """The front door for "profiles on a host" (doc/design.md section 9).

    Loads each named profile (or profile file; a Profile already loaded
    is taken as it is) once, resolves the facts once (``facts`` given,
    else ``facts_file``, else the tree at ``root``, else this host),
    builds one Plan per profile and refuses a plan that withheld values
    (InputError), so no caller can forget the refusal. Returns the plans
    in the order the names were given.

    ``refuse_withheld=False`` returns such a plan instead: only for a
    path that shows it (``kvmtune plan`` prints what was withheld, then
    refuses; ``profile validate`` checks a file on an empty host), never
    for one that applies it.
    """
    from kvmtune import facts as host_facts
    from kvmtune.tuning import profiles

    if isinstance(profile_names, str):
        profile_names = [profile_names]
    profile_names = list(profile_names)
    if not profile_names:
        raise InputError('no profile given', key='--profile',
                         fix='name one (kvmtune profile list)')
    dirs: list[str] | None = None
    loaded = []
    for name in profile_names:
        if isinstance(name, profiles.Profile):
            loaded.append(name)
            continue
        if dirs is None:
            dirs = profiles.configured_dirs(list(config_files))
        loaded.append(profiles.load(name, dirs))
    if facts is None:
        facts = host_facts.resolve(root=root, facts_file=facts_file)
    built = [build_plan(profile, facts, release) for profile in loaded]
    if refuse_withheld:
        for plan in built:
            refuse_if_withheld(plan)
    return built


_PLAN_KEYS: dict[str, type | tuple[type, ...]] = {
              'profile': str, 'facts_source': (str, type(None)),
              'nova_conf': dict, 'kernel_args': list, 'modprobe': dict,
              'extra_specs': dict, 'owned_extra_specs': list,
              'hugepages': list, 'checks': list, 'notes': list,
              'withheld': list}


def from_dict(data: Any, source: str = '<plan>') -> Plan:
    """A Plan from ``kvmtune plan -f json`` output (``Plan.to_dict()``).

    Shape errors are one InputError naming the key; a plan that withheld
    values is refused as ``for_host`` refuses it.
    """
    from kvmtune.tuning.tuners.base import TunerCheck

    fix = 'give the JSON "kvmtune plan --profile P -f json" printed'
    if not isinstance(data, dict):
        raise InputError('not a plan (expected a JSON object)',
                         source=source, fix=fix)
    for key, kind in _PLAN_KEYS.items():
        if key not in data:
            raise InputError('missing key', source=source, key=key, fix=fix)
        if not isinstance(data[key], kind):
            raise InputError('wrong type', source=source, key=key, fix=fix)
    plan = Plan(profile=data['profile'], facts_source=data['facts_source'])
    for section, options in data['nova_conf'].items():
        if not isinstance(options, dict) or not all(
                isinstance(v, (str, list)) for v in options.values()):
            raise InputError('options must map names to strings or lists',
                             source=source, key=f'nova_conf.{section}',
                             fix=fix)
        plan.nova_conf[section] = dict(options)
    plan.kernel_args = [str(arg) for arg in data['kernel_args']]
    plan.modprobe = {str(k): str(v) for k, v in data['modprobe'].items()}
    plan.extra_specs = {str(k): str(v)
                        for k, v in data['extra_specs'].items()}
    plan.owned_extra_specs = [str(k) for k in data['owned_extra_specs']]
    try:
        plan.hugepages = [HugepageRequest(node=int(p['node']),
                                          size_kb=int(p['size_kb']),
                                          count=int(p['count']))
                          for p in data['hugepages']]
        plan.checks = [TunerCheck(tuner=str(c['tuner']),
                                  name=str(c['name']),
                                  status=str(c['status']),
                                  message=str(c['message']),
                                  fix=c.get('fix'))
                       for c in data['checks']]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f'malformed entry ({type(exc).__name__}: {exc})',
                         source=source, key='hugepages/checks',
                         fix=fix) from None
    plan.notes = list(data['notes'])
    plan.withheld = list(data['withheld'])
    # Plans written before releases were known have no such key.
    release = data.get('nova_release')
    if release is not None and not isinstance(release, int):
        raise InputError('wrong type', source=source, key='nova_release',
                         fix=fix)
    plan.nova_release = release
    refuse_if_withheld(plan)
    return plan


def load(path: str) -> Plan:
    """A Plan from a file ``kvmtune plan -f json`` wrote; ``-``: from
    standard input (the rollout's gate passes the plan its apply step
    applied along that way)."""
    from kvmtune import inputs
    if path == '-':
        return from_dict(inputs.parse_json(inputs.read_stdin(
            source='--plan -'), '--plan -'), source='--plan -')
    return from_dict(inputs.load_json(path), source=path)
