"""A static fio built from Debian's own fio source package.

Debian's fio binary links ~60 libraries (librbd, libglusterfs, ICU, ...)
for engines the guest never uses, with BIND_NOW, so all must ship: the
image then compresses to ~33 MB. Built from the same source with those
engines off and ``--build-static`` it is one ~3 MB file, and the image
meets its 20 MB target. Needs gcc, make and dpkg-dev on the build host;
the binary is cached per fio version, so later builds reuse it.
"""

import os
import shutil
import subprocess

from kvmtune.errors import KvmtuneError

MIRROR = 'http://deb.debian.org/debian'
# Engines whose libraries the guest does not have.
CONFIGURE = ('--build-static', '--disable-native', '--disable-numa',
             '--disable-rdma', '--disable-rados', '--disable-rbd',
             '--disable-http', '--disable-gfapi', '--disable-libnfs',
             '--disable-pmem', '--disable-xnvme', '--disable-libzbc',
             '--disable-tcmalloc', '--disable-dfs')
HOST_TOOLS = {'gcc': 'gcc', 'make': 'make', 'dpkg-source': 'dpkg-dev',
              'strip': 'binutils'}


def _run(argv, cwd=None, env=None):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                          text=True)
    if proc.returncode:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise KvmtuneError(f'{" ".join(argv[:3])} failed: '
                           f'{(tail or ["?"])[-1]}')
    return proc.stdout


def _codename():
    with open('/etc/os-release') as f:
        for line in f:
            if line.startswith('VERSION_CODENAME='):
                return line.split('=', 1)[1].strip().strip('"')
    raise KvmtuneError('no VERSION_CODENAME in /etc/os-release',
                       fix='build without --static-fio')


def _fetch_source(src_dir, version):
    """dpkg .dsc of fio ``version`` through a private deb-src list."""
    dsc = os.path.join(src_dir, f'fio_{version.split(":")[-1]}.dsc')
    if os.path.exists(dsc):
        return dsc
    lists = os.path.join(src_dir, 'lists')
    os.makedirs(os.path.join(lists, 'partial'), exist_ok=True)
    sources = os.path.join(src_dir, 'sources.list')
    with open(sources, 'w') as f:
        f.write(f'deb-src {MIRROR} {_codename()} main\n')
    opts = ['-o', f'Dir::Etc::SourceList={sources}',
            '-o', 'Dir::Etc::SourceParts=/dev/null',
            '-o', f'Dir::State::Lists={lists}', '-o', 'Debug::NoLocking=1',
            '-o', 'APT::Sandbox::User=root']
    _run(['apt-get', '-qq', *opts, 'update'])
    _run(['apt-get', '-qq', *opts, 'source', '--download-only',
          f'fio={version}'], cwd=src_dir)
    return dsc


def build(cache_dir, version, sysroot, work, log=print):
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
