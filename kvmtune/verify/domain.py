"""The guests layer's input (kvmtune.verify.guests): the live domain XML
of this host's running domains, read through libvirt's read-only
connection (libvirt-python when it is installed, else ``virsh -r``), and
parsed into a Domain when Nova made the domain (it carries Nova's
``<nova:instance>`` metadata, whose flavor names its extra specs since
Nova 2023.1: no API call is needed)."""

import dataclasses
import shutil
import subprocess
from typing import Any
import xml.etree.ElementTree as ET

from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.tuning import extra_specs


NOVA_NS_PREFIX = '{http://openstack.org/xmlns/libvirt/nova/'
DEFAULT_URI = 'qemu:///system'
VIRSH_TIMEOUT = 60
# Domain XML of one guest is a few KiB; anything far larger is not one.
MAX_XML = 4 << 20


@dataclasses.dataclass
class Domain:
    """The parts of one Nova guest's domain XML that verify reads.

    vcpupins      {vcpu: frozenset of host CPUs} from <cputune><vcpupin>
    emulatorpin   frozenset of host CPUs, or None
    page_kb       [page size in KiB] from <memoryBacking><hugepages>
    cells         {guest cell id: frozenset of vcpus} from <cpu><numa>
    memnodes      {guest cell id: frozenset of host nodes} (<numatune>)
    disks         [(source type, driver cache, driver type, target dev)]
    interfaces    [(model, driver name, rx_queue_size)]
    """
    domain: str
    uuid: str
    name: str
    flavor: str
    vcpus: int
    extra_specs: dict[str, str]
    vcpupins: dict[int, frozenset[int]]
    emulatorpin: frozenset[int] | None
    page_kb: list[int | None]
    cells: dict[int, frozenset[int]]
    memnodes: dict[int, frozenset[int]]
    disks: list[tuple[str | None, str | None, str | None, str | None]]
    interfaces: list[tuple[str | None, str | None, str | None]]

    @property
    def dedicated(self) -> bool:
        return self.extra_specs.get('hw:cpu_policy') == 'dedicated'

    def pinned_cpus(self) -> frozenset[int]:
        return frozenset().union(*self.vcpupins.values())


def _cpus(text: str | None) -> frozenset[int]:
    return frozenset(parse_cpulist(text or ''))


def _nova(root: Any) -> Any:
    """Nova's <nova:instance> element (any version of its namespace)."""
    metadata = root.find('metadata')
    if metadata is None:
        return None
    for child in metadata:
        if child.tag.startswith(NOVA_NS_PREFIX) and \
                child.tag.endswith('}instance'):
            return child
    return None


def _child(element: Any, local: str) -> Any:
    for child in element if element is not None else ():
        if child.tag.endswith('}' + local):
            return child
    return None


def parse_domain(text: str) -> Domain | None:
    """A Domain from one domain's XML, or None when Nova did not make it.

    :raises ValueError: the text is not a libvirt domain's XML
    """
    # ElementTree's optional attributes are read as libvirt writes them
    root: Any
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError(f'not XML: {exc}') from None
    if root.tag != 'domain':
        raise ValueError(f'the root element is <{root.tag}>, not <domain>')
    nova = _nova(root)
    if nova is None:
        return None
    flavor = _child(nova, 'flavor')
    specs = {}
    for spec in _child(flavor, 'extraSpecs') or ():
        if spec.get('name'):
            specs[spec.get('name')] = (spec.text or '').strip()
    vcpus = _child(flavor, 'vcpus')
    name = _child(nova, 'name')
    cputune = root.find('cputune')
    pins = {}
    emulator = None
    if cputune is not None:
        for pin in cputune.findall('vcpupin'):
            pins[_int(pin, 'vcpu')] = _cpus(pin.get('cpuset'))
        if cputune.find('emulatorpin') is not None:
            emulator = _cpus(cputune.find('emulatorpin').get('cpuset'))
    pages: list[int | None] = []
    for page in root.findall('memoryBacking/hugepages/page'):
        pages.append(_kib(page.get('size'), page.get('unit') or 'KiB'))
    if root.find('memoryBacking/hugepages') is not None and not pages:
        pages.append(None)   # the host's default huge page size
    cells = {_int(cell, 'id'): _cpus(cell.get('cpus'))
             for cell in root.findall('cpu/numa/cell')}
    memnodes = {_int(node, 'cellid'): _cpus(node.get('nodeset'))
                for node in root.findall('numatune/memnode')}
    disks = []
    for disk in root.findall('devices/disk'):
        if disk.get('device', 'disk') != 'disk':
            continue
        driver = disk.find('driver')
        target = disk.find('target')
        disks.append((disk.get('type'),
                      driver.get('cache') if driver is not None else None,
                      driver.get('type') if driver is not None else None,
                      target.get('dev') if target is not None else '?'))
    interfaces = []
    for nic in root.findall('devices/interface'):
        model = nic.find('model')
        driver = nic.find('driver')
        interfaces.append((
            model.get('type') if model is not None else None,
            driver.get('name') if driver is not None else None,
            driver.get('rx_queue_size') if driver is not None else None))
    return Domain(
        domain=root.findtext('name') or '?',
        uuid=root.findtext('uuid') or '?',
        name=(name.text or '').strip() if name is not None else '',
        flavor=flavor.get('name') if flavor is not None else '?',
        vcpus=int(vcpus.text) if vcpus is not None and vcpus.text
        else int(root.findtext('vcpu') or 0),
        extra_specs=specs, vcpupins=pins, emulatorpin=emulator,
        page_kb=pages, cells=cells, memnodes=memnodes, disks=disks,
        interfaces=interfaces)


