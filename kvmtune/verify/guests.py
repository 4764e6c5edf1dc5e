"""The guests layer: what Nova's libvirt driver gave this host's guests.

Reads the live domain XML of every running domain, keeps the domains
Nova made (kvmtune.verify.domain: the read and the parse) and checks each
against its flavor and the host's plan, as whitebox-tempest-plugin checks
a guest inside a test run
(https://opendev.org/openstack/whitebox-tempest-plugin):

- ``<domain> vcpu pins``: a dedicated guest (``hw:cpu_policy=dedicated``)
  has every vCPU pinned to one host CPU of its own inside the plan's
  ``[compute] cpu_dedicated_set``;
- ``<domain> emulator threads``: ``<emulatorpin>`` where
  ``hw:emulator_threads_policy`` puts it (isolate: a dedicated CPU of the
  guest's own, not a vCPU's; share: ``cpu_shared_set`` when the plan sets
  one, else the guest's vCPUs' CPUs; no policy: the vCPUs' CPUs);
- ``<domain> pages``: ``<memoryBacking><hugepages>`` page size equal to
  ``hw:mem_page_size`` (large: any huge page; a size: that size);
- ``<domain> numa memory``: each guest NUMA cell's memory (``<numatune>
  <memnode>``) on the host node its vCPUs are pinned to (host facts);
- ``<domain> disk cache`` / ``disk format``: every disk's ``cache`` as the
  plan's ``[libvirt] disk_cachemodes`` says for its source type, and the
  image format ``[libvirt] images_type`` makes;
- ``<domain> vhost``: every virtio interface on ``driver name='vhost'``
  with the plan's ``[libvirt] rx_queue_size``;
- ``pinned CPUs shared``: no host CPU pinned by two dedicated guests.

The fix for a guest that drifted is a hard reboot: Nova writes the domain
XML again from the NUMA topology it stored (a ``virsh vcpupin`` by hand
lasts only until then). ``ctx.domains`` (a list of XML texts, or
``--domain-xml-dir``) replaces the libvirt read. No libvirt, or one that
refuses the connection: UNKNOWN with the reason. Another host (``--root``
of a tree, ``--facts``): this machine's libvirt holds none of its guests,
so the layer is UNKNOWN unless ``--domain-xml-dir`` or an explicit
``--libvirt-uri`` (``qemu+ssh://HOST/system``) names where they are.
"""

from collections.abc import Sequence
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import parse_cpu_spec
from kvmtune.tuning import extra_specs
from kvmtune import verify
from kvmtune.verify import domain

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

# the host and profile a check is about (verify.Check's keywords)
Where = dict[str, Any]

LAYER = 'guests'


def _planned(plans: Sequence['Plan'], section: str, option: str) -> Any:
    """The value the plans give one option, or None."""
    for plan in plans:
        value = plan.nova_conf.get(section, {}).get(option)
        if value is not None:
            return value
    return None


def _pins_text(guest: domain.Domain) -> str:
    return ', '.join(f'{v}->{format_cpulist(sorted(c))}'
                     for v, c in sorted(guest.vcpupins.items())) or 'none'


def _hard_reboot(guest: domain.Domain) -> str:
    label = guest.name or guest.uuid
    return (f'openstack server reboot --hard {label} (Nova writes the '
            'domain again from the placement it stored)')


def _pin_check(guest: domain.Domain, dedicated_set: frozenset[int],
               where: Where) -> verify.Check:
    expected = (f'each of {guest.vcpus} vCPUs on a CPU of its own in '
                f'{format_cpulist(sorted(dedicated_set))}'
                if dedicated_set else
                f'each of {guest.vcpus} vCPUs on a CPU of its own')
    pins = guest.vcpupins
    ok = (sorted(pins) == list(range(guest.vcpus))
          and all(len(cpus) == 1 for cpus in pins.values())
          and len(guest.pinned_cpus()) == guest.vcpus
          and (not dedicated_set or guest.pinned_cpus() <= dedicated_set))
    live = _pins_text(guest)
    outside = guest.pinned_cpus() - (dedicated_set or guest.pinned_cpus())
    if outside:
        live += f' (outside: {format_cpulist(sorted(outside))})'
    return verify.Check(
        layer=LAYER, name=f'{guest.domain} vcpu pins', expected=expected,
        live=live, status=verify.PASS if ok else verify.DRIFT,
        fix=None if ok else _hard_reboot(guest), **where)


