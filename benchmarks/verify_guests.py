#!/usr/bin/env python3
"""verify's guests layer on a host with 200 domains: target <= 2 s.

Generates 200 domains from the domain XML Nova 34 wrote in the test cloud
(tests/fixtures/libvirt/nova-pinned-2m.xml): each its own name, UUID and
pinned CPU on a 448-CPU, 2-node host planned with cpu_dedicated_set 8-447
(half the guests on node 1, their memory there), writes them as
``virsh dumpxml`` files and times ``kvmtune verify --layer guests
--domain-xml-dir DIR -f json`` in this process (kvmtune's own time: no
libvirt, which an operator's host adds; the checks themselves:
tests/unit/verify/test_guests.py).

  python benchmarks/verify_guests.py [-n 5] [--domains 200]
"""

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 2.0
CPUS, NODES = 448, 2


def domains(count):
    with open(os.path.join(REPO, 'tests/fixtures/libvirt/'
                                 'nova-pinned-2m.xml')) as f:
        template = f.read()
    half = CPUS // NODES
    for i in range(count):
        cpu = 8 + i if i < count // 2 else half + 8 + i
        node = 0 if cpu < half else 1
        xml = (template.replace('instance-00000007', f'instance-{i:08x}')
               .replace('3348f9e6-a4db-4a4a-bc66-012761a0fe86',
                        str(uuid.UUID(int=i)))
               .replace("<vcpupin vcpu='0' cpuset='1'/>",
                        f"<vcpupin vcpu='0' cpuset='{cpu}'/>")
               .replace("<emulatorpin cpuset='0'/>",
                        "<emulatorpin cpuset='0-7'/>")
               .replace("nodeset='0'", f"nodeset='{node}'"))
        yield f'instance-{i:08x}.xml', xml


def facts_file(directory):
    """A host of CPUS CPUs in NODES nodes (only what the layer reads)."""
    from kvmtune import facts
    path = os.path.join(directory, 'facts.json')
    base = facts.gather('/')
    half = CPUS // NODES
    base['numa']['nodes'] = [
        dict(base['numa']['nodes'][0], id=n,
             cpus=list(range(n * half, (n + 1) * half)))
        for n in range(NODES)]
    with open(path, 'w') as f:
        json.dump(base, f)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', type=int, default=5)
    parser.add_argument('--domains', type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    from kvmtune import cli
    from kvmtune.tuning import plan as plans

    with tempfile.TemporaryDirectory() as tmp:
        xml_dir = os.path.join(tmp, 'domains')
        os.mkdir(xml_dir)
        for name, xml in domains(args.domains):
            with open(os.path.join(xml_dir, name), 'w') as f:
                f.write(xml)
        plan = os.path.join(tmp, 'plan.json')
        with open(plan, 'w') as f:
            json.dump(plans.Plan(
                profile='bench', facts_source='generated',
                nova_conf={'compute': {
                    'cpu_dedicated_set': f'8-{CPUS - 1}',
                    'cpu_shared_set': '0-7'}}).to_dict(), f)
        argv = ['verify', '--plan', plan, '--facts', facts_file(tmp),
                '--layer', 'guests', '--domain-xml-dir', xml_dir,
                '-f', 'json']
        times = []
        for _ in range(args.n):
            out = io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stdout(out):
                rc = cli.main(argv)
            times.append(time.perf_counter() - start)
            if not out.getvalue():
                raise SystemExit(f'verify exit {rc}, no output')
            doc = json.loads(out.getvalue())
            if rc != 0:
                drift = [c for c in doc['checks'] if c['status'] != 'PASS']
                raise SystemExit(f'verify exit {rc}: {drift[:3]}')
    checks = len(doc['checks'])
    median = statistics.median(times)
    print(f'verify --layer guests, {args.domains} domains, {checks} checks '
          f'(all PASS): median {median:.3f} s, min {min(times):.3f} s, '
          f'max {max(times):.3f} s over {args.n} runs (target <= '
          f'{TARGET_S:.0f} s: {"met" if median <= TARGET_S else "MISSED"})')


if __name__ == '__main__':
    main()
