"""The cloud layer: what Placement and Nova believe about this host.

Read-only API calls (``ctx.cloud``, a kvmtune.openstack.connection.Cloud):

- ``PCPU total`` / ``VCPU total``: the compute node's resource provider
  inventory against the size of the plan's ``[compute] cpu_dedicated_set``
  / ``cpu_shared_set`` (nova-compute reports one PCPU per dedicated CPU and
  one VCPU per shared CPU, the allocation ratio applied on top: Nova's
  "CPU resources" admin guide). A missed restart shows here first;
- ``traits``: every ``trait:<NAME>=required`` of the plan's extra specs on
  the provider (else the flavor gets NoValidHost on this host);
- ``flavor <name>``: each flavor kvmtune made for one of the plans'
  profiles carries exactly the profile's extra specs
  (kvmtune.openstack.flavors.diff_extra_specs, what ``flavor diff`` shows).

``fleet(plans_by_host, cloud)`` runs the provider checks for every compute
node, each against its own host's plan (``kvmtune verify --all-hosts``).
A cloud that cannot be reached, refuses or answers 5xx: UNKNOWN with its
one-line error, never a traceback. The compute node is ``ctx.host``, else
the host name of the facts for another host (``--root``, ``--facts``),
else this machine's host name.
"""

from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Sequence
import socket
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import parse_cpu_spec
from kvmtune.openstack import flavors as cloud_flavors
from kvmtune.openstack import placement
from kvmtune import verify

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

Plans = Sequence['Plan']

LAYER = 'cloud'


def _planned(plans: Plans, option: str) -> Any:
    for plan in plans:
        value = plan.nova_conf.get('compute', {}).get(option)
        if value is not None:
            return value
    return None


def required_traits(plans: Plans) -> list[str]:
    """The traits the plans' flavors require, sorted."""
    from kvmtune.tuning import extra_specs

    return sorted(set().union(*(extra_specs.required_traits(plan.extra_specs)
                                for plan in plans)))


def inventory_checks(plans: Plans, inventories: Any,
                     where: dict[str, Any],
                     restart_fix: str) -> list[verify.Check]:
    """PCPU and VCPU totals against the planned CPU sets (pure)."""
    found = []
    for option, rc in (('cpu_dedicated_set', 'PCPU'),
                       ('cpu_shared_set', 'VCPU')):
        value = _planned(plans, option)
        if value is None:
            continue
        cpus = parse_cpu_spec(value)
        expected = f'{len(cpus)} ({option} {format_cpulist(cpus)})'
        have = inventories.get(rc)
        live = (str(have['total']) + (
            f' (allocation ratio {have["allocation_ratio"]:g})'
            if have.get('allocation_ratio', 1) != 1 else '')
            if have else 'no inventory')
        ok = bool(have) and have['total'] == len(cpus)
        found.append(verify.Check(
            layer=LAYER, name=f'{rc} total', expected=expected, live=live,
            status=verify.PASS if ok else verify.DRIFT,
            fix=None if ok else restart_fix, **where))
    return found


def trait_check(plans: Plans, traits: Collection[str],
                where: dict[str, Any], tag_fix: str) -> verify.Check | None:
    """The plans' required traits among the provider's (pure); None when
    the plans require none."""
    wanted = required_traits(plans)
    if not wanted:
        return None
    missing = [t for t in wanted if t not in traits]
    ours = sorted(t for t in traits if t.startswith('CUSTOM_'))
    return verify.Check(
        layer=LAYER, name='traits', expected=', '.join(wanted),
        live=(', '.join(ours) or 'no custom traits') + (
            f' (missing: {", ".join(missing)})' if missing else ''),
        status=verify.DRIFT if missing else verify.PASS,
        fix=tag_fix if missing else None, **where)


def flavor_checks(plans: Plans, flavor_list: Sequence[dict[str, Any]],
                  cloud_name: str, where: dict[str, Any] | None = None
                  ) -> list[verify.Check]:
    """Each flavor kvmtune made for one of the plans' profiles against
    that profile's extra specs (pure)."""
    where = where or {}
    by_profile = {plan.profile: plan for plan in plans}
    found = []
    for flavor in sorted(flavor_list, key=lambda f: f['name']):
        made = cloud_flavors.made_by_kvmtune(flavor)
        if not made or made[0] not in by_profile:
            continue
        plan = by_profile[made[0]]
        diff = cloud_flavors.diff_extra_specs(
            flavor.get('extra_specs') or {}, plan.extra_specs,
            plan.owned_extra_specs)
        found.append(verify.Check(
            layer=LAYER, name=f'flavor {flavor["name"]}',
            expected=f'profile {plan.profile}\'s '
                     f'{len(plan.extra_specs)} extra specs',
            live='as planned' if diff.empty else '; '.join(diff.lines()),
            status=verify.PASS if diff.empty else verify.DRIFT,
            fix=None if diff.empty else
            f'kvmtune flavor apply --os-cloud {cloud_name} --profile '
            f'{plan.profile} --from {made[1]} --name {flavor["name"]}',
            profile=plan.profile, **where))
    for plan in plans:
        if plan.extra_specs and not any(
                c.profile == plan.profile for c in found):
            found.append(verify.unknown(
                LAYER, f'flavors of {plan.profile}',
                f'profile {plan.profile}\'s extra specs',
                'no flavor carries kvmtune\'s mark for this profile '
                '(kvmtune flavor apply makes one)', profile=plan.profile,
                **where))
    return found


