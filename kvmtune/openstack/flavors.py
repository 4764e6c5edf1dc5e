"""Tuned flavors: what a profile wants on a flavor, the Nova calls that
get it there, and ``apply_profile`` (``kvmtune flavor apply``, the main
job and DevStack), which makes them in the order doc/design.md 9.8 fixes.

A tuned flavor is a copy of a base flavor (same size) whose extra specs are
the plan's ``extra_specs``. kvmtune only ever removes keys the profile's
tuners own (the plan's ``owned_extra_specs``); any other key on the flavor
stays as it is. A flavor kvmtune created carries a description starting
with ``MARK`` so that ``flavor remove --delete`` never deletes a flavor
someone else made.

Changes in several calls (doc/design.md 9.8, tests/functional/test_faults.py).
A guest must never be placed on a half-changed flavor, whatever stops kvmtune
when. One POST of os-extra_specs is one transaction in Nova
(nova/objects/flavor.py ``_flavor_extra_specs_add``), a DELETE removes one key;
a change that needs more than one of these calls is bracketed by
``INCOMPLETE``, ``trait:CUSTOM_KVMTUNE_INCOMPLETE=required``: it goes in with
the first POST and is the last key deleted. No resource provider carries that
trait (kvmtune never creates it), so while a flavor has it the scheduler finds
no host (NoValidHost); guests already running keep the flavor copy Nova stored
with them. A re-run sees the marker, finishes the change and deletes it;
``flavor diff`` calls such a flavor incomplete.

Nova (34, up to microversion 2.104) takes no extra specs in POST /flavors
and never changes a flavor's name or visibility, so a new flavor is born
plain and no marker can close the one request between its birth and the
POST of its specs: a kill exactly there leaves a plain flavor with
kvmtune's description. ``flavor diff`` names it incomplete and ``flavor
apply`` finishes it.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import fnmatch
import re
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

MARK = 'Tuned by kvmtune'
# Present while a multi-call change is under way; no host has the trait.
INCOMPLETE = 'trait:CUSTOM_KVMTUNE_INCOMPLETE'
INCOMPLETE_VALUE = 'required'
_MARK_RE = re.compile(re.escape(MARK) + r' \(profile (?P<profile>[^,]+),'
                      r' from (?P<base>[^)]+)\)')

# Sizes Nova keeps for a flavor's life (only the description may change).
IMMUTABLE_PROPERTIES = (
    ('ram', 'ram'),
    ('vcpus', 'vcpus'),
    ('disk', 'disk'),
    ('OS-FLV-EXT-DATA:ephemeral', 'ephemeral'),
    ('swap', 'swap'),
    ('rxtx_factor', 'rxtx_factor'),
    ('os-flavor-access:is_public', 'is_public'),
)


@dataclasses.dataclass(frozen=True)
class SpecDiff:
    """How a flavor's extra specs must change; the keys are sorted."""

    added: dict[str, str]
    changed: dict[str, tuple[str, str]]   # key -> (current, wanted)
    removed: dict[str, str]   # key -> current

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def to_set(self) -> dict[str, str]:
        """The keys and values one POST os-extra_specs must carry."""
        wanted = dict(self.added)
        wanted.update((k, new) for k, (_, new) in self.changed.items())
        return dict(sorted(wanted.items()))

    def lines(self) -> list[str]:
        out = [f'+ {k}={v}' for k, v in self.added.items()]
        out += [f'~ {k}: {old} -> {new}'
                for k, (old, new) in self.changed.items()]
        out += [f'- {k} (was {v})' for k, v in self.removed.items()]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {'added': self.added,
                'changed': {k: {'current': o, 'wanted': n}
                            for k, (o, n) in self.changed.items()},
                'removed': self.removed}


def is_owned(key: str, owned: Iterable[str]) -> bool:
    """Whether a tuner owns key; owned entries may be globs (hw:numa_*)."""
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in owned)


