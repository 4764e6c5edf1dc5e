#!/usr/bin/env python3
"""Nothing reads unbounded: host facts on a huge tree, a FIFO, a 3 GB file.

Builds a host tree of 4,096 CPUs in 256 NUMA nodes (2 threads a core,
16 CPUs a node; cpuinfo, topology, node cpulists and meminfo, huge page
pools), times ``kvmtune.facts.gather`` on it (target under 1 s), then
replaces /proc/meminfo by a FIFO and by a sparse 3 GB file and times how
long gather takes to refuse each (target under 1 s each; the refusals
themselves: tests/unit/facts/test_hostfs.py).

  python benchmarks/facts_hostile.py [-n 5]
"""

import argparse
import os
import statistics
import tempfile
import time

CPUS, NODES = 4096, 256
TARGET_S = 1.0


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


def build(root):
    per_node = CPUS // NODES
    stanza = ('processor\t: {n}\nvendor_id\t: GenuineIntel\n'
              'model name\t: Synthetic 4096\nphysical id\t: {socket}\n'
              'core id\t\t: {core}\ncpu cores\t: {cores}\n'
              'flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr '
              'pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall '
              'nx pdpe1gb rdtscp lm constant_tsc vmx ept\n\n')
    cores = per_node // 2
    write(root, 'proc/cpuinfo', ''.join(
        stanza.format(n=n, socket=n // per_node, core=(n % per_node) // 2,
                      cores=cores) for n in range(CPUS)))
    write(root, 'proc/meminfo', 'MemTotal:       4294967296 kB\n'
                                'Hugepagesize:       2048 kB\n')
    write(root, 'proc/cmdline', 'BOOT_IMAGE=/vmlinuz root=/dev/sda1\n')
    write(root, 'proc/sys/kernel/hostname', 'huge-1\n')
    write(root, 'proc/sys/kernel/osrelease', '6.1.0-27-amd64\n')
    write(root, 'sys/devices/system/cpu/online', f'0-{CPUS - 1}\n')
    for n in range(CPUS):
        base = n - n % 2
        topo = f'sys/devices/system/cpu/cpu{n}/topology/'
        write(root, topo + 'thread_siblings_list', f'{base}-{base + 1}\n')
        write(root, topo + 'physical_package_id', f'{n // per_node}\n')
        write(root, topo + 'core_id', f'{(n % per_node) // 2}\n')
    for node in range(NODES):
        first = node * per_node
        base = f'sys/devices/system/node/node{node}/'
        write(root, base + 'cpulist', f'{first}-{first + per_node - 1}\n')
        write(root, base + 'meminfo',
              f'Node {node} MemTotal:       16777216 kB\n')
        for size in (2048, 1048576):
            pool = f'{base}hugepages/hugepages-{size}kB/'
            write(root, pool + 'nr_hugepages', '0\n')
            write(root, pool + 'free_hugepages', '0\n')
    for size in (2048, 1048576):
        write(root, f'sys/kernel/mm/hugepages/hugepages-{size}kB/'
                    'nr_hugepages', '0\n')


def timed(root, runs):
    from kvmtune import facts
    times, last = [], None
    for _ in range(runs):
        start = time.perf_counter()
        last = facts.gather(root, probe_kvm=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times), last


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-n', type=int, default=5, help='runs (median)')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        build(root)
        seconds, facts = timed(root, args.n)
        print(f'gather, {len(facts["cpu"]["online"])} CPUs in '
              f'{len(facts["numa"]["nodes"])} nodes: {seconds:.3f} s '
              f'(target < {TARGET_S} s)')
        meminfo = os.path.join(root, 'proc/meminfo')
        os.unlink(meminfo)
        os.mkfifo(meminfo)
        seconds, facts = timed(root, 1)
        print(f'gather, /proc/meminfo a FIFO: {seconds:.3f} s, total_mb '
              f'{facts["memory"]["total_mb"]} (target < {TARGET_S} s)')
        os.unlink(meminfo)
        with open(meminfo, 'wb') as f:
            f.truncate(3 * 1024 ** 3)
        seconds, facts = timed(root, 1)
        print(f'gather, /proc/meminfo 3 GB: {seconds:.3f} s, total_mb '
              f'{facts["memory"]["total_mb"]} (target < {TARGET_S} s)')


if __name__ == '__main__':
    main()
