"""``kvmtune flavor apply`` (also the main job and DevStack): create or
update the tuned flavor of a profile, in the order doc/design.md 9.8
fixes (kvmtune.openstack.flavors has what a tuned flavor must be, and the
Nova calls)."""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import cast

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.openstack.flavors import Flavors
from kvmtune.openstack.flavors import SpecDiff
from kvmtune.openstack.flavors import diff_extra_specs
from kvmtune.openstack.flavors import incomplete_lines
from kvmtune.openstack.flavors import is_incomplete
from kvmtune.openstack.flavors import property_differences
from kvmtune.openstack.flavors import tuned_name


def apply_profile(cloud_name: str, profile: str, base: str | None = None,
                  name: str | None = None, root: str | None = None,
                  facts_file: str | None = None, dry_run: bool = False,
                  config_files: Iterable[str] | None = None,
                  out: Callable[[str], object] = print,
                  projects: Sequence[str] = ()) -> str:
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
    """
    from kvmtune.openstack import planning
    from kvmtune.openstack.connection import Cloud

    if not (name or base):
        raise InputError('no flavor named', key='--from/--name',
                         fix='give --from BASE (to create <BASE>.<PROFILE>)'
                             ' or --name of an existing flavor')
    plan = planning.plan_for(profile, root, facts_file, config_files)
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