def diff_extra_specs(current: Mapping[str, str] | None,
                     wanted: Mapping[str, str],
                     owned: Iterable[str]) -> SpecDiff:
    """The change from current to wanted, removing only owned keys.

    A key that is wanted is always set; a key present but not wanted is
    removed only when a tuner of the profile owns it. The INCOMPLETE marker
    is left out: ``Flavors.change`` handles it.
    """
    current = {k: str(v) for k, v in (current or {}).items()
               if k != INCOMPLETE}
    added: dict[str, str] = {}
    changed: dict[str, tuple[str, str]] = {}
    removed: dict[str, str] = {}
    for key in sorted(wanted):
        value = str(wanted[key])
        if key not in current:
            added[key] = value
        elif current[key] != value:
            changed[key] = (current[key], value)
    for key in sorted(current):
        if key not in wanted and is_owned(key, owned):
            removed[key] = current[key]
    return SpecDiff(added, changed, removed)


def owned_present(current: Mapping[str, str] | None,
                  owned: Iterable[str]) -> SpecDiff:
    """The diff that removes every owned key a flavor has (flavor remove)."""
    return diff_extra_specs(current, {}, owned)


def is_incomplete(specs: Mapping[str, str] | None) -> bool:
    """Whether a flavor's extra specs carry the INCOMPLETE marker."""
    return INCOMPLETE in (specs or {})


def incomplete_lines(flavor: Mapping[str, Any],
                     plan_specs: Mapping[str, str]) -> list[str]:
    """Lines saying why a flavor is unfinished (flavor diff, apply), or []:
    it carries the marker, or kvmtune made it and it has none of the specs
    its profile wants (born, then killed before its specs were set)."""
    specs = flavor.get('extra_specs') or {}
    name = flavor['name']
    if is_incomplete(specs):
        return [f'flavor {name}: incomplete: a kvmtune run stopped in the '
                f'middle of a change ({INCOMPLETE}={specs[INCOMPLETE]} '
                'keeps every guest off it); kvmtune flavor apply finishes '
                'it']
    if made_by_kvmtune(flavor) and plan_specs and not (
            set(plan_specs) & set(specs)):
        return [f'flavor {name}: incomplete: kvmtune made it but it has '
                'none of its profile\'s specs (a run stopped before setting '
                'them, or they were removed); a guest on it is a plain one '
                'until kvmtune flavor apply finishes it']
    return []


def rejected_specs(message: str, specs: Mapping[str, str]) -> str:
    """'key=value' for the specs whose value Nova's message quotes, else
    for all of them."""
    named = {k: v for k, v in specs.items() if f"'{v}'" in message or
             k in message}
    return ', '.join(f'{k}={v}' for k, v in sorted((named or specs).items()))


def tuned_name(base: str, profile: str) -> str:
    return f'{base}.{profile}'


def description(profile: str, base: str) -> str:
    return f'{MARK} (profile {profile}, from {base}).'


def made_by_kvmtune(flavor: Mapping[str, Any]) -> tuple[str, str] | None:
    """(profile, base) when kvmtune created the flavor, else None."""
    match = _MARK_RE.match(flavor.get('description') or '')
    return (match['profile'], match['base']) if match else None


def property_differences(flavor: Mapping[str, Any],
                         base: Mapping[str, Any]) -> list[str]:
    """Lines naming each immutable size where flavor and base differ."""
    diffs = []
    for field, label in IMMUTABLE_PROPERTIES:
        have, want = flavor.get(field), base.get(field)
        if field == 'swap':
            # Nova returns "" for no swap before 2.75; treat it as 0.
            have, want = have or 0, want or 0
        if have != want:
            diffs.append(f'{label} {have} (base {base["name"]}: {want})')
    return diffs


def create_body(name: str, base: Mapping[str, Any], profile: str,
                private: bool = False) -> dict[str, Any]:
    """The POST /flavors body: the base's sizes under a new name;
    ``private``: not public whatever the base is (``--project``)."""
    body: dict[str, Any] = {'name': name,
                            'description': description(profile, base['name'])}
    for field, _ in IMMUTABLE_PROPERTIES:
        if base.get(field) is not None:
            body[field] = base[field]
    body['swap'] = base.get('swap') or 0
    if private:
        body['os-flavor-access:is_public'] = False
    return {'flavor': body}