def _emulator_check(guest: domain.Domain, dedicated_set: frozenset[int],
                    shared_set: frozenset[int],
                    where: Where) -> verify.Check:
    policy = guest.extra_specs.get('hw:emulator_threads_policy')
    vcpu_cpus = guest.pinned_cpus()
    live_cpus = guest.emulatorpin or frozenset()   # None: not pinned
    if policy == 'isolate':
        expected = 'a dedicated CPU of its own, none of its vCPUs\''
        ok = bool(live_cpus) and not (live_cpus & vcpu_cpus) and (
            not dedicated_set or live_cpus <= dedicated_set)
    elif policy == 'share' and shared_set:
        expected = f'in cpu_shared_set {format_cpulist(sorted(shared_set))}'
        ok = bool(live_cpus) and live_cpus <= shared_set
    else:
        expected = (f'on its vCPUs\' CPUs '
                    f'{format_cpulist(sorted(vcpu_cpus))}')
        ok = bool(live_cpus) and live_cpus <= vcpu_cpus
    live = (format_cpulist(sorted(live_cpus)) if live_cpus
            else 'not pinned')
    return verify.Check(
        layer=LAYER, name=f'{guest.domain} emulator threads',
        expected=f'{expected} (hw:emulator_threads_policy='
                 f'{policy or "unset"})',
        live=live, status=verify.PASS if ok else verify.DRIFT,
        fix=None if ok else _hard_reboot(guest), **where)


def _page_check(guest: domain.Domain, where: Where) -> verify.Check | None:
    spec = guest.extra_specs.get('hw:mem_page_size')
    try:
        wanted = extra_specs.page_size_kb(spec)
    except ValueError:
        return verify.unknown(LAYER, f'{guest.domain} pages',
                              f'hw:mem_page_size={spec}',
                              'the flavor\'s page size is not one Nova '
                              'reads', **where)
    if wanted in (None, 'any'):
        return None
    live = ', '.join(f'{kb} KiB' if kb else 'default huge pages'
                     for kb in guest.page_kb) or 'small pages (4 KiB)'
    if wanted == 'small':
        ok, expected = not guest.page_kb, 'small pages (4 KiB)'
    elif wanted == 'large':
        ok, expected = bool(guest.page_kb), 'huge pages (any size)'
    else:
        ok = bool(guest.page_kb) and all(kb == wanted
                                         for kb in guest.page_kb)
        expected = f'{wanted} KiB pages'
    return verify.Check(
        layer=LAYER, name=f'{guest.domain} pages',
        expected=f'{expected} (hw:mem_page_size={spec})', live=live,
        status=verify.PASS if ok else verify.DRIFT,
        fix=None if ok else 'check the huge page pools (kvmtune verify '
        f'--layer host), then {_hard_reboot(guest)}', **where)


def _node_of(facts: Any) -> dict[int, int]:
    nodes = {}
    for node in ((facts or {}).get('numa') or {}).get('nodes') or ():
        # facts carry CPU numbers (kvmtune.facts.schema); None: unknown
        for cpu in node.get('cpus') or ():
            nodes[cpu] = node['id']
    return nodes


