"""The compute side of the main job. The tuned profile follows a compute's
facts (EPT/NPT or not), and its flavor's required traits must be ones
`kvmtune host tag` sets. On the local test cloud, whose compute is this
host, the job tunes it (LocalSetup: huge pages, nova.conf, restart, tag);
on an operator's cloud it changes nothing here and says what to run on
the computes (RemoteSetup, operator_steps)."""
import dataclasses
import json

from kvmtune import mainjob
from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError
from kvmtune.mainjob import pages
from kvmtune.mainjob import steps

# The tuned profile by whether the host has EPT/NPT: the -ept profile's
# flavor requires CUSTOM_KVMTUNE_EPT, which an EPT-less host never gets.
TUNED_PROFILES = {True: 'pinned-hugepages-ept', False: 'pinned-hugepages'}
PCPU_TIMEOUT = 120


def tuned_profile(facts):
    """(profile, why) for a host's facts."""
    from kvmtune import traits

    if traits.EPT in traits.from_facts(facts):
        return TUNED_PROFILES[True], ('this host has EPT/NPT (virt.ept '
                                      f'true): {traits.EPT} can be asked for')
    return TUNED_PROFILES[False], (
        f'this host has no EPT/NPT (virt.ept '
        f'{json.dumps(facts["virt"]["ept"])}): '
        f'no compute here gets {traits.EPT}, so pinning + 2 MB pages '
        'without that trait')


def load_profile(name):
    from kvmtune import profiles

    return profiles.load(name, profiles.configured_dirs(None))


def required_traits(plan):
    """Traits a plan's flavor requires (trait:X=required)."""
    return {key[len('trait:'):] for key, value in plan.extra_specs.items()
            if key.startswith('trait:') and value == 'required'}


def check_traits(profile, facts):
    """The traits the tuned flavor requires must be ones `kvmtune host
    tag` sets from the same facts, else its guests get NoValidHost."""
    from kvmtune import plan as plans
    from kvmtune import traits

    missing = required_traits(plans.build_plan(profile, facts)) - \
        traits.from_facts(facts)
    if missing:
        raise KvmtuneError(
            f'profile {profile.name} requires {", ".join(sorted(missing))}, '
            f'which kvmtune host tag does not set from the facts of '
            f'{facts.get("hostname")}: its guests would get NoValidHost',
            source=facts.get('source'), key='--tuned-profile',
            fix=f'use {TUNED_PROFILES[False]} (no trait) or a compute '
                'with EPT/NPT')


# -- the local test cloud's compute (this host) -----------------------------

@dataclasses.dataclass
class LocalSetup:
    """What the job does to the local compute before the sweep."""

    profile: str
    why: str
    pages: pages.Pages    # None: the tuned guests take no huge pages
    nova_conf: str        # the compute's nova.conf
    commands: list        # argv lists, run in order after the pages


def local_setup(facts, kvmtune, cloud_name, nova_conf, max_vms, ram_mb,
                profile_name=None, nova_python=None):
    """The local compute's tuning for the tuned profile, decided from
    this host's facts; nothing runs here."""
    name, why = tuned_profile(facts)
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    profile = load_profile(name)
    check_traits(profile, facts)
    apply = [kvmtune, 'nova-conf', 'apply', '--profile', name,
             '--config', nova_conf]
    if nova_python:
        apply += ['--nova-python', nova_python]
    commands = [apply, [mainjob.CLOUD_CTL, 'restart-compute'],
                [kvmtune, 'host', 'tag', '--os-cloud', cloud_name]]
    return LocalSetup(name, why,
                      pages.guest_pages(profile, facts, max_vms, ram_mb),
                      nova_conf, commands)


def pcpu_total(conn):
    """PCPU total of the cloud's one compute node in Placement."""
    hypervisors = list(conn.compute.hypervisors())
    if len(hypervisors) != 1:
        raise CloudError(f'{len(hypervisors)} compute nodes, expected the '
                         'test cloud\'s one', source=mainjob.CLOUD_DIR)
    inventories = conn.placement.get(
        f'/resource_providers/{hypervisors[0].id}/inventories',
        microversion='1.6').json()['inventories']
    return inventories.get('PCPU', {}).get('total', 0)


