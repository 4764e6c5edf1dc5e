"""Local benchmark guests as plain QEMU processes (no libvirt needed)."""

from collections.abc import Iterable
from collections.abc import Mapping
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from typing import Any

from kvmtune.errors import KvmtuneError
from kvmtune.facts.types import VirtFacts
from kvmtune import image
from kvmtune.image import disk

QEMU = 'qemu-system-x86_64'
DATA_DISK = '/dev/vdb'   # the boot disk is vda; the guest refuses it
# The data disk as the guest names it, by bus: virtio-blk after the boot
# disk (vda), virtio-scsi the first SCSI disk (the config drive's CD-ROM
# on IDE is sr0).
DATA_DISKS = {'virtio-blk': DATA_DISK, 'virtio-scsi': '/dev/sda'}
BUSES = tuple(DATA_DISKS)
# Each guest's QMP socket in its workdir (the start signal: inject-nmi).
QMP_SOCKET = 'qmp.sock'
QMP_TIMEOUT = 10


def check_image(image_dir: str, build: str = 'kvmtune image build') -> None:
    """Refuse a run whose guest image or QEMU is missing, in one line;
    ``build`` is the command that makes the image."""
    from kvmtune.errors import InputError

    missing = [n for n in (image.KERNEL, image.INITRD, image.RAW)
               if not os.path.exists(os.path.join(image_dir, n))]
    if missing:
        raise InputError(f'{missing[0]} missing', source=image_dir,
                         fix=f'run {build}')
    if not shutil.which(QEMU):
        raise KvmtuneError(f'{QEMU} not found',
                           fix='apt-get install qemu-system-x86')


def choose_accel(requested: str,
                 virt: VirtFacts | Mapping[str, Any] | None = None
                 ) -> tuple[str, str]:
    """('kvm' | 'tcg', why).

    ``auto`` takes KVM only when KVM_CREATE_VM works and the host has
    hardware virtualization (vmx/svm). KVM provided by kvm_pvm (software
    nested virtualization) creates VMs, but stock guest kernels hang in
    their decompressor under it, so auto falls back to TCG there, and
    ``kvm`` asked for is refused with that reason (the guests would hang
    until their ready timeout) rather than run.
    """
    if requested == 'tcg':
        return 'tcg', 'asked for'
    if virt is None:
        from kvmtune import facts
        virt = facts.gather()['virt']
    usable = virt.get('kvm_usable')
    mechanism = virt.get('mechanism')
    if usable and mechanism in ('vmx', 'svm'):
        return 'kvm', ('asked for' if requested == 'kvm' else
                       f'KVM works with {mechanism}')
    if usable:
        why = (f'KVM here is provided by {mechanism or "an unknown module"} '
               'without vmx/svm; stock guest kernels do not boot under it')
    else:
        why = 'KVM is not usable here'
    if requested == 'kvm':
        raise KvmtuneError(why, key='--accel', fix='use --accel tcg or auto')
    return 'tcg', why


def accel_label(accel: str) -> str:
    return 'emulated (TCG)' if accel == 'tcg' else 'KVM'


def network_data(instance_id: str, mac: str, address: str,
                 mtu: int | None = None, gateway: str | None = None
                 ) -> dict[str, Any]:
    """network_data.json for one NIC with a static IPv4 address, in the
    shape nova.virt.netutils.get_network_metadata gives it when the
    subnet has no DHCP server.

    :param address: ``ip/prefix``
    """
    ip, prefix = address.split('/')
    mask = (0xffffffff << (32 - int(prefix))) & 0xffffffff
    link = f'tap{instance_id[:11]}'
    return {
        'links': [{'id': link, 'vif_id': instance_id, 'type': 'bridge',
                   'mtu': mtu, 'ethernet_mac_address': mac}],
        'networks': [{
            'id': 'network0', 'type': 'ipv4', 'link': link,
            'ip_address': ip,
            'netmask': '.'.join(str(mask >> s & 255)
                                for s in (24, 16, 8, 0)),
            'routes': ([{'network': '0.0.0.0', 'netmask': '0.0.0.0',
                         'gateway': gateway}] if gateway else []),
            'network_id': 'kvmtune-local-net', 'services': []}],
        'services': []}


