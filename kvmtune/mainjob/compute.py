"""The compute side of the main job. The tuned profile follows a compute's
facts (EPT/NPT or not), and its flavor's required traits must be ones
`kvmtune host tag` sets. On the local test cloud, whose compute is this
host, the job tunes it (LocalSetup: huge pages, nova.conf, restart, tag);
on an operator's cloud it changes nothing here and says what to run on
the computes (RemoteSetup, operator_steps)."""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
import json
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError
from kvmtune import mainjob
from kvmtune.mainjob import hugepages
from kvmtune.mainjob import steps

if TYPE_CHECKING:
    from openstack.connection import Connection

    from kvmtune.facts.types import Facts
    from kvmtune.tuning.plan import Plan
    from kvmtune.tuning.profiles import Profile

# The tuned profile by whether the host has EPT/NPT: the -ept profile's
# flavor requires CUSTOM_KVMTUNE_EPT, which an EPT-less host never gets.
TUNED_PROFILES = {True: 'pinned-hugepages-ept', False: 'pinned-hugepages'}
PCPU_TIMEOUT = 120


def tuned_profile(facts: 'Facts') -> tuple[str, str]:
    """(profile, why) for a host's facts."""
    from kvmtune.tuning import traits

    if traits.EPT in traits.from_facts(facts):
        return TUNED_PROFILES[True], ('this host has EPT/NPT (virt.ept '
                                      f'true): {traits.EPT} can be asked for')
    return TUNED_PROFILES[False], (
        f'this host has no EPT/NPT (virt.ept '
        f'{json.dumps(facts["virt"]["ept"])}): '
        f'no compute here gets {traits.EPT}, so pinning + 2 MB pages '
        'without that trait')


def load_profile(name: str) -> 'Profile':
    from kvmtune.tuning import profiles

    # None: kvmtune.conf's default files
    return profiles.load(name, profiles.configured_dirs(
        None))  # type: ignore[arg-type]


def required_traits(plan: 'Plan') -> set[str]:
    """Traits a plan's flavor requires (trait:X=required)."""
    from kvmtune.tuning import extra_specs

    return extra_specs.required_traits(plan.extra_specs)


def check_traits(profile: 'Profile', facts: 'Facts',
                 plan: 'Plan | None' = None) -> None:
    """The traits the tuned flavor requires must be ones `kvmtune host
    tag` sets from the same facts, else its guests get NoValidHost.
    ``plan``: the profile's plan for those facts, when the caller has it."""
    from kvmtune.tuning import traits

    if plan is None:
        plan = hugepages.plan_for(profile, facts)
    missing = required_traits(plan) - traits.from_facts(facts)
    if missing:
        raise KvmtuneError(
            f'profile {profile.name} requires {", ".join(sorted(missing))}, '
            f'which kvmtune host tag does not set from the facts of '
            f'{facts.get("hostname")}: its guests would get NoValidHost',
            source=facts.get('source'), key='--tuned-profile',
            fix=f'use {TUNED_PROFILES[False]} (no trait) or a compute '
                'with EPT/NPT')


# -- kvmtune's library, as the commands use it ------------------------------

def apply_nova_conf(profile_name: str, facts: 'Facts', path: str,
                    nova_python: str | None = None,
                    config_files: Iterable[str] | None = None) -> str:
    """`kvmtune nova-conf apply --service all` as a call (the test cloud
    runs every Nova service on this host): the profile's options into
    nova.conf at path, checked by Nova's own definitions; its message."""
    from kvmtune import conf
    from kvmtune.tuning.novaconf import update
    from kvmtune.tuning.novaconf import validate
    from kvmtune.tuning import plan as plans

    config_files = list(config_files or [])
    loaded = conf.load(config_files)
    # The front door refuses a plan that withheld values before anything
    # is written.
    [plan] = plans.for_host([profile_name], facts=facts,
                            config_files=config_files)
    python = validate.configured_python(nova_python,
                                        loaded.nova.python_executable)
    result = update.apply_plan(plan, path, 'all', nova_python=python)
    for notice in result.notices:
        print(f'notice: {notice}')
    print(result.diff, end='')
    print(result.message(plan.profile))
    return result.message(plan.profile)


def tag_host(cloud_name: str, facts: 'Facts', hypervisor: str | None = None
             ) -> tuple[str, list[str]]:
    """`kvmtune host tag` as a call: the CUSTOM_KVMTUNE_* traits of facts
    on the compute node's resource provider; (node, traits) set."""
    import socket

    from kvmtune.openstack.connection import Cloud
    from kvmtune.openstack import placement
    from kvmtune.tuning import traits

    wanted = traits.from_facts(facts)
    name = hypervisor or facts.get('hostname') or socket.gethostname()
    api = placement.Placement(Cloud.connect(cloud_name))
    (node, uuid), note = placement.pick_compute_node(
        api.compute_nodes(), name, explicit=bool(hypervisor))
    if note:
        print(f'host tag: {note}')
    change = api.set_traits(uuid, wanted, traits.KVMTUNE_TRAITS)
    for line in change.lines():
        print(f'  {line}')
    return node, sorted(wanted)


