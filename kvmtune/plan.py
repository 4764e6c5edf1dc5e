"""A profile applied to one host's facts: what to change, and what is wrong.

``build_plan(profile, facts)`` runs each of the profile's tuners on the
facts and merges what they want. Two tuners asking for different values of
one nova.conf option, kernel argument, module option or extra spec is a
mistake in the profile, reported as an InputError; equal values merge.
"""

import dataclasses

from kvmtune import extra_specs as specs
from kvmtune.errors import InputError
from kvmtune.novaconf import services

# One file for every kvm module, the name OpenStack-Ansible's os_nova role
# writes (tasks/drivers/kvm/nova_compute_kvm.yml) and kvmtune export uses:
# two files setting options of one module would fight.
MODPROBE_PATH = '/etc/modprobe.d/kvm.conf'


@dataclasses.dataclass
class Plan:
    profile: str
    facts_source: str
    nova_conf: dict = dataclasses.field(default_factory=dict)
    kernel_args: list = dataclasses.field(default_factory=list)
    modprobe: dict = dataclasses.field(default_factory=dict)
    extra_specs: dict = dataclasses.field(default_factory=dict)
    owned_extra_specs: list = dataclasses.field(default_factory=list)
    # [{'node', 'size_kb', 'count'}]: huge page pools per NUMA node and
    # page size, set by kvmtune.pages.apply.
    hugepages: list = dataclasses.field(default_factory=list)
    checks: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    # [{'tuner', 'reason'}]: host values a tuner left out because the facts
    # cannot support them safely; ``plan`` and ``nova-conf apply`` exit 2.
    withheld: list = dataclasses.field(default_factory=list)

    def to_dict(self):
        return {
            'profile': self.profile,
            'facts_source': self.facts_source,
            'nova_conf': {section: dict(options) for section, options
                          in self.nova_conf.items()},
            # {section: {option: [service, ...]}}: who reads each option
            # (kvmtune.novaconf.services, from Nova's source).
            'nova_conf_services': {
                section: {option: list(readers)
                          for option, readers in options.items()}
                for section, options
                in services.tag(self.nova_conf).items()},
            'kernel_args': list(self.kernel_args),
            'modprobe': dict(self.modprobe),
            'extra_specs': dict(self.extra_specs),
            'owned_extra_specs': list(self.owned_extra_specs),
            'hugepages': [dict(pool) for pool in self.hugepages],
            'checks': [check.to_dict() for check in self.checks],
            'notes': list(self.notes),
            'withheld': [dict(item) for item in self.withheld],
        }

    def count(self, status):
        return sum(1 for check in self.checks if check.status == status)


class _Merge:
    """Values by key, remembering which tuner set each (for conflicts)."""

    def __init__(self, what, source):
        self.what = what
        self.source = source
        self.values = {}
        self.owners = {}

    def add(self, key, value, tuner, label=None):
        if key in self.values and self.values[key] != value:
            raise InputError(
                f'tuners {self.owners[key]} and {tuner} set different '
                f'{self.what}: {self.values[key]!r} and {value!r}',
                source=self.source, key=label or key,
                fix='drop one of them from the profile or give them '
                    'matching params')
        self.values.setdefault(key, value)
        self.owners.setdefault(key, tuner)


def _kernel_key(arg):
    return arg.partition('=')[0]


def build_plan(profile, facts):
    """Merge the tuners of ``profile`` (kvmtune.profiles.Profile) on
    ``facts`` (the design.md section 1 dict) into a Plan."""
    source = profile.path
    nova_conf = _Merge('nova.conf values', source)
    kernel = _Merge('kernel arguments', source)
    module_options = _Merge('module options', source)
    extra = _Merge('extra spec values', source)
    pools = _Merge('huge page counts', source)
    owned, checks, notes, withheld = set(), [], [], []

    for tuner in profile.tuners(facts):
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
        notes.extend({'tuner': tuner.name, 'note': note}
                     for note in tuner.notes())
        withheld.extend({'tuner': tuner.name, 'reason': reason}
                        for reason in getattr(tuner, 'withheld', list)())

    plan = Plan(profile=profile.name, facts_source=facts.get('source'))
    for (section, option), value in sorted(
            nova_conf.values.items(),
            key=lambda item: (item[0][0] != 'DEFAULT', item[0][0])):
        plan.nova_conf.setdefault(section, {})[option] = value
    plan.kernel_args = list(kernel.values.values())
    modules = {}
    for (module, option), value in module_options.values.items():
        modules.setdefault(module, []).append(f'{option}={value}')
    if modules:
        plan.modprobe = {MODPROBE_PATH: ''.join(
            f'options {module} {" ".join(options)}\n'
            for module, options in modules.items())}
    plan.extra_specs = dict(extra.values)
    plan.hugepages = [{'node': node, 'size_kb': size_kb, 'count': count}
                      for (node, size_kb), count
                      in sorted(pools.values.items())]
    plan.owned_extra_specs = sorted(owned | set(extra.values))
    plan.checks = checks
    plan.notes = notes
    plan.withheld = withheld
    return plan


def refuse_withheld(plan):
    """Raise the one-line InputError when the plan withheld values."""
    if plan.withheld:
        item = plan.withheld[0]
        raise InputError(f'{item["tuner"]}: {item["reason"]}',
                         source=plan.facts_source,
                         fix='the plan is incomplete for this host; see '
                             'its failed checks (kvmtune plan), and send '
                             'a kvmtune host capture of it (README, "Host '
                             'facts")')