def config_drive(path: str, workdir: str, instance_id: str, job_text: str,
                 network: Mapping[str, Any] | None = None) -> None:
    """An ISO 9660 config drive (label config-2) as Nova writes one.

    :param network: the network_data.json dict (see network_data), or None
    """
    root = os.path.join(workdir, 'config-drive')
    latest = os.path.join(root, 'openstack', 'latest')
    os.makedirs(latest)
    with open(os.path.join(latest, 'meta_data.json'), 'w') as f:
        json.dump({'uuid': instance_id, 'name': f'kvmtune-{instance_id}'},
                  f)
    with open(os.path.join(latest, 'user_data'), 'w') as f:
        f.write(job_text)
    if network is not None:
        with open(os.path.join(latest, 'network_data.json'), 'w') as f:
            json.dump(network, f)
    tool = shutil.which('genisoimage') or shutil.which('mkisofs')
    if not tool:
        raise KvmtuneError('genisoimage not found',
                           fix='apt-get install genisoimage')
    proc = subprocess.run([tool, '-quiet', '-o', path, '-V', 'config-2',
                           '-r', '-J', root], capture_output=True, text=True)
    if proc.returncode:
        raise KvmtuneError(f'{tool} failed: {proc.stderr.strip()}')
    shutil.rmtree(root)


def data_disk(path: str, size: int | str, fmt: str) -> None:
    """A preallocated scratch disk: reads hit real blocks, not holes."""
    proc = subprocess.run(['qemu-img', 'create', '-q', '-f', fmt, '-o',
                           'preallocation=full', path, str(size)],
                          capture_output=True, text=True)
    if proc.returncode:
        raise KvmtuneError(f'qemu-img create failed: {proc.stderr.strip()}',
                           key='--disk-size')


class Qmp:
    """A QMP session on a QEMU's unix socket: the greeting is read and
    capabilities negotiated on connect, then ``command`` runs commands.

    Every reply is read and checked; anything but a ``return`` for the
    command sent (an ``error``, a closed socket, a timeout, text that is not
    a JSON object) raises KvmtuneError naming the socket.
    """

    def __init__(self, path: str, timeout: float = QMP_TIMEOUT) -> None:
        self.path = path
        self._buffer = b''
        self._ids = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as exc:
            self._sock.close()
            raise self._error(f'cannot connect: {exc.strerror or exc}',
                              'is the guest\'s QEMU still running?')
        try:
            greeting = self._read()
            if 'QMP' not in greeting:
                raise self._error(f'no QMP greeting: {_short(greeting)}')
            self.command('qmp_capabilities')
        except BaseException:
            self.close()
            raise

    def _error(self, problem: str, fix: str | None = None) -> KvmtuneError:
        return KvmtuneError(f'QMP: {problem}', source=self.path, fix=fix)

    def _read(self) -> dict[str, Any]:
        """The next message QEMU sent (one JSON object a line)."""
        while b'\n' not in self._buffer:
            try:
                chunk = self._sock.recv(4096)
            except socket.timeout:
                raise self._error('no reply in time') from None
            except OSError as exc:
                raise self._error(f'read failed: {exc}') from None
            if not chunk:
                raise self._error('QEMU closed the socket')
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b'\n', 1)
        try:
            message = json.loads(line.decode('utf-8', 'replace'))
        except ValueError:
            raise self._error(f'not JSON: {_short(line)}') from None
        if not isinstance(message, dict):
            raise self._error(f'not a JSON object: {_short(message)}')
        return message

    def command(self, name: str,
                arguments: Mapping[str, Any] | None = None) -> Any:
        """Run ``name``; its ``return`` value (QMP events are skipped)."""
        self._ids += 1
        request: dict[str, Any] = {'execute': name, 'id': self._ids}
        if arguments:
            request['arguments'] = arguments
        try:
            self._sock.sendall(json.dumps(request).encode() + b'\n')
        except OSError as exc:
            raise self._error(f'{name}: send failed: {exc}') from None
        while True:
            reply = self._read()
            if 'event' in reply:
                continue
            # QEMU echoes the id (not on a reply to a line it could not
            # parse, which is an error anyway)
            if reply.get('id', self._ids) != self._ids:
                raise self._error(f'{name}: reply to another command: '
                                  f'{_short(reply)}')
            if 'error' in reply:
                error = reply['error'] if isinstance(reply['error'],
                                                     dict) else {}
                raise self._error(f'{name} failed: '
                                  f'{error.get("class", "error")}: '
                                  f'{error.get("desc", _short(reply))}')
            if 'return' not in reply:
                raise self._error(f'{name}: unexpected reply '
                                  f'{_short(reply)}')
            return reply['return']

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> 'Qmp':
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _short(value: object, limit: int = 120) -> str:
    """A reply or line for an error message, cut to ``limit``."""
    if isinstance(value, bytes):
        text = value.decode('utf-8', 'replace')
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value)
    return text if len(text) <= limit else text[:limit] + '...'


