"""Show what this host offers KVM guests: CPU, virtualization, NUMA, pages.

Reads only /proc, /sys and /dev of this host (or of a tree captured with
``kvmtune host capture`` on another host, with ``--root``), probes
/dev/kvm with a real KVM_CREATE_VM, and prints a summary table or the facts
JSON that ``kvmtune plan --facts`` accepts (keys: doc/facts.md).

  kvmtune host inspect
  kvmtune host inspect --format json -o compute-1.json
  kvmtune host inspect --root captured/compute-1
  kvmtune host inspect --versions

``--versions`` also runs ``libvirtd --version`` and
``qemu-system-x86_64 --version`` of this host (so not with --root or
--facts); nothing else is run.
"""

import argparse
from collections.abc import Iterable
import sys
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.cmd import output
from kvmtune.errors import InputError
from kvmtune.facts import arch
from kvmtune import jsonout
from kvmtune import pagesize

if TYPE_CHECKING:   # kvmtune.facts imports only when run() needs it
    from kvmtune.facts.types import CpuFacts
    from kvmtune.facts.types import Facts
    from kvmtune.facts.types import HugepagePool
    from kvmtune.facts.types import KernelArgs
    from kvmtune.facts.types import VirtFacts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument('--root', metavar='DIR',
                        help='read a tree made by "kvmtune host capture" '
                             'instead of this host')
    source.add_argument('--facts', metavar='FILE',
                        help='show a facts JSON file saved earlier')
    output.add_format(parser, columns=False,
                      formats=('table', 'json', 'yaml'))
    parser.add_argument('--versions', action='store_true',
                        help='also ask libvirtd and qemu-system-x86_64 '
                             'for their versions')
    parser.add_argument('-o', '--output', metavar='FILE',
                        help='write to FILE (atomically) instead of stdout')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import facts as host_facts
    if args.versions and (args.root or args.facts):
        raise InputError('--versions asks this host\'s libvirtd and QEMU, '
                         'so it cannot describe --root or --facts',
                         key='--versions',
                         fix='run it on the host itself, or drop it')
    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    if args.versions:
        from kvmtune.facts import versions
        facts['versions'] = versions.probe()
    fmt = output.format_of(args)
    if fmt == 'json':
        text = to_json(facts, source=args.facts or args.root or '/')
    elif fmt == 'yaml':
        import yaml
        jsonout.check_finite(facts, source=args.facts or args.root or '/')
        text = yaml.safe_dump(facts, sort_keys=False,
                              default_flow_style=False)
    else:
        text = to_table(facts, versions_asked=args.versions)
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def to_json(facts: 'Facts | dict[str, Any]', source: object = 'facts'
            ) -> str:
    """Indented JSON with short lists (CPUs, a pool) kept on one line,
    every value through the one strict encoder (kvmtune.jsonout)."""
    jsonout.check_finite(facts, source=source)

    def encode(value: Any, indent: int) -> str:
        if isinstance(value, dict) and value:
            pad = '  ' * (indent + 1)
            items = [f'{pad}{jsonout.dumps(k)}: {encode(v, indent + 1)}'
                     for k, v in value.items()]
            return '{\n' + ',\n'.join(items) + '\n' + '  ' * indent + '}'
        if isinstance(value, list) and any(
                isinstance(v, dict) and v for v in value):
            pad = '  ' * (indent + 1)
            items = [pad + encode(v, indent + 1) for v in value]
            return '[\n' + ',\n'.join(items) + '\n' + '  ' * indent + ']'
        return jsonout.dumps(value, indent=None)
    return encode(facts, 0) + '\n'


def write_atomic(path: str, text: str) -> None:
    """Write path with kvmtune.fileio (a device, FIFO or directory is
    refused, the file replaced in one rename); leave it alone if equal."""
    from kvmtune import fileio

    changed = fileio.write_if_changed(
        path, text, fix='give the path of a regular file you can write '
                        'for -o')
    print(f'{path}: {"written" if changed else "unchanged"}',
          file=sys.stderr)


def _sizes(facts: 'Facts') -> str:
    """The huge page sizes the kernel offers (kvmtune.facts.arch)."""
    sizes = arch.page_sizes_kb(facts)
    return 'unknown' if sizes is None else arch.sizes_text(sizes)


def _yes(value: bool | None) -> str:
    return {True: 'yes', False: 'no', None: 'unknown'}[value]


def _pools(pools: 'Iterable[HugepagePool]') -> str:
    return ', '.join(f'{pagesize.text(p["size_kb"], compact=True)} '
                     f'{p["total"]} ({p["free"]} free)'
                     for p in pools) or 'none'


def _cpus(cpus: Iterable[int]) -> str:
    from kvmtune.facts.cpulist import format_cpulist
    return format_cpulist(cpus) or '-'


