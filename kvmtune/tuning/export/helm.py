"""openstack-helm: values for the nova chart.

``conf.nova.<section>.<option>`` renders every pod's nova.conf (helm-toolkit
utils/_to_oslo_conf.tpl: a list is comma-joined, ``{type: multistring,
values: [...]}`` is one line per value). Per node,
``conf.overrides.nova_compute.hosts: [{name: <k8s node>, conf: ...}]``
overrides the compute daemonset's conf on that node only
(helm-toolkit utils/_daemonset_overrides.tpl;
doc/source/devref/node-and-label-specific-configurations.rst). So compute
options go per node (or to conf.nova without a host), scheduler and
conductor options to conf.nova. Traits are not a chart value: the provider
config file and the kernel arguments and modprobe lines are files for the
node (``hosts/<node>/``).

A later values file (``-f``) or ``--set`` replaces a scalar or list at the
same path, and helm-toolkit's per-node override takes the node's conf over
conf.nova: a list kvmtune extends (``[filter_scheduler] enabled_filters``)
would replace the operator's. So with ``--nova-conf`` (a nova.conf the
chart rendered, or one with the operator's values) the value carries the
operator's items and kvmtune's, as "nova-conf apply" merges them; the
export's notes say what can still replace it.
"""

from collections.abc import Mapping
import os
from typing import Any

from kvmtune.tuning.export import common
from kvmtune.tuning.novaconf import services

VALUES = 'values-kvmtune.yaml'


def helm_conf(conf: Mapping[str, Mapping[str, Any]]
              ) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for section, options in conf.items():
        for option, value in options.items():
            out.setdefault(section, {})[option] = (
                {'type': 'multistring', 'values': list(value)}
                if isinstance(value, list) else value)
    return out


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    by_service = ctx.by_service()
    shared: dict[str, dict[str, Any]] = {}
    for service in ('scheduler', 'conductor'):
        for section, options in by_service.get(service, {}).items():
            shared.setdefault(section, {}).update(options)
    compute = by_service.get('compute', {})
    if not ctx.host:
        for section, options in compute.items():
            shared.setdefault(section, {}).update(options)
    values: dict[str, dict[str, Any]] = {'conf': {}}
    if shared:
        values['conf']['nova'] = helm_conf(shared)
    if ctx.host and compute:
        values['conf']['overrides'] = {'nova_compute': {'hosts': [
            {'name': ctx.host, 'conf': {'nova': helm_conf(compute)}}]}}
    files = [common.OutFile(VALUES, common.render_yaml(values, ctx.header),
                            'yaml')]
    ctx.extension_notes(notes, lambda section, option: _later(
        ctx, section, option))
    prefix = os.path.join('hosts', ctx.host or 'all-computes')
    traits = ctx.traits()
    if traits:
        files.append(common.OutFile(
            os.path.join(prefix, 'etc/nova/provider_config',
                         common.PROVIDER_FILE),
            common.render_yaml(common.provider_config(traits), ctx.header),
            'yaml'))
    return files + common.host_files(ctx, prefix)


def _later(ctx: common.Context, section: str, option: str) -> str:
    """What can replace this export's value of the option, as a sentence."""
    path = ('conf.overrides.nova_compute.hosts (a list: replaced whole)'
            if ctx.host and 'compute' in services.readers(section, option)
            else f'conf.nova.{section}.{option}')
    return (f'a values file given after {VALUES} (helm -f) or --set that '
            f'sets {path} replaces this value: give {VALUES} last, or add '
            f'kvmtune\'s items to that value')
