"""The host side of the test cloud: Debian packages, MariaDB, RabbitMQ,
libvirt, hugetlbfs mounts and the virt type.

MariaDB, RabbitMQ, libvirtd and virtlogd already running are reused;
``up`` records which ones it started, and ``down`` stops only those.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import os
import re
import shutil
import socket
import subprocess
from typing import Any
from typing import IO

from kvmtune.errors import CloudError
from kvmtune.testcloud import config
from kvmtune.testcloud import neutron
from kvmtune.testcloud import procs

APT_BASE = ('mariadb-server', 'rabbitmq-server', 'python3-venv')
APT_LIBVIRT = ('libvirt-daemon', 'libvirt-daemon-driver-qemu',
               'libvirt-clients', 'qemu-system-x86', 'qemu-utils',
               'genisoimage', 'pkg-config', 'libvirt-dev') + neutron.APT
QEMU_CONF = '/etc/libvirt/qemu.conf'
QEMU_CONF_BLOCK = """
# kvmtune test cloud: root-run QEMU without cgroups or a security driver
cgroup_controllers = [ ]
user = "root"
group = "root"
security_driver = "none"
"""


def dpkg_installed(package: str) -> bool:
    out = subprocess.run(['dpkg-query', '-W', '-f=${Status}', package],
                         capture_output=True, text=True).stdout
    return out.endswith('installed') and 'not-installed' not in out


def apt_install(packages: Sequence[str], say: Callable[[str], object],
                output: IO[Any] | None = None) -> None:
    """Install the missing Debian packages; apt's own output goes to
    ``output`` (a file object; None: this process's stdout)."""
    missing = [p for p in packages if not dpkg_installed(p)]
    if not missing:
        say('apt: all present (%s)' % ' '.join(packages))
        return
    say('apt: installing %s' % ' '.join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    policy = subprocess.run(['apt-cache', 'policy', missing[0]],
                            capture_output=True, text=True).stdout
    if 'Candidate: (none)' in policy or not policy.strip():
        subprocess.check_call(['apt-get', 'update', '-q'], env=env,
                              stdout=output, stderr=output)
    subprocess.check_call(['apt-get', '-o', 'DPkg::Lock::Timeout=300',
                           'install', '-y', '-q',
                           '--no-install-recommends'] + missing, env=env,
                          stdout=output, stderr=output)


def venv_satisfied(layout: config.Layout, requirements: str) -> bool:
    """True when the venv has every package of ``requirements`` at its
    pinned version."""
    check = ('import importlib.metadata as m, sys\n'
             'for line in open(sys.argv[1]):\n'
             '    line = line.split("#")[0].strip()\n'
             '    if not line: continue\n'
             '    name, _, version = line.partition("==")\n'
             '    try: have = m.version(name)\n'
             '    except m.PackageNotFoundError: sys.exit(1)\n'
             '    if version and have != version: sys.exit(1)\n')
    return os.path.exists(layout.python) and subprocess.call(
        [layout.python, '-c', check, requirements]) == 0


def qemu_conf(say: Callable[[str], object]) -> None:
    # libvirt-daemon-system ships the file; the bare daemon runs without.
    try:
        with open(QEMU_CONF) as f:
            text = f.read()
    except FileNotFoundError:
        text = ''
    if QEMU_CONF_BLOCK.strip() in text:
        return
    procs.write_file(QEMU_CONF, text + QEMU_CONF_BLOCK, 0o600)
    say('libvirt: %s: root QEMU, no cgroups, no security driver'
        % QEMU_CONF)


# --- MariaDB, RabbitMQ, libvirt ------------------------------------------

def port_open(port: int) -> bool:
    """True when something accepts TCP connections on 127.0.0.1:port."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((config.HOST, port)) == 0


def mysql(sql: str) -> str:
    out = subprocess.run(['mariadb', '-uroot', '-N', '-B', '-e', sql],
                         capture_output=True, text=True)
    if out.returncode:
        raise CloudError(out.stderr.strip(), source='mariadb',
                         fix='is MariaDB running? (kvmtune cloud up '
                             'starts it)')
    return out.stdout


def _mysql_up() -> bool:
    return subprocess.call(['mariadb', '-uroot', '-e', 'SELECT 1'],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) == 0


def _process_exists(predicate: Callable[[list[bytes]], bool]) -> bool:
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/cmdline' % entry, 'rb') as f:
                    if predicate(f.read().split(b'\0')):
                        return True
            except OSError:
                continue
    return False


def _mariadbd(argv: Sequence[bytes]) -> bool:
    return argv[0] == b'/usr/sbin/mariadbd'


def _rabbit(argv: Sequence[bytes]) -> bool:
    return b'rabbit' in argv and b'boot' in argv and b'-s' in argv


def ensure_mariadb() -> bool:
    """Start MariaDB unless its server process exists; True if started.

    Decided by the process, not by a query: a slow server is not a
    stopped one, and `down` stops only what `up` started.
    """
    started = not _process_exists(_mariadbd)
    if started:
        os.makedirs('/run/mysqld', exist_ok=True)
        shutil.chown('/run/mysqld', 'mysql', 'mysql')
        subprocess.check_call(['start-stop-daemon', '--start', '--oknodo',
                               '--background', '--exec',
                               '/usr/sbin/mariadbd'])
    procs.wait_until(_mysql_up, 60, 'MariaDB')
    return started


def _rabbit_up() -> bool:
    return port_open(5672) and subprocess.call(
        ['rabbitmqctl', '-q', 'await_startup'], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL) == 0


def ensure_rabbitmq() -> bool:
    started = not _process_exists(_rabbit)
    if started:
        # epmd binds 0.0.0.0 unless told otherwise.
        env = dict(os.environ, ERL_EPMD_ADDRESS=config.HOST,
                   RABBITMQ_NODE_IP_ADDRESS=config.HOST)
        subprocess.check_call(['rabbitmq-server', '-detached'], env=env)
    procs.wait_until(_rabbit_up, 90, 'RabbitMQ')
    return started


def reset_databases(lay: config.Layout, secrets: Mapping[str, str]
                    ) -> None:
    """Drop and create the cloud's databases and its DB user's grants
    (the names of ``lay``: another cloud's are left alone)."""
    sql = []
    for db in lay.databases.values():
        sql.append('DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s` '
                   'CHARACTER SET utf8mb4;' % (db, db))
    for host in ('127.0.0.1', 'localhost'):
        user = "'%s'@'%s'" % (lay.db_user, host)
        sql.append("CREATE USER IF NOT EXISTS %s; ALTER USER %s "
                   "IDENTIFIED BY '%s';" % (user, user, secrets['db']))
        sql += ['GRANT ALL PRIVILEGES ON `%s`.* TO %s;' % (db, user)
                for db in lay.databases.values()]
    mysql(' '.join(sql))


def reset_rabbit_vhost(lay: config.Layout) -> None:
    vhost = lay.rabbit_vhost
    subprocess.call(['rabbitmqctl', '-q', 'delete_vhost', vhost],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for argv in (['add_vhost', vhost],
                 ['set_permissions', '-p', vhost, 'guest', '.*', '.*',
                  '.*']):
        subprocess.check_call(['rabbitmqctl', '-q'] + argv,
                              stdout=subprocess.DEVNULL)


def virsh(*argv: str) -> 'subprocess.CompletedProcess[str]':
    return subprocess.run(['virsh', '-c', 'qemu:///system'] + list(argv),
                          capture_output=True, text=True)


def libvirt_accounts() -> None:
    """The accounts libvirt-daemon-system would create (that package also
    pulls in systemd, which this tool avoids). libvirtd resolves its
    built-in default user before it reads qemu.conf's `user = "root"`."""
    for group in ('kvm', 'libvirt', 'libvirt-qemu'):
        if subprocess.call(['getent', 'group', group],
                           stdout=subprocess.DEVNULL):
            subprocess.check_call(['groupadd', '--system', group])
    if subprocess.call(['getent', 'passwd', 'libvirt-qemu'],
                       stdout=subprocess.DEVNULL):
        subprocess.check_call([
            'useradd', '--system', '--no-create-home', '--gid',
            'libvirt-qemu', '--groups', 'kvm', '--home-dir',
            '/var/lib/libvirt', '--shell', '/usr/sbin/nologin',
            'libvirt-qemu'])


HUGEPAGES_SYSFS = '/sys/kernel/mm/hugepages'


def _hugetlbfs_mounts() -> dict[int, str]:
    """{page size in kB: mount point} of the hugetlbfs mounts."""
    found: dict[int, str] = {}
    default_kb = _default_hugepage_kb()
    with open('/proc/mounts') as f:
        for line in f:
            fields = line.split()
            if fields[2] != 'hugetlbfs':
                continue
            size = re.search(r'pagesize=(\d+)([KMG])', fields[3])
            kb = (int(size.group(1)) * {'K': 1, 'M': 1024,
                                        'G': 1024 * 1024}[size.group(2)]
                  if size else default_kb)
            found.setdefault(kb, fields[1])
    return found


def _default_hugepage_kb() -> int:
    with open('/proc/meminfo') as f:
        # every /proc/meminfo has the line
        return int(re.search(  # type: ignore[union-attr]
            r'Hugepagesize:\s+(\d+)', f.read()).group(1))


def _mount_hugetlbfs() -> None:
    """One hugetlbfs mount per page-size pool, as systemd would mount the
    default one: libvirtd reads the mounts only when it starts, and a guest
    whose hw:mem_page_size has no mount fails to start ("Unable to find any
    usable hugetlbfs mount"), e.g. 2 MB guests on a host booted with
    default_hugepagesz=1G."""
    mounted = _hugetlbfs_mounts()
    default_kb = _default_hugepage_kb()
    for entry in sorted(os.listdir(HUGEPAGES_SYSFS)):
        # every entry of HUGEPAGES_SYSFS is named so
        kb = int(re.match(  # type: ignore[union-attr]
            r'hugepages-(\d+)kB', entry).group(1))
        if kb in mounted:
            continue
        path = ('/dev/hugepages' if kb == default_kb
                else '/dev/hugepages-%dkB' % kb)
        os.makedirs(path, exist_ok=True)
        subprocess.run(['mount', '-t', 'hugetlbfs', '-o', 'pagesize=%dK' % kb,
                        'hugetlbfs', path], check=True, timeout=30)


def ensure_libvirtd(lay: config.Layout, say: Callable[[str], object]
                    ) -> list[str]:
    """Start virtlogd and libvirtd unless running. Returns started names."""
    if virsh('version').returncode == 0:
        return []
    qemu_conf(say)
    libvirt_accounts()
    # libvirt-daemon-system would create these.
    for path in ('/var/log/libvirt/qemu', '/var/lib/libvirt/qemu',
                 '/var/cache/libvirt/qemu', '/run/libvirt'):
        os.makedirs(path, exist_ok=True)
    _mount_hugetlbfs()
    started = []
    for daemon in ('virtlogd', 'libvirtd'):
        procs.run(lay, daemon, [daemon, '-d'])
        started.append(daemon)
    procs.wait_until(lambda: virsh('version').returncode == 0, 30,
                     'libvirtd')
    return started


def detect_virt_type() -> str:
    """kvm only with hardware virtualization and a /dev/kvm that creates a
    VM. A /dev/kvm backed by PVM (kvm_pvm, a paravirtualized KVM for
    guests without nested hardware virtualization) does not boot stock
    guest kernels, so it counts as absent."""
    with open('/proc/cpuinfo') as f:
        flags = set(re.findall(r'\b(vmx|svm)\b', f.read()))
    if not flags or os.path.exists('/sys/module/kvm_pvm'):
        return 'qemu'
    # the probe `kvmtune host inspect` makes
    from kvmtune.facts import virt
    return 'kvm' if virt.probe_kvm()['usable'] else 'qemu'