class Guest:
    """One QEMU process; its serial console goes to a file, its QMP
    monitor to a unix socket (``qmp_path``) for the start signal."""

    # The command line bench local's run builds before it starts them.
    argv_used: list[str]

    def __init__(self, index: int, instance_id: str, workdir: str) -> None:
        self.index = index
        self.instance_id = instance_id
        self.workdir = workdir
        self.console = os.path.join(workdir, 'console.log')
        self.qmp_path = os.path.join(workdir, QMP_SOCKET)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started: float | None = None
        self.ended: float | None = None
        # What bench local's run sets (kvmtune.bench.local): the job's
        # role, when the ready line was seen and the start signal sent
        # (monotonic), why no signal went, the ready timeout it missed.
        self.role = 'client'
        self.ready_seen: float | None = None
        self.signalled: float | None = None
        self.signal_error: str | None = None
        self.missed: float | None = None

    def argv(self, accel: str, vcpus: int, ram_mb: int, image_dir: str,
             data: str | None, data_format: str, cache: str,
             job_cmdline: str | None = None, cdrom: str | None = None,
             boot: str = 'kernel', nic: tuple[str, str] | None = None,
             bus: str = 'virtio-blk', iothread: bool = True,
             hugepages: str | None = None,
             pin: Iterable[int] | None = None) -> list[str]:
        """:param data: the scratch data disk (vdb), or None
        :param nic: (mcast group:port, MAC) of a NIC on a QEMU socket
            network shared by this run's guests, or None
        :param bus: the data disk's bus, virtio-blk or virtio-scsi
        :param iothread: serve the data disk from its own I/O thread
            (libvirt ``<iothreads>``, ``iothread=`` on the disk's driver)
            instead of QEMU's main loop
        :param hugepages: a hugetlbfs mount: guest RAM in huge pages from
            it (libvirt ``<memoryBacking><hugepages/>``), else None
        :param pin: host CPUs the whole QEMU process (vCPU, I/O and
            emulator threads, as Nova pins them by default) may run on
            (``taskset``), else None
        """
        machine = f'pc,accel={accel},graphics=off'
        memory: list[str] = []
        if hugepages:
            machine += ',memory-backend=ram0'
            memory = ['-object', f'memory-backend-file,id=ram0,'
                                 f'size={ram_mb}M,mem-path={hugepages},'
                                 'prealloc=on,share=off']
        argv = [*(['taskset', '-c', ','.join(map(str, pin))] if pin
                  else []),
                QEMU, '-name', f'kvmtune-bench-{self.index}',
                '-machine', machine, *memory,
                *(['-cpu', 'host'] if accel == 'kvm' else []),
                '-m', str(ram_mb), '-smp', str(vcpus),
                '-nodefaults', '-display', 'none', '-no-reboot',
                '-smbios', f'type=1,uuid={self.instance_id}',
                '-serial', f'file:{self.console}', '-monitor', 'none',
                '-qmp', f'unix:{self.qmp_path},server=on,wait=off',
                *(['-object', 'iothread,id=io0'] if iothread else []),
                # vda: the image, read-only, shared by all guests; fixed
                # PCI slots keep it vda and first in the BIOS boot order.
                '-drive', f'file={os.path.join(image_dir, image.RAW)},'
                          'format=raw,if=none,id=boot,readonly=on',
                '-device', 'virtio-blk-pci,drive=boot,addr=0x4' + (
                    ',bootindex=0' if boot == 'disk' else '')]
        if data:
            io = ',iothread=io0' if iothread else ''
            argv += ['-drive', f'file={data},format={data_format},if=none,'
                               f'id=data,cache={cache}']
            if bus == 'virtio-scsi':
                argv += ['-device', f'virtio-scsi-pci,id=scsi0{io},addr=0x5',
                         '-device', 'scsi-hd,drive=data,bus=scsi0.0,'
                                    'channel=0,scsi-id=0,lun=0']
            else:
                argv += ['-device', f'virtio-blk-pci,drive=data{io},'
                                    'addr=0x5']
        if nic:
            # No vhost: a socket network is QEMU's own userspace path.
            group, mac = nic
            argv += ['-netdev', f'socket,id=net0,mcast={group},'
                                'localaddr=127.0.0.1',
                     '-device', f'virtio-net-pci,netdev=net0,mac={mac},'
                                'addr=0x6']
        if boot == 'kernel':
            # Direct kernel boot (seconds faster under TCG than BIOS and
            # syslinux); the job may ride on the command line.
            argv += ['-kernel', os.path.join(image_dir, image.KERNEL),
                     '-initrd', os.path.join(image_dir, image.INITRD),
                     '-append', f'{disk.KERNEL_CMDLINE} {job_cmdline or ""}']
        if cdrom:
            argv += ['-drive', f'file={cdrom},media=cdrom,if=ide,'
                               'readonly=on']
        return argv

    def start(self, argv: list[str]) -> None:
        self.started = time.monotonic()
        with open(os.path.join(self.workdir, 'qemu.log'), 'w') as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log,
                                         start_new_session=True)

    def poll(self) -> int | None:
        if self.proc and self.proc.poll() is not None and not self.ended:
            self.ended = time.monotonic()
        return self.proc.returncode if self.proc else None

    def qmp(self, timeout: float = QMP_TIMEOUT) -> Qmp:
        """A negotiated QMP session with this guest's QEMU (close it)."""
        return Qmp(self.qmp_path, timeout)

    def inject_nmi(self, session: Qmp | None = None) -> None:
        """The start signal (design.md 6): an NMI into the guest's vCPUs,
        as libvirt does for Nova's trigger_crash_dump. ``session``: an
        open ``qmp()`` to reuse, else one is opened and closed."""
        if session is not None:
            session.command('inject-nmi')
            return
        with self.qmp() as own:
            own.command('inject-nmi')

    def qemu_error(self) -> str:
        try:
            with open(os.path.join(self.workdir, 'qemu.log')) as f:
                lines = f.read().strip().splitlines()
        except OSError:
            return ''
        return lines[-1] if lines else ''

    def console_text(self) -> str:
        try:
            with open(self.console, 'rb') as f:
                return f.read().decode('utf-8', 'surrogateescape')
        except FileNotFoundError:
            return ''

    def stop(self, grace: float = 5) -> None:
        """Terminate (then kill) this guest's QEMU; idempotent."""
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
