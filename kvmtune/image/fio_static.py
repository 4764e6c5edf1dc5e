"""A static fio built from Debian's own fio source package.

Debian's fio binary links ~60 libraries (librbd, libglusterfs, ICU, ...)
for engines the guest never uses, with BIND_NOW, so all must ship: the
image then compresses to ~33 MB. Built from the same source with those
engines off and ``--build-static`` it is one ~3 MB file, and the image
meets its 20 MB target. Needs gcc, make and dpkg-dev on the build host;
the binary is cached per fio version, so later builds reuse it.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import glob
import os
import shutil
import subprocess

from kvmtune.errors import KvmtuneError

APT_SOURCES = '/etc/apt/sources.list'
APT_SOURCE_PARTS = '/etc/apt/sources.list.d'
# Engines whose libraries the guest does not have.
CONFIGURE = ('--build-static', '--disable-native', '--disable-numa',
             '--disable-rdma', '--disable-rados', '--disable-rbd',
             '--disable-http', '--disable-gfapi', '--disable-libnfs',
             '--disable-pmem', '--disable-xnvme', '--disable-libzbc',
             '--disable-tcmalloc', '--disable-dfs')
HOST_TOOLS = {'gcc': 'gcc', 'make': 'make', 'dpkg-source': 'dpkg-dev',
              'strip': 'binutils'}


def _run(argv: Sequence[str], cwd: str | None = None,
         env: Mapping[str, str] | None = None) -> str:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise KvmtuneError(f'{" ".join(argv[:3])} failed: '
                           f'{(tail or ["?"])[-1]}')
    return proc.stdout


def _deb_src_lists(root: str = '/') -> tuple[str, str]:
    """The host's own apt sources as source-package entries.

    The machine's mirrors (or an operator's) serve the source packages
    too, so the deb-src list is made from its deb entries: one-line
    ``deb URI SUITE ...`` becomes ``deb-src ...``; deb822 stanzas get
    ``Types: deb-src``. Returns (one-line text, deb822 text).
    """
    one_line: list[str] = []
    stanzas: list[str] = []
    lists = [root.rstrip('/') + APT_SOURCES] + sorted(
        glob.glob(root.rstrip('/') + APT_SOURCE_PARTS + '/*.list'))
    for path in lists:
        if os.path.exists(path):
            with open(path) as f:
                one_line += ['deb-src' + line.strip()[3:] for line in f
                             if line.strip().startswith('deb ')]
    for path in sorted(glob.glob(root.rstrip('/') + APT_SOURCE_PARTS +
                                 '/*.sources')):
        with open(path) as f:
            for stanza in f.read().split('\n\n'):
                fields = [ln for ln in stanza.splitlines()
                          if ln.strip() and not ln.startswith('#')]
                if any(ln.split(':', 1)[0] == 'Types' and
                       'deb' in ln.split(':', 1)[1].split()
                       for ln in fields):
                    stanzas.append('\n'.join(
                        'Types: deb-src' if ln.startswith('Types:') else ln
                        for ln in fields))
    if not one_line and not stanzas:
        raise KvmtuneError('no deb entries in the apt sources',
                           source=APT_SOURCES,
                           fix='configure apt, or build without --static-fio')
    return '\n'.join(one_line) + '\n', '\n\n'.join(stanzas) + '\n'


def _fetch_source(src_dir: str, version: str) -> str:
    """dpkg .dsc of fio ``version`` through a private deb-src list."""
    dsc = os.path.join(src_dir, f'fio_{version.split(":")[-1]}.dsc')
    if os.path.exists(dsc):
        return dsc
    lists = os.path.join(src_dir, 'lists')
    os.makedirs(os.path.join(lists, 'partial'), exist_ok=True)
    sources = os.path.join(src_dir, 'sources.list')
    parts = os.path.join(src_dir, 'sources.list.d')
    os.makedirs(parts, exist_ok=True)
    one_line, deb822 = _deb_src_lists()
    with open(sources, 'w') as f:
        f.write(one_line)
    with open(os.path.join(parts, 'host.sources'), 'w') as f:
        f.write(deb822)
    opts = ['-o', f'Dir::Etc::SourceList={sources}',
            '-o', f'Dir::Etc::SourceParts={parts}',
            '-o', f'Dir::State::Lists={lists}', '-o', 'Debug::NoLocking=1',
            '-o', 'APT::Sandbox::User=root']
    _run(['apt-get', '-qq', *opts, 'update'])
    _run(['apt-get', '-qq', *opts, 'source', '--download-only',
          f'fio={version}'], cwd=src_dir)
    return dsc


def build(cache_dir: str, version: str, sysroot: str, work: str,
          log: Callable[[str], object] = print) -> str:
    """Path of a static, stripped fio ``version``; built once, cached.

    :param sysroot: extracted packages holding libaio.a and libaio.h
        (libaio-dev)
    """
    cached = os.path.join(cache_dir, 'fio-static', version, 'fio')
    if os.path.exists(cached):
        log(f'static fio {version}: reused from the cache')
        return cached
    for tool, package in HOST_TOOLS.items():
        if not shutil.which(tool):
            raise KvmtuneError(f'{tool} not found (needed by --static-fio)',
                               fix=f'apt-get install {package}')
    src_dir = os.path.join(cache_dir, 'src')
    os.makedirs(src_dir, exist_ok=True)
    dsc = _fetch_source(src_dir, version)
    tree = os.path.join(work, 'fio-src')
    _run(['dpkg-source', '-x', dsc, tree])
    libdir = os.path.join(sysroot, 'usr/lib/x86_64-linux-gnu')
    # -L in the CFLAGS too: configure's libaio probe links with them.
    _run(['./configure', *CONFIGURE, f'--extra-cflags=-I'
          f'{os.path.join(sysroot, "usr/include")} -L{libdir}'], cwd=tree)
    log(f'static fio {version}: compiling (a minute or two)')
    _run(['make', f'-j{os.cpu_count() or 1}', 'fio'], cwd=tree,
         env=dict(os.environ, LIBRARY_PATH=libdir))
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    _run(['strip', '-o', cached + '.tmp', os.path.join(tree, 'fio')])
    engines = _run([cached + '.tmp', '--enghelp']).split()
    if 'libaio' not in engines:   # the workloads need ioengine=libaio
        os.unlink(cached + '.tmp')
        raise KvmtuneError('the static fio has no libaio engine',
                           fix='check libaio-dev in the package cache')
    os.replace(cached + '.tmp', cached)
    return cached