class Flavors:
    """The few Nova flavor calls kvmtune makes (all at microversion 2.86).

    At 2.61 and later the flavor list carries each flavor's extra specs, so
    reading everything kvmtune needs is one GET.
    """

    def __init__(self, cloud: Any) -> None:
        self.cloud = cloud
        self._listing: list[dict[str, Any]] | None = None

    def _all(self) -> list[dict[str, Any]]:
        # One listing per command: the flavors kvmtune reads are few and
        # nothing else in the command changes the ones it has not made.
        if self._listing is None:
            self._listing = self.cloud.compute(
                'GET', '/flavors/detail?is_public=none')['flavors']
        return self._listing

    def all(self) -> list[dict[str, Any]]:
        """Every flavor, public and private, with its extra specs."""
        return list(self._all())

    def find(self, name: str) -> dict[str, Any] | None:
        """The flavor named name (public or private), or None."""
        found = [f for f in self._all() if f['name'] == name]
        if len(found) > 1:
            raise CloudError(
                f'{len(found)} flavors are named {name!r}',
                source=f'cloud {self.cloud.name}',
                fix='rename the duplicates so the name is unique')
        return found[0] if found else None

    def get(self, name: str) -> dict[str, Any]:
        flavor = self.find(name)
        if flavor is None:
            raise InputError(f'no flavor named {name!r}',
                             source=f'cloud {self.cloud.name}',
                             fix='give an existing flavor name')
        return flavor

    def create(self, name: str, base: Mapping[str, Any],
               profile: str, private: bool = False) -> dict[str, Any]:
        body = create_body(name, base, profile, private)
        flavor: dict[str, Any] = self.cloud.compute(
            'POST', '/flavors', body)['flavor']
        return flavor

    def set_extra_specs(self, flavor_id: str,
                        specs: Mapping[str, str]) -> None:
        try:
            self.cloud.compute('POST',
                               f'/flavors/{flavor_id}/os-extra_specs',
                               {'extra_specs': specs})
        except CloudError as exc:
            # Nova names the value it refused, not always the key.
            shown = {k: v for k, v in specs.items() if k != INCOMPLETE}
            exc.problem += f' (setting {rejected_specs(exc.problem, shown)})'
            raise

    def unset_extra_spec(self, flavor_id: str, key: str) -> None:
        from urllib.parse import quote

        self.cloud.compute(
            'DELETE',
            f'/flavors/{flavor_id}/os-extra_specs/{quote(key, safe=":")}')

    def delete(self, flavor_id: str) -> None:
        self.cloud.compute('DELETE', f'/flavors/{flavor_id}')

    def access(self, flavor_id: str) -> set[str]:
        """The projects a private flavor is shared with."""
        found = self.cloud.compute(
            'GET', f'/flavors/{flavor_id}/os-flavor-access')
        return {entry['tenant_id'] for entry in found['flavor_access']}

    def grant(self, flavor_id: str, project: str) -> None:
        """Share a private flavor with a project (one Nova call)."""
        self.cloud.compute('POST', f'/flavors/{flavor_id}/action',
                           {'addTenantAccess': {'tenant': project}})

    def change(self, flavor_id: str, diff: SpecDiff,
               marked: bool = False) -> None:
        """Apply a SpecDiff: one POST for added/changed, a DELETE per key.

        A change of more than one call, or a flavor already ``marked``
        INCOMPLETE by a run that stopped, is bracketed: the marker goes in
        with the first POST and is deleted last (module docstring).
        """
        to_set = diff.to_set()
        calls = bool(to_set) + len(diff.removed)
        bracket = marked or calls > 1
        if bracket and (to_set or not marked):
            to_set = dict(to_set, **{INCOMPLETE: INCOMPLETE_VALUE})
        if to_set:
            self.set_extra_specs(flavor_id, to_set)
        for key in diff.removed:
            self.unset_extra_spec(flavor_id, key)
        if bracket:
            self.unset_extra_spec(flavor_id, INCOMPLETE)