def _smt(cpu: 'CpuFacts') -> str:
    if cpu['thread_siblings'] is None:
        return 'unknown (the kernel lists no thread siblings)'
    pairs = [group for group in cpu['thread_siblings'] if len(group) > 1]
    if not pairs:
        return 'no thread siblings (one thread per core)'
    shown = ' '.join(','.join(map(str, g)) for g in pairs[:3])
    more = ' ...' if len(pairs) > 3 else ''
    return f'{len(pairs)} sibling groups: {shown}{more}'


def _shape(cpu: 'CpuFacts') -> str:
    """``2 socket(s) x 8 cores x 2 thread(s)``; ``?`` where unknown."""
    def say(value: object) -> object:
        return '?' if value is None else value
    threads = f'{say(cpu["threads_per_core"])} thread(s)'
    if cpu['cores_per_socket'] is not None:
        return (f'{cpu["sockets"]} socket(s) x {cpu["cores_per_socket"]} '
                f'cores x {threads}')
    return (f'{say(cpu.get("cores"))} cores in {say(cpu["sockets"])} '
            f'socket(s), up to {threads} per core')


def _node_cpus(cpus: list[int] | None) -> str:
    if cpus is None:
        return 'unknown'
    return _cpus(cpus) if cpus else 'none (memory only)'


def _virt(virt: 'VirtFacts') -> str:
    usable = _yes(virt['kvm_usable'])
    if virt.get('kvm_error'):
        usable += f' ({virt["kvm_error"]})'
    nested = _yes(virt['nested'])
    if virt['nested_mechanism']:
        nested += f' ({virt["nested_mechanism"]})'
    guest = (f'; guest of {virt["hypervisor_vendor"] or "a hypervisor"}'
             if virt['is_guest'] else '')
    return (f'/dev/kvm {_yes(virt["kvm_device"])}, usable {usable}; '
            f'mechanism {virt["mechanism"] or "none"}; nested {nested}; '
            f'EPT/NPT {_yes(virt["ept"])}{guest}')


def _kernel_args(args: 'KernelArgs') -> str:
    parts: list[str] = []
    if args['isolcpus']:
        flags = ','.join(args['isolcpus_flags'])
        parts.append(f'isolcpus {_cpus(args["isolcpus"])}'
                     + (f' ({flags})' if flags else ''))
    if args['nohz_full']:
        parts.append(f'nohz_full {_cpus(args["nohz_full"])}')
    if args['default_hugepagesz']:
        parts.append(f'default_hugepagesz {args["default_hugepagesz"]}')
    for entry in args['hugepages']:
        parts.append(f'hugepages {entry["count"]} x {entry["size"]}')
    parts.extend(f'{key}={value}' if value is not None else key
                 for key, value in args['iommu'].items())
    return '; '.join(parts) or 'none that kvmtune tunes'


def to_table(facts: 'Facts', versions_asked: bool = False) -> str:
    cpu, virt, mem = facts['cpu'], facts['virt'], facts['memory']
    vhost = facts['vhost_net']
    versions = facts['versions']
    rows = [
        ('Host', f'{facts["hostname"]} (kernel '
                 f'{facts["kernel"]["release"]}), facts from '
                 f'{facts["source"]}'),
        ('CPU', f'{cpu["model_name"]} ({cpu["vendor"]}), '
                f'{len(cpu["online"])} online: {_cpus(cpu["online"])}'),
        ('', f'{_shape(cpu)}; {arch.name(facts)}, huge page sizes '
             f'{_sizes(facts)}'),
        ('SMT', _smt(cpu)),
        ('Virt', _virt(virt)),
        ('Memory', f'{mem["total_mb"]} MB; default huge page '
                   f'{mem["hugepage_default_kb"]} kB; pools '
                   f'{_pools(mem.get("hugepages", []))}'),
    ]
    for node in facts['numa']['nodes']:
        rows.append((f'NUMA {node["id"]}',
                     f'cpus {_node_cpus(node["cpus"])}; '
                     f'{node["memory_mb"]} MB; '
                     f'pools {_pools(node["hugepages"])}'))
    rows += [
        ('vhost-net', f'{_yes(vhost["available"])} (/dev/vhost-net '
                      f'{_yes(vhost["device"])}, module {vhost["module"]})'),
        ('Kernel', _kernel_args(facts['kernel']['args'])),
        ('Versions', f'libvirt {versions["libvirt"] or "-"}, qemu '
                     f'{versions["qemu"] or "-"}'
                     + ('' if versions_asked or any(versions.values())
                        else ' (--versions asks the binaries)')),
    ]
    width = max(len(label) for label, _ in rows)
    return ''.join(f'{label:<{width}}  {text}\n' for label, text in rows)
