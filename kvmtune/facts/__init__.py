"""Host facts: what a KVM compute host has, read from /proc, /sys and /dev.

``gather(root)`` reads the live host (root ``/``) or a tree captured by
``kvmtune host capture``; ``load(path)`` reads facts saved by
``kvmtune host inspect --format json`` on another host; ``resolve()`` picks
one of the three for commands that take ``--root`` / ``--facts``. The keys
are documented in doc/facts.md and fixed by doc/design.md section 1.
"""

import os
from typing import Any
from typing import cast

from kvmtune.errors import InputError
from kvmtune.facts import cpu
from kvmtune.facts import hostfs
from kvmtune.facts import kernel
from kvmtune.facts import memory
from kvmtune.facts import schema
from kvmtune.facts.types import Facts
from kvmtune.facts.types import KvmProbe
from kvmtune.facts.types import VhostNetFacts
from kvmtune.facts import virt

CAPTURE_FILE = 'kvmtune-capture.json'
HOSTNAME = '/proc/sys/kernel/hostname'
OSRELEASE = '/proc/sys/kernel/osrelease'
CMDLINE = '/proc/cmdline'
VHOST_NET_DEVICE = '/dev/vhost-net'
VHOST_NET_MODULE = '/sys/module/vhost_net'
REGENERATE = 'regenerate it with kvmtune host inspect --format json'


def is_live(root: str) -> bool:
    return os.path.realpath(root) == '/'


def recorded_probe(root: str) -> KvmProbe | None:
    """The KVM probe ``host capture`` recorded, or None."""
    from kvmtune import inputs

    path = os.path.join(root, CAPTURE_FILE)
    if not os.path.exists(path):
        return None
    try:    # a FIFO there is refused, never read (it would hang)
        doc = inputs.load_json(path, max_bytes=16 << 20)
    except InputError:
        return None         # a broken record: the probe is unknown
    probe = doc.get('kvm_probe') if isinstance(doc, dict) else None
    if not isinstance(probe, dict) or 'usable' not in probe:
        return None
    return cast(KvmProbe, probe)


def _vhost_net(files: hostfs.HostFiles) -> VhostNetFacts:
    device = files.exists(VHOST_NET_DEVICE)
    module: Any
    if not files.exists(VHOST_NET_MODULE):
        module = 'absent'
    elif files.exists(VHOST_NET_MODULE + '/initstate'):
        module = 'loaded'   # only loadable modules have an initstate
    else:
        module = 'builtin'
    return {'available': device, 'device': device, 'module': module}


def collect(files: hostfs.HostFiles,
            kvm_probe: KvmProbe | None = None) -> Facts:
    """Build the facts from a HostFiles view (used by gather and capture)."""
    cpu_facts = cpu.gather(files)
    memory_facts, numa = memory.gather(files, cpu_facts['online'])
    cmdline = files.read_value(CMDLINE)
    return {
        'schema': schema.SCHEMA_VERSION,
        'source': files.root,
        'hostname': files.read_value(HOSTNAME),
        'cpu': cpu_facts,
        'virt': virt.gather(files, cpu_facts['flags'], kvm_probe),
        'memory': memory_facts,
        'numa': numa,
        'vhost_net': _vhost_net(files),
        'kernel': {'release': files.read_value(OSRELEASE),
                   'cmdline': cmdline,
                   'args': kernel.parse_args(cmdline or '')},
        'versions': {'libvirt': None, 'qemu': None},
    }


def gather(root: str = '/', probe_kvm: bool | None = None) -> Facts:
    """Return the facts of the host whose /proc and /sys are under root.

    :param probe_kvm: True to probe /dev/kvm with KVM_CREATE_VM, False not
        to; None (default) probes on the live root and reads the recorded
        probe of a captured one.
    """
    if probe_kvm is None:
        probe_kvm = is_live(root)
    probe: KvmProbe | None
    if probe_kvm:
        probe = virt.probe_kvm(os.path.join(root, virt.KVM_DEVICE[1:]))
    else:
        probe = None if is_live(root) else recorded_probe(root)
    return collect(hostfs.HostFiles(root), probe)


def load(path: str) -> Facts:
    """Read and check a facts JSON file; InputError names what is wrong."""
    from kvmtune import inputs

    # Regular file, bounded size and nesting, finite numbers: kvmtune.inputs.
    try:
        data = inputs.read_bytes(path, max_bytes=16 << 20)
    except InputError as exc:
        raise InputError(f'cannot read facts: {exc.problem}', source=path,
                         fix=exc.fix) from None
    facts = parse(data, path)
    facts['source'] = path
    return facts


def parse(data: bytes, source: str) -> Facts:
    """Check facts JSON ``data`` (``kvmtune host inspect -f json``, as a
    file holds it or another host printed it; ``source`` names where it
    came from); InputError names what is wrong."""
    from kvmtune import inputs

    try:
        facts = inputs.parse_json(data, source)
    except InputError as exc:
        raise InputError(exc.problem, source=source,
                         fix=REGENERATE) from None
    for key, problem in schema.problems(facts):
        raise InputError(problem, source=source, key=key or None,
                         fix=REGENERATE)
    if facts['schema'] != schema.SCHEMA_VERSION:
        raise InputError(f'schema {facts["schema"]} is not supported '
                         f'(this kvmtune reads {schema.SCHEMA_VERSION})',
                         source=source, key='schema', fix=REGENERATE)
    if not facts['numa']['nodes']:
        raise InputError('no NUMA node', source=source, key='numa.nodes',
                         fix=REGENERATE)
    return cast(Facts, facts)


def resolve(root: str | None = None,
            facts_file: str | None = None) -> Facts:
    """Facts for a command: from a file, a captured tree, or this host."""
    if root is not None and facts_file is not None:
        raise InputError('--root and --facts are exclusive',
                         fix='give one of them')
    if facts_file is not None:
        return load(facts_file)
    if root is not None and not os.path.isfile(
            os.path.join(root, cpu.CPUINFO.lstrip('/'))):
        raise InputError('not a host tree (no proc/cpuinfo in it)',
                         source=root,
                         fix='give a directory made by kvmtune host capture')
    return gather(root or '/')