def _numa_check(guest: domain.Domain, facts: Any,
                where: Where) -> verify.Check | None:
    if not guest.memnodes or not guest.vcpupins:
        return None
    name = f'{guest.domain} numa memory'
    expected = 'each guest cell\'s memory on its vCPUs\' host node'
    node_of = _node_of(facts)
    if not node_of:
        return verify.unknown(LAYER, name, expected,
                              'no host NUMA facts to map CPUs to nodes',
                              **where)
    wrong, shown = [], []
    for cell, vcpus in sorted(guest.cells.items()):
        cpus = frozenset().union(*(guest.vcpupins.get(v, frozenset())
                                   for v in vcpus))
        nodes = frozenset(node_of[c] for c in cpus if c in node_of)
        memory = guest.memnodes.get(cell, frozenset())
        shown.append(f'cell {cell}: memory {format_cpulist(sorted(memory))}'
                     f', vCPUs on {format_cpulist(sorted(nodes))}')
        if not memory or not nodes or not nodes <= memory:
            wrong.append(cell)
    ok = not wrong
    return verify.Check(
        layer=LAYER, name=name, expected=expected, live='; '.join(shown),
        status=verify.PASS if ok else verify.DRIFT,
        fix=None if ok else _hard_reboot(guest), **where)


def _cachemodes(text: str | list[str] | None) -> dict[str, str]:
    """``[libvirt] disk_cachemodes`` ('file=none,block=none') as a dict."""
    modes = {}
    for item in (text if isinstance(text, list) else (text or '').split(',')):
        kind, sep, mode = str(item).strip().partition('=')
        if sep:
            modes[kind.strip()] = mode.strip()
    return modes


# [libvirt] images_type -> the driver type of the root disk Nova writes
_FORMAT: dict[str | None, str] = {
    'raw': 'raw', 'flat': 'raw', 'lvm': 'raw', 'rbd': 'raw',
    'qcow2': 'qcow2', 'ploop': 'ploop'}


def _disk_checks(guest: domain.Domain, cachemodes: dict[str, str],
                 images_type: str | None,
                 where: Where) -> list[verify.Check]:
    found = []
    if cachemodes:
        wrong = [(dev, kind, cache) for kind, cache, _, dev in guest.disks
                 if kind in cachemodes and cache != cachemodes[kind]]
        looked = [d for d in guest.disks if d[0] in cachemodes]
        if looked:
            found.append(verify.Check(
                layer=LAYER, name=f'{guest.domain} disk cache',
                expected=', '.join(f'{k}={v}' for k, v in
                                   sorted(cachemodes.items())),
                live=', '.join(f'{dev} ({kind}) cache={cache}'
                               for kind, cache, _, dev in looked),
                status=verify.DRIFT if wrong else verify.PASS,
                fix=_hard_reboot(guest) if wrong else None, **where))
    wanted = _FORMAT.get(images_type)
    if wanted and guest.disks:
        kind, _, driver_type, dev = guest.disks[0]
        ok = driver_type == wanted
        found.append(verify.Check(
            layer=LAYER, name=f'{guest.domain} disk format',
            expected=f'{wanted} (images_type={images_type})',
            live=f'{dev} {driver_type}', status=verify.PASS if ok
            else verify.DRIFT,
            fix=None if ok else 'the disk was made before images_type '
            'changed: rebuild or cold-migrate the server to get a '
            f'{wanted} disk', **where))
    return found


def _vhost_check(guest: domain.Domain, rx_queue_size: str | None,
                 where: Where) -> verify.Check | None:
    nics = [nic for nic in guest.interfaces if nic[0] == 'virtio']
    if not nics:
        return None
    expected = "driver name='vhost'" + (
        f' rx_queue_size={rx_queue_size}' if rx_queue_size else '')
    ok = all(driver == 'vhost' and (not rx_queue_size or
                                    str(rx) == str(rx_queue_size))
             for _, driver, rx in nics)
    live = '; '.join(f'driver {driver or "qemu (default)"}'
                     f' rx_queue_size={rx or "default"}'
                     for _, driver, rx in nics)
    return verify.Check(
        layer=LAYER, name=f'{guest.domain} vhost', expected=expected,
        live=live, status=verify.PASS if ok else verify.DRIFT,
        fix=None if ok else 'load vhost_net on the host (kvmtune verify '
        f'--layer host), restart nova-compute, then {_hard_reboot(guest)}',
        **where)


