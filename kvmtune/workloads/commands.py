"""The command line each tool runs, in the guest and on the bare host.

``@VCPUS@`` stands for the CPU count of whoever runs it (the guest init
substitutes ``nproc``): fio's numjobs=vcpus, sysbench's threads=vcpus.
"""

from collections.abc import Callable
from collections.abc import Mapping
import re
from typing import Any
from typing import cast

from kvmtune.errors import InputError
from kvmtune.workloads import Workload
from kvmtune.workloads import WRITE_MODES

VCPUS = '@VCPUS@'
# A server guest with several ports in its job starts one server per port,
# with this in the command replaced by each (design.md section 6).
PORT = '@PORT@'
# iperf3 serves one test at a time ("the server is busy running a test"):
# N clients of one server guest need N iperf3 servers, one port each.
ONE_CLIENT_PER_SERVER = frozenset(('iperf3',))


def _fio(workload: Workload, settings: Mapping[str, Any], role: str,
         target: str | None, peer: str | None,
         runtime: int | str) -> list[str]:
    numjobs = settings['numjobs']
    argv = ['fio', f'--name={workload.name}', f'--filename={target}']
    if settings['rw'] not in WRITE_MODES:
        argv.append('--readonly')  # a flag only, not a job option
    argv += [f'--rw={settings["rw"]}', f'--bs={settings["bs"]}',
             f'--iodepth={settings["iodepth"]}',
             f'--numjobs={VCPUS if numjobs == "vcpus" else numjobs}',
             '--direct=1', '--ioengine=libaio',
             f'--size={settings["size"]}', f'--runtime={runtime}',
             '--time_based', '--group_reporting', '--output-format=json']
    return argv


def _iperf3(workload: Workload, settings: Mapping[str, Any], role: str,
            target: str | None, peer: str | None,
            runtime: int | str) -> list[str]:
    port = str(settings['port'])
    if role == 'server':
        return ['iperf3', '-s', '-p', port, '-1']
    # a client has a peer: argv() refuses one without (cast)
    argv = ['iperf3', '-c', cast(str, peer), '-p', port, '-t', str(runtime),
            '-P', str(settings['parallel']), '-J']
    if settings['protocol'] == 'udp':
        argv += ['-u', '-b', '0']
    return argv


def _sockperf(workload: Workload, settings: Mapping[str, Any], role: str,
              target: str | None, peer: str | None,
              runtime: int | str) -> list[str]:
    proto = ['--tcp'] if settings['protocol'] == 'tcp' else []
    port = str(settings['port'])
    if role == 'server':
        return ['sockperf', 'server', '-i', '0.0.0.0', '-p', port, *proto]
    return ['sockperf', 'ping-pong', '-i', cast(str, peer), '-p', port,
            *proto,
            '-t', str(runtime), '-m', str(settings['msg_size']),
            '--full-rtt']


SYSBENCH_TESTS = ('cpu', 'memory')
SYSBENCH_OPERS = ('read', 'write')


def _positive(workload: Workload, settings: Mapping[str, Any],
              key: str) -> str:
    value = settings[key]
    if value == 'vcpus':
        return VCPUS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f'not a positive integer: {value!r}',
                         source=workload.name, key=key,
                         fix='a whole number >= 1' +
                         (' or vcpus' if key == 'threads' else ''))
    return str(value)


def _sysbench(workload: Workload, settings: Mapping[str, Any], role: str,
              target: str | None, peer: str | None,
              runtime: int | str) -> list[str]:
    """sysbench cpu | memory for ``runtime`` seconds (``--time``).

    memory: total_size is large (1T) so that the time, not the size, ends
    the run; a run cut short by the size would still give a true rate.
    """
    test = settings['test']
    if test not in SYSBENCH_TESTS:
        raise InputError(f'unknown sysbench test {test!r}',
                         source=workload.name, key='test',
                         fix=f'one of {", ".join(SYSBENCH_TESTS)}')
    argv = ['sysbench', test,
            f'--threads={_positive(workload, settings, "threads")}',
            f'--time={runtime}']
    if test == 'cpu':
        argv.append('--cpu-max-prime='
                    f'{_positive(workload, settings, "max_prime")}')
    else:
        for key in ('block_size', 'total_size'):
            if not re.match(r'^[0-9]+[KMGT]?\Z', str(settings[key])):
                raise InputError(f'not a size: {settings[key]!r}',
                                 source=workload.name, key=key,
                                 fix='bytes with an optional K, M, G or '
                                     'T suffix')
        if settings['oper'] not in SYSBENCH_OPERS:
            raise InputError(f'unknown memory operation '
                             f'{settings["oper"]!r}', source=workload.name,
                             key='oper',
                             fix=f'one of {", ".join(SYSBENCH_OPERS)}')
        argv += [f'--memory-block-size={settings["block_size"]}',
                 f'--memory-total-size={settings["total_size"]}',
                 f'--memory-oper={settings["oper"]}',
                 '--memory-access-mode=seq']
    return argv + ['run']


# (workload, settings, role, target, peer, runtime) -> argv
BUILDERS: dict[str, Callable[..., list[str]]] = {
    'fio': _fio, 'iperf3': _iperf3, 'sockperf': _sockperf,
    'sysbench': _sysbench}


def argv(workload: Workload, role: str = 'client', target: str | None = None,
         peer: str | None = None, runtime: int | str | None = None,
         params: Mapping[str, Any] | None = None) -> list[str]:
    """The tool's argv for ``workload`` as ``role`` (client or server)."""
    settings = workload.settings(params)
    if runtime is None:
        runtime = settings.get('runtime', 10)
    if workload.target == 'disk':
        if role != 'client':
            raise InputError('a disk workload has no server role',
                             source=workload.name, key='role',
                             fix='run it as a client')
        if not target:
            raise InputError('no target disk', source=workload.name,
                             key='target', fix='name the disk explicitly, '
                             'never the boot disk')
    elif workload.target == 'none':
        if role != 'client':
            raise InputError('a CPU or memory workload has no server role',
                             source=workload.name, key='role',
                             fix='run it as a client')
    elif role == 'client' and not peer:
        raise InputError('no peer', source=workload.name, key='peer',
                         fix='give the server\'s address')
    return BUILDERS[workload.tool](workload, settings, role, target, peer,
                                   runtime)


def client_ports(workload: Workload, clients: int,
                 params: Mapping[str, Any] | None = None) -> list[int]:
    """The port each of ``clients`` clients of one server guest uses: the
    workload's port for all, or consecutive ports from it for a tool whose
    server takes one client at a time."""
    base = int(workload.settings(params)['port'])
    if workload.tool in ONE_CLIENT_PER_SERVER:
        return [base + i for i in range(clients)]
    return [base] * clients