def provider_checks(plans: Plans, cloud: Any, hostname: str,
                    uuid: str) -> list[verify.Check]:
    """Inventory and trait checks for one compute node's provider."""
    where = {'host': hostname}
    restart_fix = (f'restart nova-compute on {hostname} so it reports its '
                   '[compute] CPU sets (kvmtune verify --layer novacompute '
                   'there shows whether its options are live)')
    tag_fix = (f'kvmtune host tag --os-cloud {cloud.name} --hypervisor '
               f'{hostname} (on that host: it sets the traits its facts '
               'support)')
    try:
        inventories = cloud.placement(
            'GET', f'/resource_providers/{uuid}/inventories')['inventories']
        traits, _ = placement.Placement(cloud).provider_traits(uuid)
    except CloudError as exc:
        return [verify.unknown(LAYER, 'resource provider',
                               f'{hostname}\'s inventory and traits',
                               exc.line(), **where)]
    found = inventory_checks(plans, inventories, where, restart_fix)
    check = trait_check(plans, traits, where, tag_fix)
    if check is not None:
        found.append(check)
    return found


def _compute_nodes(cloud: Any) -> Any:
    return placement.Placement(cloud).compute_nodes()


def checks(plans: Plans, ctx: verify.Context) -> list[verify.Check]:
    where = {'host': ctx.host}
    if ctx.cloud is None:
        return [verify.unknown(LAYER, 'cloud', 'Placement and Nova read',
                               'no cloud given (--os-cloud)', **where)]
    name = ctx.host or ((ctx.facts.get('hostname') if ctx.facts else None)
                        if ctx.elsewhere else socket.gethostname())
    if not name:
        return [verify.unknown(LAYER, 'resource provider',
                               'this compute node in Placement',
                               f'the host {ctx.origin} names has no host '
                               'name in its facts: give --host (its name '
                               'in Nova)', **where)]
    try:
        nodes = _compute_nodes(ctx.cloud)
        node, _ = placement.pick_compute_node(
            nodes, name, explicit=bool(ctx.host))
    except (CloudError, InputError) as exc:
        return [verify.unknown(LAYER, 'resource provider',
                               'this compute node in Placement',
                               exc.line(), **where)]
    found = provider_checks(plans, ctx.cloud, *node)
    try:
        listing = cloud_flavors.Flavors(ctx.cloud).all()
    except CloudError as exc:
        return found + [verify.unknown(LAYER, 'flavors',
                                       'the profiles\' flavors',
                                       exc.line(), host=node[0])]
    return found + flavor_checks(plans, listing, ctx.cloud.name,
                                 {'host': node[0]})


def fleet(plans_for: Callable[[str], Plans | None],
          cloud: Any) -> list[verify.Check]:
    """The provider checks of every compute node in the cloud, each with
    the plans ``plans_for(hostname)`` returns (None: no facts for it, an
    UNKNOWN row), then the flavors once.

    :param plans_for: hostname -> [Plan] or None
    """
    try:
        nodes = _compute_nodes(cloud)
    except CloudError as exc:
        return [verify.unknown(LAYER, 'compute nodes',
                               'every compute node in Placement',
                               exc.line())]
    found: list[verify.Check] = []
    seen: list['Plan'] = []
    for hostname, uuid in sorted(nodes):
        plans = plans_for(hostname)
        if plans is None:
            found.append(verify.unknown(
                LAYER, 'plan', 'a plan for this host',
                f'no facts file for {hostname} (kvmtune host inspect --format '
                f'json > {hostname}.json on that host)', host=hostname))
            continue
        seen.extend(plans)
        found.extend(provider_checks(plans, cloud, hostname, uuid))
    if seen:
        try:
            listing = cloud_flavors.Flavors(cloud).all()
        except CloudError as exc:
            return found + [verify.unknown(LAYER, 'flavors',
                                           'the profiles\' flavors',
                                           exc.line())]
        # Flavors are the cloud's, not a host's: one plan per profile.
        first: dict[str, 'Plan'] = {}
        for plan in seen:
            first.setdefault(plan.profile, plan)
        found.extend(flavor_checks(list(first.values()), listing,
                                   cloud.name))
    return found


def for_fleet(cloud: Any, *, plan_file: str | None = None,
              profiles: Sequence[str] | None = None,
              facts_dir: str | None = None,
              config_files: Sequence[str] = ()) -> list[verify.Check]:
    """The fleet view (``verify --all-hosts``): ``fleet`` with every
    compute node planned from ``facts_dir/<hypervisor hostname>.json``
    and ``profiles``, or with the one plan of ``plan_file`` for all.

    :param cloud: a kvmtune.openstack.connection.Cloud, or the name of a
        cloud in clouds.yaml, connected once the inputs are read
    :raises InputError: ``facts_dir`` is not a directory
    """
    import os

    from kvmtune import facts as host_facts
    from kvmtune.tuning import plan as plans

    if facts_dir and not os.path.isdir(facts_dir):
        raise InputError('not a directory', source=facts_dir,
                         key='--facts-dir', fix='give the directory of '
                         'HOST.json facts files')
    fixed = [plans.load(plan_file)] if plan_file else None
    if isinstance(cloud, str):
        from kvmtune.openstack.connection import Cloud

        cloud = Cloud.connect(cloud)

    def plans_for(hostname: str) -> list['Plan'] | None:
        if fixed is not None:
            return fixed
        path = os.path.join(facts_dir or '', f'{hostname}.json')
        if not facts_dir or not os.path.exists(path):
            return None
        return plans.for_host(list(profiles or ()),
                              facts=host_facts.load(path),
                              config_files=config_files)

    return fleet(plans_for, cloud)