# -- the local test cloud's compute (this host) -----------------------------

@dataclasses.dataclass
class LocalSetup:
    """What the job does to the local compute before the sweep."""

    profile: str
    why: str
    pages: hugepages.Pages | None  # None: the tuned guests take no huge pages
    pinned: bool          # the tuned flavor asks for dedicated CPUs
    facts: 'Facts'        # this host's
    config_files: tuple[str, ...] = ()
    # the compute's nova.conf, once the cloud is up
    nova_conf: str | None = None
    nova_python: str | None = None  # a Python with Nova, to check values
    pcpu: int | None = None   # PCPU in Placement after the tuning
    summary: str = ''         # what the tuning did, in a few words


def local_setup(facts: 'Facts', nova_conf: str | None, max_vms: int,
                ram_mb: int, profile_name: str | None = None,
                config_files: Iterable[str] = ()) -> LocalSetup:
    """The local compute's tuning for the tuned profile, decided from
    this host's facts; nothing runs here."""
    name, why = tuned_profile(facts)
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    profile = load_profile(name)
    plan = hugepages.plan_for(profile, facts)
    check_traits(profile, facts, plan)
    specs = plan.extra_specs
    return LocalSetup(name, why,
                      hugepages.guest_pages(profile, facts, max_vms, ram_mb,
                                            plan=plan),
                      specs.get('hw:cpu_policy') == 'dedicated', facts,
                      tuple(config_files or ()), nova_conf)


def pcpu_total(conn: 'Connection') -> int:
    """PCPU total of the cloud's one compute node in Placement."""
    hypervisors = list(conn.compute.hypervisors())
    if len(hypervisors) != 1:
        raise CloudError(f'{len(hypervisors)} compute nodes, expected the '
                         'test cloud\'s one', source='Nova hypervisors')
    inventories = conn.placement.get(
        f'/resource_providers/{hypervisors[0].id}/inventories',
        microversion='1.6').json()['inventories']
    return cast(int, inventories.get('PCPU', {}).get('total', 0))


def tune_local_compute(conn: 'Connection', setup: LocalSetup,
                       cloud_name: str, root: str = '/', *,
                       restart: Callable[[], None]) -> int | None:
    """Pages, nova.conf of the profile, ``restart`` of the compute (the
    test cloud's, kvmtune.mainjob.testcloud.restart_compute), host tag; how
    many tuned guests fit at once (Placement's PCPU over the guests'
    vCPUs), or None when they are not pinned."""
    import time

    done: list[str] = []
    # Pages first: nova-conf apply plans from this host's facts
    if setup.pages:
        print(f'hugepages: {setup.pages.label} pages ({setup.pages.why})')
        hugepages.reserve_hugepages(setup.pages, root)
        done.append(f'{setup.pages.count} x {setup.pages.label} pages')
    apply_nova_conf(setup.profile, setup.facts, cast(str, setup.nova_conf),
                    setup.nova_python, setup.config_files)
    done.append('nova.conf')
    restart()
    fits = None
    if setup.pinned:
        deadline = time.monotonic() + PCPU_TIMEOUT
        while not (pcpu := pcpu_total(conn)):
            if time.monotonic() > deadline:
                raise CloudError(f'no PCPU inventory {PCPU_TIMEOUT} s '
                                 'after the compute restart',
                                 source=setup.nova_conf,
                                 key='compute.cpu_dedicated_set')
            time.sleep(2)
        setup.pcpu = pcpu
        fits = pcpu // mainjob.BASE_FLAVOR['vcpus']
        done.append(f'{pcpu} PCPU')
    node, tags = tag_host(cloud_name, setup.facts)
    done.append(f'traits {", ".join(tags) or "none"}')
    setup.summary = ', '.join(done)
    return fits


# -- an operator's cloud (--os-cloud) ---------------------------------------

@dataclasses.dataclass
class RemoteSetup:
    """What the job knows and does about another cloud's computes."""

    profile: str
    why: str
    facts: 'Facts | None'  # facts of a compute of the cloud, or None
    node: str | None      # its compute node name, or None
    source: str           # where those facts came from (or why none)


def node_named(hostname: str | None, node_names: Iterable[str]
               ) -> str | None:
    """The compute node a host is: same name, or the same first label
    (libvirt may report the FQDN of a host whose name is short)."""
    if not hostname:
        return None
    for node in sorted(node_names):
        if node == hostname or node.split('.')[0] == hostname:
            return node
    return None


