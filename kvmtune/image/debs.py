"""Debian packages for the guest, fetched with apt into a private cache.

apt is asked for the whole dependency closure as if nothing were installed
(``Dir::State::status=/dev/null``), into kvmtune's own archive directory, so
the guest never borrows a library from the host and a second build finds
every .deb already there.
"""

from collections.abc import Iterable
from collections.abc import Sequence
import os
import re
import subprocess

from kvmtune.errors import KvmtuneError

TOOLS = ('busybox-static', 'fio', 'sysbench', 'iperf3', 'sockperf')
KERNEL_META = 'linux-image-amd64'
_INST = re.compile(r'^Inst (\S+) \((\S+) .*\[([a-z0-9]+)\]\)')


def _apt_options(cache_dir: str) -> list[str]:
    return ['-o', 'Dir::State::status=/dev/null',
            '-o', 'Debug::NoLocking=1',
            '-o', f'Dir::Cache::archives={cache_dir}',
            '-o', 'APT::Sandbox::User=root']


def _run(argv: Sequence[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except FileNotFoundError:
        raise KvmtuneError(f'{argv[0]} not found', fix='run on Debian/Ubuntu '
                           'with apt')
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines() or ['?'])[-1]
        raise KvmtuneError(f'{" ".join(argv[:3])} failed: {tail}',
                           fix='apt-get update, then retry')
    return proc.stdout


def kernel_package() -> str:
    """The versioned linux-image package the amd64 meta package names."""
    out = _run(['apt-cache', 'show', '--no-all-versions', KERNEL_META])
    for line in out.splitlines():
        if line.startswith('Depends:'):
            for dep in line.split(':', 1)[1].split(','):
                name = dep.split()[0]
                if name.startswith('linux-image-'):
                    return name
    raise KvmtuneError(f'{KERNEL_META} depends on no linux-image package',
                       fix='apt-get update')


def closure(cache_dir: str, packages: Iterable[str]) -> list[str]:
    """The .deb file names of ``packages`` and all they depend on."""
    out = _run(['apt-get', '-s', *_apt_options(cache_dir), 'install',
                '--no-install-recommends', *packages])
    names = []
    for line in out.splitlines():
        # Inst libc6 (2.36-9+deb12u14 Debian:12.15/oldstable [amd64]) []
        match = _INST.match(line)
        if match:
            name, version, arch = match.groups()
            names.append(f'{name}_{version.replace(":", "%3a")}_{arch}.deb')
    return names


def fetch(cache_dir: str, packages: Sequence[str]
          ) -> tuple[list[str], list[str]]:
    """Download ``packages`` and their closure; return (debs, fetched).

    ``fetched`` lists the .debs this call downloaded (empty: all reused).
    """
    os.makedirs(os.path.join(cache_dir, 'partial'), exist_ok=True)
    debs = [os.path.join(cache_dir, n) for n in closure(cache_dir, packages)]
    missing = [d for d in debs if not os.path.exists(d)]
    if missing:
        _run(['apt-get', '-qq', *_apt_options(cache_dir), 'install',
              '--download-only', '--no-install-recommends', '-y',
              *packages])
    lost = [d for d in debs if not os.path.exists(d)]
    if lost:
        raise KvmtuneError(f'apt did not download {os.path.basename(lost[0])}',
                           source=cache_dir, fix='apt-get update, then retry')
    return debs, missing


def fetch_kernel(cache_dir: str, package: str) -> tuple[str, bool]:
    """Download one kernel .deb (not its dependencies: only files needed)."""
    os.makedirs(cache_dir, exist_ok=True)
    out = _run(['apt-cache', 'show', '--no-all-versions', package])
    version = next(line.split(':', 1)[1].strip() for line in
                   out.splitlines() if line.startswith('Version:'))
    path = os.path.join(cache_dir, f'{package}_{version}_amd64.deb')
    if os.path.exists(path):
        return path, False
    proc = subprocess.run(['apt-get', 'download', f'{package}={version}'],
                          cwd=cache_dir, capture_output=True, text=True)
    if proc.returncode or not os.path.exists(path):
        raise KvmtuneError(f'apt-get download {package} failed: '
                           f'{proc.stderr.strip()}', fix='apt-get update')
    return path, True


def extract(debs: Iterable[str], dest: str) -> None:
    """dpkg -x every .deb into ``dest``."""
    for deb in debs:
        _run(['dpkg-deb', '-x', deb, dest])