def tune_local_compute(conn, setup, root='/'):
    """Pages, nova.conf of the profile, restart, PCPU shown, host tag."""
    import time

    # Pages first: nova-conf apply plans from this host's facts
    if setup.pages:
        steps.say(f'hugepages: {setup.pages.label} pages '
                  f'({setup.pages.why})')
        pages.reserve_hugepages(setup.pages, root)
    apply, restart, tag = setup.commands
    steps.run(apply)
    steps.run(restart)
    deadline = time.monotonic() + PCPU_TIMEOUT
    while not (pcpu := pcpu_total(conn)):
        if time.monotonic() > deadline:
            raise CloudError(f'no PCPU inventory {PCPU_TIMEOUT} s after '
                             'the compute restart', source=setup.nova_conf,
                             key='compute.cpu_dedicated_set')
        time.sleep(2)
    vcpus = mainjob.BASE_FLAVOR['vcpus']
    steps.say(f'compute: {pcpu} PCPU in Placement, {vcpus} per pinned '
              'guest: tuned guests at once, at most '
              f'{pcpu // vcpus} (more get NoValidHost)')
    steps.run(tag)


# -- an operator's cloud (--os-cloud) ---------------------------------------

@dataclasses.dataclass
class RemoteSetup:
    """What the job knows and does about another cloud's computes."""

    profile: str
    why: str
    facts: dict           # facts of a compute of the cloud, or None
    facts_args: list      # how kvmtune commands name those facts
    source: str           # where those facts came from (or why none)
    commands: list        # argv lists the job runs (cloud writes, reads)


def node_named(hostname, node_names):
    """The compute node a host is: same name, or the same first label
    (libvirt may report the FQDN of a host whose name is short)."""
    if not hostname:
        return None
    for node in sorted(node_names):
        if node == hostname or node.split('.')[0] == hostname:
            return node
    return None


def compute_facts(compute_facts_file, this_facts, node_names):
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


def remote_setup(cloud_name, this_facts, node_names, kvmtune, max_vms,
                 ram_mb, compute_facts_file=None, profile_name=None):
    """The tuned profile and the cloud-side steps for an operator's
    cloud; nothing on this host is changed."""
    found, node, source = compute_facts(compute_facts_file, this_facts,
                                        node_names)
    facts_args = ['--facts', compute_facts_file] if compute_facts_file \
        else []
    if found is not None:
        name, why = tuned_profile(found)
        why = why.replace('this host', f'compute {found.get("hostname")}')
    else:
        name, why = TUNED_PROFILES[False], (
            'no facts of the cloud\'s computes, so EPT/NPT is unknown: '
            'pinning + 2 MB pages, which requires no trait')
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    commands = []
    if found is not None:
        check_traits(load_profile(name), found)
        commands.append([kvmtune, 'plan', '--profile', name, *facts_args])
        # Without a node of that name host tag picks the only node, or
        # says which names there are.
        commands.append([kvmtune, 'host', 'tag', '--os-cloud', cloud_name,
                         *facts_args, *(['--hypervisor', node] if node
                                        else [])])
    return RemoteSetup(name, why, found, facts_args, source, commands)


def operator_steps(setup, cloud_name, max_vms, ram_mb):
    """Lines saying what the operator does on each compute host."""
    profile = setup.profile
    lines = [f'on each compute host of cloud {cloud_name} (not done by this '
             'job):',
             f'  kvmtune plan --profile {profile}   (what it needs there)',
             f'  kvmtune nova-conf apply --profile {profile} --config '
             '/etc/nova/nova.conf, then restart nova-compute']
    if setup.facts is not None:
        need = pages.guest_pages(load_profile(profile), setup.facts,
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
