"""tuned's cpu-partitioning profile instead of bare ``isolcpus``.

cpu-partitioning (tuned profiles/cpu-partitioning/tuned.conf) reads
``isolated_cores=`` from /etc/tuned/cpu-partitioning-variables.conf and then
moves IRQs, kernel threads, workqueues and systemd off those CPUs and adds
``nohz=on nohz_full=<cores> rcu_nocbs=<cores>`` to the kernel command line
through its bootloader plugin. For kvmtune the isolated cores are the
plan's dedicated set (``[compute] cpu_dedicated_set``), the CPUs the
isolcpus argument would have removed from the scheduler. The kernel
arguments file keeps the plan's others (huge pages) and says nohz_full and
rcu_nocbs instead of isolcpus, for a host whose boot loader tuned does not
manage. Activate with ``tuned-adm profile cpu-partitioning`` and reboot.
"""

import dataclasses

from kvmtune.errors import InputError
from kvmtune.tuning.export import common

VARIABLES = 'etc/tuned/cpu-partitioning-variables.conf'


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    plan = ctx.plan
    cores = plan.nova_conf.get('compute', {}).get('cpu_dedicated_set')
    isolates = any(arg.startswith('isolcpus=') for arg in plan.kernel_args)
    if not cores or not isolates:
        raise InputError(
            f'profile {plan.profile} isolates no CPUs: there is nothing '
            f'for tuned\'s cpu-partitioning to do', key='--target tuned',
            fix='use a profile with the cpu_pinning tuner (e.g. '
                'pinned-hugepages), or another --target')
    text = ''.join(f'# {line}\n' for line in common._wrap(
        ctx.header + ' Then: tuned-adm profile cpu-partitioning, and '
        'reboot.')) + f'isolated_cores={cores}\n'
    args = []
    for arg in plan.kernel_args:
        if arg.startswith('isolcpus='):
            args += ['nohz=on', f'nohz_full={cores}', f'rcu_nocbs={cores}']
        else:
            args.append(arg)
    notes.append('isolcpus is replaced by tuned\'s isolation: nohz_full '
                 'and rcu_nocbs (tuned adds them itself where it manages '
                 'the boot loader)')
    host_ctx = dataclasses.replace(
        ctx, plan=dataclasses.replace(plan, kernel_args=args))
    return ([common.OutFile(VARIABLES, text, 'text')]
            + common.host_files(host_ctx))