def _int(element: Any, attribute: str) -> int:
    """An element's integer attribute; ValueError (never TypeError) when it
    is missing or not a number, so bad XML is one UNKNOWN row."""
    value = element.get(attribute)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f'<{element.tag} {attribute}={value!r}>: not an '
                         'integer') from None


# libvirt also takes bytes
_UNITS = dict(extra_specs.KIB_PER_UNIT, b=1 / 1024, bytes=1 / 1024)


def _kib(size: str | None, unit: str | None) -> int:
    """A libvirt size and unit in KiB (libvirt's units are binary)."""
    factor = _UNITS.get((unit or 'KiB').lower())
    if size is None or factor is None:
        raise ValueError(f'page size {size!r} {unit!r}')
    return int(int(size) * factor)


def read_files(directory: str) -> list[tuple[str, str]]:
    """[(file name, XML)] of the *.xml files in ``directory`` ("virsh
    dumpxml" of each guest), read instead of libvirt (``verify
    --domain-xml-dir``)."""
    from kvmtune import inputs

    found = []
    for stem, path in inputs.names_in(
            directory, '.xml', key='--domain-xml-dir',
            fix='give a directory of "virsh dumpxml" files').items():
        data = inputs.read_bytes(path, max_bytes=MAX_XML,
                                 fix='give "virsh dumpxml" output')
        found.append((stem + '.xml', data.decode('utf-8', 'replace')))
    return found


class LibvirtUnavailable(Exception):
    """libvirt could not be read; the message says why."""


def read_domains(uri: str | None = None) -> list[tuple[str, str]]:
    """[(name, live XML)] of every running domain, through a read-only
    connection: libvirt-python when installed, else ``virsh -r``.

    :raises LibvirtUnavailable: no libvirt, or it refused the connection
    """
    uri = uri or DEFAULT_URI
    try:
        import libvirt
    except ImportError:
        libvirt = None
    if libvirt is not None:
        try:
            conn = libvirt.openReadOnly(uri)
            try:
                return [(dom.name(), dom.XMLDesc(0))
                        for dom in conn.listAllDomains(
                            libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)]
            finally:
                conn.close()
        except libvirt.libvirtError as exc:
            raise LibvirtUnavailable(
                f'libvirt at {uri} refused: {exc}') from None
    virsh = shutil.which('virsh')
    if virsh is None:
        raise LibvirtUnavailable('neither libvirt-python nor virsh is '
                                 'installed')
    names = _virsh(virsh, uri, 'list', '--name', '--state-running')
    return [(name, _virsh(virsh, uri, 'dumpxml', name))
            for name in names.split() if name]


def _virsh(virsh: str, uri: str, *argv: str) -> str:
    try:
        done = subprocess.run([virsh, '-r', '-c', uri, *argv],
                              capture_output=True, text=True,
                              timeout=VIRSH_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise LibvirtUnavailable(f'virsh {argv[0]} on {uri} did not answer '
                                 f'in {VIRSH_TIMEOUT} s') from None
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or ['no message'])[-1]
        raise LibvirtUnavailable(f'libvirt at {uri} refused: {message}')
    return done.stdout
