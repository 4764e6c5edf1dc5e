"""kolla-ansible (and Kayobe): override files under node_custom_config.

kolla-ansible merges, for each Nova service, the role's template,
``global.conf``, ``nova.conf``, ``nova/<service>.conf``,
``nova/<inventory_hostname>/nova.conf`` and
``nova/<inventory_hostname>/<service>.conf`` (in that order, a later file's
key replacing every earlier value of it) into that service's nova.conf
(ansible/roles/nova-cell/tasks/config.yml and roles/nova/tasks/config.yml,
action plugin merge_configs). So:

- compute options: ``nova/<host>/nova-compute.conf`` (``nova/nova-compute
  .conf`` for every compute host when no host is given);
- scheduler and conductor options: ``nova/nova-scheduler.conf`` and
  ``nova/nova-conductor.conf``;
- traits: ``nova_cell_compute_provider_config`` in the host's host_vars,
  which kolla renders to /etc/nova/provider_config/provider_config.yaml
  (doc/source/reference/compute/nova-guide.rst);
- kernel arguments and modprobe lines: kolla does not manage them, so they
  are files for the host itself under ``hosts/<host>/``.

The output's ``etc/kolla/config`` is node_custom_config (default
/etc/kolla/config); ``host_vars/`` goes next to the inventory.

merge_configs keeps one value per key, the last file's: a list kvmtune
extends (``[filter_scheduler] enabled_filters``) would replace the
operator's. So with ``--nova-conf`` (their /etc/kolla/config/nova.conf, or
a service's rendered nova.conf) the file carries their items and kvmtune's,
as "nova-conf apply" merges them; a file later in the order above still
beats it, and the export's notes name those files.
"""

import os

from kvmtune.tuning.export import common
from kvmtune.tuning.novaconf import services

CONFIG = 'etc/kolla/config/nova'


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    files = []
    for service, conf in sorted(ctx.by_service().items()):
        if service == 'compute':
            where = (os.path.join(CONFIG, ctx.host, 'nova-compute.conf')
                     if ctx.host else os.path.join(CONFIG,
                                                   'nova-compute.conf'))
        elif service in ('scheduler', 'conductor'):
            where = os.path.join(CONFIG, f'nova-{service}.conf')
        else:
            continue
        files.append(common.OutFile(where, common.render_ini(
            conf, ctx.header), 'ini'))
    traits = ctx.traits()
    if traits:
        where = (os.path.join('host_vars', ctx.host, 'kvmtune.yml')
                 if ctx.host else os.path.join('group_vars', 'compute',
                                               'kvmtune.yml'))
        files.append(common.OutFile(where, common.render_yaml(
            {'nova_cell_compute_provider_config':
             common.provider_config(traits)}, ctx.header), 'yaml'))
    ctx.extension_notes(notes, lambda section, option: _later(
        ctx, section, option))
    prefix = os.path.join('hosts', ctx.host or 'all-computes')
    return files + common.host_files(ctx, prefix)


def _later(ctx: common.Context, section: str, option: str) -> str | None:
    """The override files kolla-ansible merges after this export's file
    for the option, as a sentence, or None (the export's is last)."""
    later = []
    readers = services.readers(section, option)
    if 'compute' in readers and not ctx.host:
        later += ['nova/<host>/nova.conf', 'nova/<host>/nova-compute.conf']
    if {'scheduler', 'conductor'} & set(readers):
        later += ['nova/<controller>/nova.conf']
    if not later:
        return None
    return (f'kolla-ansible\'s merge_configs keeps the last file\'s value '
            f'of a key, and merges {" and ".join(later)} (under '
            f'node_custom_config) after this export\'s file: {option} set '
            f'there replaces this list: add kvmtune\'s items there too, or '
            f'remove {option} there')
