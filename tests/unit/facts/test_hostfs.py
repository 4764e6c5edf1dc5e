"""The one reader of /proc, /sys and captured trees (facts/hostfs.py):
regular files only, bounded, never out of a captured tree.

Each case that could hang runs gather() in a subprocess, or the read in a
thread (tests/hang.py), with a hard timeout, so a regression fails here
instead of stalling CI."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import hostfs
from tests import hang
from tests import paths

PVM = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')
# The files that hung on a FIFO (host inspect and capture).
SEVEN = ('proc/meminfo', 'proc/cmdline',
         'sys/devices/system/cpu/online',
         'sys/devices/system/node/node0/cpulist',
         'sys/devices/system/cpu/cpu0/topology/thread_siblings_list',
         'sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages',
         'proc/sys/kernel/hostname')
HANG_BOUND_S = hang.HANG_BOUND_S  # a hang, not a speed


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(PVM, root, symlinks=True)
    return root


def gather_in_subprocess(root):
    """gather(root) in a child with a hard timeout: its JSON facts."""
    code = ('import json, sys; from kvmtune import facts; '
            'json.dump(facts.gather(sys.argv[1], probe_kvm=False), '
            'sys.stdout)')
    proc = subprocess.run([sys.executable, '-c', code, str(root)],
                          capture_output=True, text=True,
                          timeout=HANG_BOUND_S, cwd=paths.REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize('path', SEVEN)
def test_a_fifo_in_place_of_a_file_is_not_read(tree, path):
    target = tree / path
    assert target.is_file(), path      # the fixture has each of them
    target.unlink()
    os.mkfifo(target)
    facts = gather_in_subprocess(tree)
    before = host_facts.gather(PVM, probe_kvm=False)
    assert facts != before             # something is unknown now ...
    files = hostfs.HostFiles(str(tree))
    assert hang.call(lambda: files.read('/' + path),
                     release=[target]) is None
    assert files.refused['/' + path] == ('is a FIFO (named pipe), not a '
                                         'regular file')


def test_a_huge_file_is_refused_without_reading_it_all(tree):
    meminfo = tree / 'proc/meminfo'
    with open(meminfo, 'r+b') as f:
        f.truncate(3 * 1024 ** 3)      # sparse: no disk used
    files = hostfs.HostFiles(str(tree))
    assert files.read('/proc/meminfo') is None
    assert files.refused['/proc/meminfo'] == (
        f'is {3 * 1024 ** 3} bytes, more than the {hostfs.MAX_BYTES} '
        'kvmtune reads')
    facts = gather_in_subprocess(tree)
    assert facts['memory']['total_mb'] is None


def test_a_link_out_of_a_capture_is_not_followed(tree, tmp_path):
    secret = tmp_path / 'secret'
    secret.write_text('password=hunter2\n')
    cmdline = tree / 'proc/cmdline'
    cmdline.unlink()
    cmdline.symlink_to(secret)
    files = hostfs.HostFiles(str(tree))
    assert files.read('/proc/cmdline') is None
    assert files.refused['/proc/cmdline'] == 'is a link out of the tree'
    facts = host_facts.gather(str(tree), probe_kvm=False)
    assert 'hunter2' not in json.dumps(facts)


def test_a_directory_link_out_of_a_capture_is_not_listed(tree, tmp_path):
    outside = tmp_path / 'outside-node'
    (outside / 'node7').mkdir(parents=True)
    nodes = tree / 'sys/devices/system/node'
    shutil.rmtree(nodes)
    nodes.symlink_to(outside)
    files = hostfs.HostFiles(str(tree))
    assert files.listdir('/sys/devices/system/node') == []
    assert not files.exists('/sys/devices/system/node')


def test_links_inside_a_capture_are_followed():
    # Real captures link node directories to their CPUs (relative links).
    root = os.path.join(paths.HOSTS, 'real', 'offline-cpu0-node0')
    link = 'sys/devices/system/node/node1/cpu13'
    assert os.path.islink(os.path.join(root, link))
    files = hostfs.HostFiles(root)
    assert files.exists('/' + link)
    assert files.refused == {}


def test_the_live_root_reads_proc_as_it_is():
    files = hostfs.HostFiles('/')
    assert files.read('/proc/self/status').startswith('Name:')
    assert files.refused == {}
