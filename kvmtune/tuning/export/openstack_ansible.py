"""OpenStack-Ansible: ``nova_nova_conf_overrides`` in host_vars/group_vars.

The os_nova role renders nova.conf with config_template and
``config_overrides: "{{ nova_nova_conf_overrides }}"`` (tasks/
nova_post_install.yml). A dict section -> option -> value; a YAML list
becomes a comma-joined list option, a YAML *set* a multi-valued option with
one line per value (openstack/ansible-config_template doc/source/index.rst).
Host-specific values go to ``/etc/openstack_deploy/host_vars/<host>.yml``:
``user_*.yml`` are extra-vars that apply to every host and would beat them
(doc/source/reference/configuration/using-overrides.rst). Scheduler and
conductor options go to the ``nova_scheduler`` and ``nova_conductor``
groups' group_vars, one file each with the same content (a host in both
groups gets one of them, never a mix).

Traits go to ``nova_provider_overrides`` (rendered into
/etc/nova/provider_config/). Nested virtualization: os_nova writes
/etc/modprobe.d/kvm.conf itself when ``nova_nested_virt_enabled`` is true
(files/kvm.conf: nested=1 for kvm_intel and kvm_amd); kvmtune uses that
switch when nested=1 is all the plan's modprobe lines ask, and otherwise
writes its own kvm.conf and turns the switch off, since both would be the
same file. Kernel arguments are not OSA's: a file for the host.

config_template sets a key to the override's value: a list kvmtune extends
(``[filter_scheduler] enabled_filters``) would replace the one os_nova
renders (its ``nova_scheduler_default_filters``, or the operator's own). So
with ``--nova-conf`` (a nova.conf os_nova rendered on the host) the override
carries the operator's items and kvmtune's, as "nova-conf apply" merges
them. ``nova_nova_conf_overrides`` is one variable: a definition of higher
Ansible precedence (``user_*.yml``, or a host's own host_vars over this
group_vars file) replaces this one whole, and the export's notes say so.
"""

from collections.abc import Mapping
import os
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.tuning.export import common
from kvmtune.tuning.novaconf import services

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

DEPLOY = 'etc/openstack_deploy'
# What os_nova's files/kvm.conf sets (it also sets enable_apicv=0).
OSA_NESTED = {'kvm_intel': {'nested': '1'}, 'kvm_amd': {'nested': '1'}}


def overrides(conf: Mapping[str, Mapping[str, Any]]
              ) -> dict[str, dict[str, Any]]:
    """config_template's shape: multi-valued options as a set."""
    out: dict[str, dict[str, Any]] = {}
    for section, options in conf.items():
        for option, value in options.items():
            out.setdefault(section, {})[option] = (
                set(value) if isinstance(value, list) else value)
    return out


def _module_options(plan: 'Plan') -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for text in plan.modprobe.values():
        for line in text.splitlines():
            words = line.split()
            if len(words) > 2 and words[0] == 'options':
                found.setdefault(words[1], {}).update(
                    word.split('=', 1)  # type: ignore[misc]  # two items
                    for word in words[2:] if '=' in word)
    return found


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    by_service = ctx.by_service()
    files = []
    host_vars: dict[str, Any] = {}
    if 'compute' in by_service:
        host_vars['nova_nova_conf_overrides'] = overrides(
            by_service['compute'])
    traits = ctx.traits()
    if traits:
        host_vars['nova_provider_overrides'] = [
            {'name': 'kvmtune', 'content': common.provider_config(traits)}]
    modules = _module_options(ctx.plan)
    host_side = common.host_files(ctx, os.path.join(
        'hosts', ctx.host or 'all-computes'))
    if modules:
        osa_does_it = all(OSA_NESTED.get(module, {}).get(name) == value
                          for module, options in modules.items()
                          for name, value in options.items())
        host_vars['nova_nested_virt_enabled'] = osa_does_it
        if osa_does_it:
            host_side = [f for f in host_side
                         if not f.path.endswith(common.MODPROBE_FILE)]
            notes.append('nested=1: nova_nested_virt_enabled makes os_nova '
                         'write /etc/modprobe.d/kvm.conf')
    if host_vars:
        where = (os.path.join(DEPLOY, 'host_vars', f'{ctx.host}.yml')
                 if ctx.host else os.path.join(DEPLOY, 'group_vars',
                                               'nova_compute.yml'))
        files.append(common.OutFile(where, common.render_yaml(
            host_vars, ctx.header), 'yaml'))
    controller: dict[str, dict[str, Any]] = {}
    for service in ('scheduler', 'conductor'):
        for section, options in by_service.get(service, {}).items():
            controller.setdefault(section, {}).update(options)
    if controller:
        for group in ('nova_scheduler', 'nova_conductor'):
            files.append(common.OutFile(
                os.path.join(DEPLOY, 'group_vars', f'{group}.yml'),
                common.render_yaml(
                    {'nova_nova_conf_overrides': overrides(controller)},
                    ctx.header), 'yaml'))
    ctx.extension_notes(notes, lambda section, option: _later(
        ctx, section, option))
    return files + host_side


def _later(ctx: common.Context, section: str, option: str) -> str:
    """What can replace this export's nova_nova_conf_overrides for the
    option, as a sentence."""
    readers = services.readers(section, option)
    if 'compute' in readers:
        where = (f'host_vars/{ctx.host}.yml' if ctx.host
                 else 'group_vars/nova_compute.yml')
        over = ('user_*.yml' if ctx.host
                else 'host_vars/<host>.yml or user_*.yml')
    else:
        where = 'group_vars/nova_scheduler.yml'
        over = 'host_vars/<controller>.yml or user_*.yml'
    return (f'nova_nova_conf_overrides in {over} (higher Ansible '
            f'precedence than {where}) replaces the whole variable, this '
            f'list included: where you set it there, add kvmtune\'s keys '
            f'to it instead')