def apply_profile(cloud_name: str, profile: str, base: str | None = None,
                  name: str | None = None, root: str | None = None,
                  facts_file: str | None = None, dry_run: bool = False,
                  config_files: Iterable[str] | None = None,
                  out: Callable[[str], object] = print,
                  projects: Sequence[str] = (),
                  check: 'Callable[[Plan], object] | None' = None) -> str:
    """Create or update the tuned flavor of a profile (``kvmtune flavor
    apply``, the main job); its name.

    The plan for the host (``root``/``facts_file``, default this host)
    says which extra specs it needs; a new flavor is ``<base>.<profile>``
    unless ``name`` is given. ``out`` receives the lines saying what
    changed (+ added, ~ changed, - removed).

    ``projects``: the flavor is private and shared with these project IDs,
    each share made after its specs are complete: until then no project
    but the admins' sees it, so no guest lands on it half made, whatever
    stops the run (doc/design.md 9.8). Nova never makes a public flavor
    private: such a flavor is refused.

    ``check`` is given the host's whole plan before any request leaves
    (``kvmtune flavor apply`` refuses one with FAIL checks there).
    """
    from kvmtune.openstack.connection import Cloud
    from kvmtune.openstack import planning

    if not (name or base):
        raise InputError('no flavor named', key='--from/--name',
                         fix='give --from BASE (to create <BASE>.<PROFILE>)'
                             ' or --name of an existing flavor')
    plan = planning.plan_for(profile, root, facts_file, config_files,
                             check=check)
    # no name: base was given (refused above otherwise)
    name = name or tuned_name(cast(str, base), plan.profile)

    cloud = Cloud.connect(cloud_name)
    flavors = Flavors(cloud)
    flavor = flavors.find(name)
    base_flavor = flavors.get(base) if base else None

    def show(diff: SpecDiff) -> None:
        for line in diff.lines():
            out(f'  {line}')

    if flavor is not None and projects and \
            flavor.get('os-flavor-access:is_public', True):
        raise InputError(f'flavor {name} is public: Nova cannot make a '
                         'flavor private', key='--project',
                         fix='apply without --project, or remove it '
                             '(kvmtune flavor remove --delete) and apply '
                             'again with --project')
    created = False
    if flavor is None:
        if base_flavor is None:
            raise InputError(f'no flavor named {name!r}', key='--name',
                             fix='give --from BASE to create it')
        diff = diff_extra_specs({}, plan.extra_specs, plan.owned_extra_specs)
        out(f'flavor {name}: new, from {base_flavor["name"]} '
            f'(ram {base_flavor["ram"]} MB, vcpus {base_flavor["vcpus"]}, '
            f'disk {base_flavor["disk"]} GB), profile {plan.profile}')
        show(diff)
        if projects:
            out(f'flavor {name}: private, for project(s) '
                f'{", ".join(projects)} once complete')
        if not dry_run:
            flavor = _create(flavors, name, base_flavor, plan.profile, diff,
                             private=bool(projects))
            created = True
            out(f'flavor {name}: created')
    else:
        diff = diff_extra_specs(flavor.get('extra_specs'),
                                plan.extra_specs, plan.owned_extra_specs)
        marked = is_incomplete(flavor.get('extra_specs'))
        out(f'flavor {name}: exists (id {flavor["id"]}), '
            f'profile {plan.profile}')
        for line in incomplete_lines(flavor, plan.extra_specs):
            out(line)
        if base_flavor is not None:
            for line in property_differences(flavor, base_flavor):
                out(f'flavor {name}: warning: {line}; Nova cannot change '
                    'a flavor\'s sizes: delete it (kvmtune flavor remove '
                    '--delete) and apply again to recreate it')
        show(diff)
        if diff.empty and not marked:
            out(f'flavor {name}: already matches profile {plan.profile}, '
                'nothing to change')
        elif not dry_run:
            flavors.change(flavor['id'], diff, marked=marked)
            out(f'flavor {name}: updated')
    if projects:
        # Last, after the specs: a project sees the flavor only complete.
        made = flavor['id'] if flavor is not None else None
        # a flavor this run made is shared with nobody yet: nothing to read
        shared = flavors.access(made) if made and not created else set()
        for project in sorted(set(projects) - shared):
            out(f'  + access: project {project}')
            if made and not dry_run:
                flavors.grant(made, project)
    if dry_run:
        out('dry run: nothing written')
    out(f'cloud {cloud.name}: {cloud.requests.summary()}')
    return name


def _create(flavors: Flavors, name: str, base: Mapping[str, Any],
            profile: str, diff: SpecDiff,
            private: bool = False) -> dict[str, Any]:
    """Create the flavor and set its specs; delete it if Nova says no.
    The flavor Nova made."""
    flavor = flavors.create(name, base, profile, private)
    try:
        flavors.change(flavor['id'], diff)
    except CloudError as exc:
        # Never leave a half-tuned flavor behind: it was made by this run.
        try:
            flavors.delete(flavor['id'])
        except CloudError as cleanup:
            exc.problem += (f'; and the new flavor {name} could not be '
                            f'deleted: {cleanup.problem}')
        else:
            exc.problem += f'; flavor {name} was not created'
        raise exc
    return flavor
