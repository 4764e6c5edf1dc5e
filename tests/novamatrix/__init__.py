"""The Nova release matrix: one virtualenv per Nova release, each holding
that release's Nova and the libraries of its day.

OpenStack pins each release's libraries in openstack/requirements'
``upper-constraints.txt`` of its stable branch; that file is not on the
package registry, and this machine reaches nothing else. What the file
does, pick each library as it was when the release came out, the installer
can do from the registry's own upload times (uv's ``--exclude-newer``,
pip's ``--uploaded-prior-to`` from pip 26.0): every library Nova needs is
resolved among the versions uploaded before the release's date, while Nova
itself (the release's newest point release, possibly uploaded later) is
taken whenever it was uploaded. The date is the release's announced date
(https://releases.openstack.org), one day after, so the libraries of
release day are in.

The venvs are made by kvmtune.venvs: uv when it is there (the six share
its one wheel cache), else venv and pip. Local package folders pip may be
configured with here (``find-links``, ``file://`` extra indexes) carry no
upload times, so they cannot be dated: the installer runs with no
configuration file and without those variables, against the registry
alone.

Venvs live in /var/cache/kvmtune/nova-<N> ($KVMTUNE_NOVA_MATRIX_CACHE to
move them), made once per machine: a venv whose stamp file names the same
Nova and date is reused. ``python -m tests.novamatrix`` (tools/nova-matrix)
builds them and prints the release x profile table.
"""

import fcntl
import json
import os
import shutil
import subprocess
import time

from kvmtune import venvs

CACHE = os.environ.get('KVMTUNE_NOVA_MATRIX_CACHE', '/var/cache/kvmtune')
# without uv: the first pip with --uploaded-prior-to is 26.0
PIP = 'pip==26.3'
STAMP = 'kvmtune-matrix.json'
INSTALL_TIMEOUT = 1500

# major -> (newest point release on the registry, series, libraries'
# date: the series' release day + 1, releases.openstack.org).
RELEASES = {
    29: ('29.4.0', '2024.1 Caracal', '2024-04-04'),
    30: ('30.3.0', '2024.2 Dalmatian', '2024-10-03'),
    31: ('31.3.1', '2025.1 Epoxy', '2025-04-03'),
    32: ('32.2.1', '2025.2 Flamingo', '2025-10-02'),
    33: ('33.0.2', '2026.1', '2026-04-02'),
    34: ('34.0.0', '2026.2', '2026-10-01'),
}


def venv_dir(major):
    return os.path.join(CACHE, f'nova-{major}')


def python(major):
    return os.path.join(venv_dir(major), 'bin', 'python')


def wanted_stamp(major):
    """What the venv holds. The installer that made it (uv or pip, which
    resolve the same dated set) is recorded beside, not compared."""
    version, series, date = RELEASES[major]
    return {'nova': version, 'series': series, 'libraries_before': date}


def read_stamp(major):
    try:
        with open(os.path.join(venv_dir(major), STAMP)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def ready(major):
    """True when the cached venv is the one RELEASES asks for."""
    stamp = read_stamp(major)
    if not stamp or not os.access(python(major), os.X_OK):
        return False
    return {k: stamp.get(k) for k in wanted_stamp(major)} == \
        wanted_stamp(major)


def _run(argv, log):
    log.write('$ ' + ' '.join(argv) + '\n')
    log.flush()
    subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                   env=venvs.env(registry_only=True), check=True,
                   timeout=INSTALL_TIMEOUT)


def build(major, log=None):
    """Make (or reuse) the venv of Nova ``major``.

    Returns {'major', 'nova', 'seconds', 'reused'}; raises
    subprocess.CalledProcessError (its log at <venv>.log) when pip fails.
    Safe to call from several processes: one builds, the others wait.
    """
    os.makedirs(CACHE, exist_ok=True)
    with open(venv_dir(major) + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready(major):
            return {'major': major, 'nova': RELEASES[major][0],
                    'seconds': read_stamp(major).get('seconds'),
                    'reused': True}
        started = time.monotonic()
        target = venv_dir(major)
        shutil.rmtree(target, ignore_errors=True)
        version, _, date = RELEASES[major]
        with open(target + '.log', 'w') as own_log:
            out = log or own_log
            how = dict(output=out, environ=venvs.env(registry_only=True),
                       timeout=INSTALL_TIMEOUT)
            tool = venvs.create(target, **how)
            if tool == 'pip':
                venvs.install(target, [PIP], **how)
            venvs.install(target, [], uploaded_before=f'{date}T00:00:00Z',
                          undated=[f'nova=={version}'], **how)
            _run([python(major), '-c', 'import nova.conf'], out)
        seconds = round(time.monotonic() - started, 1)
        stamp = dict(wanted_stamp(major), seconds=seconds,
                     installer=tool)
        tmp = os.path.join(target, STAMP + '.tmp')
        with open(tmp, 'w') as handle:
            json.dump(stamp, handle)
        os.replace(tmp, os.path.join(target, STAMP))
        return {'major': major, 'nova': version, 'seconds': seconds,
                'reused': False}


def build_all(majors=None, parallel=3, say=print):
    """Build the venvs, ``parallel`` at a time (the installer waits on the
    network more than on the two cores). Returns build()'s answers by
    major."""
    from concurrent.futures import ThreadPoolExecutor

    majors = sorted(majors or RELEASES)
    results = {}
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {major: pool.submit(build, major) for major in majors}
        for major, future in futures.items():
            results[major] = future.result()
            got = results[major]
            say(f'nova-{major} ({got["nova"]}): '
                + (f'reused (built in {got["seconds"]} s)' if got['reused']
                   else f'installed in {got["seconds"]} s'))
    return results