def shared_pin_check(guests: Sequence[domain.Domain],
                     where: Where | None = None) -> verify.Check:
    """No host CPU pinned by two dedicated guests."""
    where = where or {}
    users: dict[int, list[str]] = {}
    for guest in guests:
        if guest.dedicated:
            for cpu in guest.pinned_cpus():
                users.setdefault(cpu, []).append(guest.domain)
    shared = {cpu: names for cpu, names in users.items() if len(names) > 1}
    live = '; '.join(f'CPU {cpu}: {", ".join(names)}'
                     for cpu, names in sorted(shared.items())) or 'none'
    return verify.Check(
        layer=LAYER, name='pinned CPUs shared',
        expected='no host CPU pinned by two dedicated guests', live=live,
        status=verify.DRIFT if shared else verify.PASS,
        fix=('hard reboot one guest of each pair (openstack server reboot '
             '--hard) so Nova pins it from its own claim')
        if shared else None, **where)


def check_guests(guests: Sequence[domain.Domain], plans: Sequence['Plan'],
                 facts: Any = None,
                 where: Where | None = None) -> list[verify.Check]:
    """The checks for parsed guests against plans (pure: no libvirt)."""
    where = where or {}
    dedicated_set = _planned(plans, 'compute', 'cpu_dedicated_set')
    shared_set = _planned(plans, 'compute', 'cpu_shared_set')
    dedicated_set = frozenset(parse_cpu_spec(dedicated_set or ''))
    shared_set = frozenset(parse_cpu_spec(shared_set or ''))
    cachemodes = _cachemodes(_planned(plans, 'libvirt', 'disk_cachemodes'))
    images_type = _planned(plans, 'libvirt', 'images_type')
    rx_queue_size = _planned(plans, 'libvirt', 'rx_queue_size')
    found = []
    for guest in guests:
        if guest.dedicated:
            found.append(_pin_check(guest, dedicated_set, where))
            found.append(_emulator_check(guest, dedicated_set, shared_set,
                                         where))
        for check in (_page_check(guest, where),
                      _numa_check(guest, facts, where),
                      _vhost_check(guest, rx_queue_size, where)):
            if check is not None:
                found.append(check)
        found.extend(_disk_checks(guest, cachemodes, images_type, where))
    if any(guest.dedicated for guest in guests):
        found.append(shared_pin_check(guests, where))
    return found


def checks(plans: Sequence['Plan'],
           ctx: verify.Context) -> list[verify.Check]:
    where = {'host': ctx.host}
    if ctx.domains is not None:
        texts = list(ctx.domains)
    elif ctx.elsewhere and ctx.libvirt_uri is None:
        return [verify.unknown(
            LAYER, 'guests', 'Nova\'s domains read',
            f'{ctx.origin} names another host; this machine\'s libvirt '
            'holds none of its guests: give --domain-xml-dir ("virsh '
            'dumpxml" of each, from that host) or --libvirt-uri '
            '(qemu+ssh://HOST/system)', **where)]
    else:
        try:
            texts = domain.read_domains(ctx.libvirt_uri)
        except domain.LibvirtUnavailable as exc:
            return [verify.unknown(LAYER, 'guests', 'Nova\'s domains read',
                                   str(exc), **where)]
    guests, others, bad = [], 0, []
    for source, text in texts:
        try:
            guest = domain.parse_domain(text)
        except ValueError as exc:
            bad.append(verify.unknown(LAYER, f'{source}', 'a libvirt domain',
                                      f'{source}: {exc}', **where))
            continue
        if guest is None:
            others += 1
        else:
            guests.append(guest)
    found = [verify.Check(
        layer=LAYER, name='guests', expected='Nova\'s domains read',
        live=f'{len(guests)} Nova domains, {others} others',
        status=verify.PASS, **where)] + bad
    return found + check_guests(guests, plans, facts=ctx.facts, where=where)