def compute_facts(compute_facts_file: str | None, this_facts: 'Facts',
                  node_names: Iterable[str]
                  ) -> tuple['Facts | None', str | None, str]:
    """(facts, compute node or None, where they come from) of a compute
    of the cloud; (None, None, why not) when the job has none."""
    from kvmtune import facts as host_facts

    if compute_facts_file:
        found = host_facts.load(compute_facts_file)
        return found, node_named(found.get('hostname'), node_names), (
            f'compute {found.get("hostname")} from {compute_facts_file}')
    here = this_facts.get('hostname')
    node = node_named(here, node_names)
    if node:
        return this_facts, node, (f'this host: it is compute node {node} '
                                  'of the cloud')
    return None, None, (f'this host ({here}) is none of the cloud\'s '
                        'compute nodes '
                        f'({", ".join(sorted(node_names)) or "none"}) and '
                        'no --compute-facts was given')


def remote_setup(cloud_name: str, this_facts: 'Facts',
                 node_names: Iterable[str], max_vms: int, ram_mb: int,
                 compute_facts_file: str | None = None,
                 profile_name: str | None = None) -> RemoteSetup:
    """The tuned profile and what the job knows of an operator's
    computes; nothing on this host is changed."""
    found, node, source = compute_facts(compute_facts_file, this_facts,
                                        node_names)
    if found is not None:
        name, why = tuned_profile(found)
        why = why.replace('this host', f'compute {found.get("hostname")}')
    else:
        name, why = TUNED_PROFILES[False], (
            'no facts of the cloud\'s computes, so EPT/NPT is unknown: '
            'pinning + 2 MB pages, which requires no trait')
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    if found is not None:
        check_traits(load_profile(name), found)
    return RemoteSetup(name, why, found, node, source)


def tag_remote(setup: RemoteSetup, cloud_name: str) -> list[str]:
    """Tag the operator's compute whose facts the job has (Placement
    traits only); lines saying what was set."""
    if setup.facts is None:
        return []
    # Without a node of that name host tag picks the only node, or says
    # which names there are.
    node, tags = tag_host(cloud_name, setup.facts, setup.node)
    return [f'compute node {node}: {", ".join(tags) or "no"} kvmtune '
            'traits']


def operator_steps(setup: RemoteSetup, cloud_name: str, max_vms: int,
                   ram_mb: int) -> list[str]:
    """Lines saying what the operator does on each compute host."""
    profile = setup.profile
    lines = [f'on each compute host of cloud {cloud_name} (not done by this '
             'job):',
             f'  kvmtune plan --profile {profile}   (what it needs there)',
             f'  kvmtune nova-conf apply --profile {profile} --config '
             '/etc/nova/nova.conf, then restart nova-compute']
    if setup.facts is not None:
        need = hugepages.guest_pages(load_profile(profile), setup.facts,
                                     max_vms, ram_mb)
        if need:
            lines.append(f'  {need.count} free {need.label} pages for '
                         f'{max_vms} x {ram_mb} MB guests ({need.why}); '
                         'boot-time pool: ' + ' '.join(need.kernel_args))
    else:
        lines.append('  the huge pages and kernel arguments the plan names')
    lines.append(f'  kvmtune host tag --os-cloud {cloud_name}   '
                 '(CUSTOM_KVMTUNE_* traits from that host\'s facts)')
    return lines


def sweep_limits(setup: 'LocalSetup | RemoteSetup',
                 flavors: Sequence[str], max_vms: int, fits: int | None
                 ) -> dict[str, int]:
    """{flavor: largest VM count} for the flavors of which fewer guests
    than max_vms fit the host; says so."""
    if fits is None or fits >= max_vms:
        return {}
    # guests fit a count only on the local compute (tune_local_compute)
    setup = cast(LocalSetup, setup)
    tuned_flavor = flavors[-1]
    if fits < 1:
        raise KvmtuneError(
            f'no {tuned_flavor} guest fits this host: {setup.pcpu} PCPU '
            f'in Placement, {mainjob.BASE_FLAVOR["vcpus"]} per guest',
            source=setup.nova_conf, key='compute.cpu_dedicated_set',
            fix='a host with more CPUs, or a smaller base flavor')
    steps.say(f'{tuned_flavor}: {fits} of {max_vms} VMs fit this host '
              f'({setup.pcpu} PCPU in Placement, '
              f'{mainjob.BASE_FLAVOR["vcpus"]} per pinned guest): its '
              f'sweep runs 1..{fits} VMs, no NoValidHost iterations')
    return {tuned_flavor: fits}
