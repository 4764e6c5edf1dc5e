"""The command line each tool runs, in the guest and on the bare host.

``@VCPUS@`` stands for the CPU count of whoever runs it (the guest init
substitutes ``nproc``): fio's numjobs=vcpus.
"""

from kvmtune.errors import InputError
from kvmtune.workloads import WRITE_MODES

VCPUS = '@VCPUS@'
# A server guest with several ports in its job starts one server per port,
# with this in the command replaced by each (design.md section 6).
PORT = '@PORT@'
# iperf3 serves one test at a time ("the server is busy running a test"):
# N clients of one server guest need N iperf3 servers, one port each.
ONE_CLIENT_PER_SERVER = frozenset(('iperf3',))


def _fio(workload, settings, role, target, peer, runtime):
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


def _iperf3(workload, settings, role, target, peer, runtime):
    port = str(settings['port'])
    if role == 'server':
        return ['iperf3', '-s', '-p', port, '-1']
    argv = ['iperf3', '-c', peer, '-p', port, '-t', str(runtime),
            '-P', str(settings['parallel']), '-J']
    if settings['protocol'] == 'udp':
        argv += ['-u', '-b', '0']
    return argv


def _sockperf(workload, settings, role, target, peer, runtime):
    proto = ['--tcp'] if settings['protocol'] == 'tcp' else []
    port = str(settings['port'])
    if role == 'server':
        return ['sockperf', 'server', '-i', '0.0.0.0', '-p', port, *proto]
    return ['sockperf', 'ping-pong', '-i', peer, '-p', port, *proto,
            '-t', str(runtime), '-m', str(settings['msg_size']),
            '--full-rtt']


BUILDERS = {'fio': _fio, 'iperf3': _iperf3, 'sockperf': _sockperf}


def argv(workload, role='client', target=None, peer=None, runtime=None,
         params=None):
    """The tool's argv for ``workload`` as ``role`` (client or server)."""
    settings = workload.settings(params)
    if runtime is None:
        runtime = settings.get('runtime', 10)
    if workload.target == 'disk':
        if role != 'client':
            raise InputError('a disk workload has no server role',
                             source=workload.name, key='role')
        if not target:
            raise InputError('no target disk', source=workload.name,
                             key='target', fix='name the disk explicitly, '
                             'never the boot disk')
    elif role == 'client' and not peer:
        raise InputError('no peer', source=workload.name, key='peer',
                         fix='give the server\'s address')
    return BUILDERS[workload.tool](workload, settings, role, target, peer,
                                   runtime)


def client_ports(workload, clients, params=None):
    """The port each of ``clients`` clients of one server guest uses: the
    workload's port for all, or consecutive ports from it for a tool whose
    server takes one client at a time."""
    base = int(workload.settings(params)['port'])
    if workload.tool in ONE_CLIENT_PER_SERVER:
        return [base + i for i in range(clients)]
    return [base] * clients
