"""Export a plan in the override channel of each deployment tool.

Deployment tools (kolla-ansible, OpenStack-Ansible, openstack-helm, ...)
regenerate nova.conf on every run, so an in-place ``nova-conf apply`` on
their hosts is lost: ``export(...)`` writes the same plan as each tool's
own override files instead. One module per target, all built on
kvmtune.export.common. See README "Using kvmtune with your deployment
tool".
"""

import dataclasses
import importlib

from kvmtune.errors import InputError

# --target name -> module under kvmtune.export
TARGETS = {
    'oslo-dropin': 'oslo_dropin',
    'kolla': 'kolla',
    'openstack-ansible': 'openstack_ansible',
    'helm': 'helm',
    'provider-config': 'provider_config',
    'tuned': 'tuned',
}


@dataclasses.dataclass
class Result:
    target: str
    files: list             # [(path, 'created'|'unchanged')]
    notes: list


def module(target):
    if target not in TARGETS:
        raise InputError(f'unknown target {target!r}', key='--target',
                         fix='one of ' + ', '.join(TARGETS))
    return importlib.import_module(f'kvmtune.export.{TARGETS[target]}')


def build(target, plan, facts, host=None, base_path=None):
    """([OutFile], notes) for ``target``; nothing is written."""
    from kvmtune.export import common

    mod = module(target)
    host = common.check_host(host, facts)
    base = common.read_base(base_path) if base_path else None
    ctx = common.Context(plan=plan, facts=facts, host=host, base=base,
                         base_path=base_path)
    notes = []
    files = mod.build(ctx, notes)
    return files, notes


def export(target, plan, facts, output, host=None, base_path=None):
    """Build and write ``target``'s files under ``output``; Result.

    :raises InputError: unknown target, a host that is not a KVM compute
        node (or not the one the facts describe), a base nova.conf whose
        multi-valued option would add up with the export, an existing file
        that sets a key differently, an output that cannot be written. In
        every case nothing is written.
    """
    from kvmtune.export import common

    files, notes = build(target, plan, facts, host=host,
                         base_path=base_path)
    return Result(target=target, files=common.write(output, files),
                  notes=notes)
