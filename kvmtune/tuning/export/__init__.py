"""Export a plan in the override channel of each deployment tool.

Deployment tools (kolla-ansible, OpenStack-Ansible, openstack-helm, ...)
regenerate nova.conf on every run, so an in-place ``nova-conf apply`` on
their hosts is lost: ``export(...)`` writes the same plan as each tool's
own override files instead. One module per target, all built on
kvmtune.tuning.export.common and written by kvmtune.tuning.export.writer.
See the user guide, "Using kvmtune with your deployment tool".
"""

from collections.abc import Mapping
import dataclasses
import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from kvmtune.errors import InputError

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts
    from kvmtune.tuning.export.common import OutFile
    from kvmtune.tuning.novaconf.effective import Reader
    from kvmtune.tuning.plan import Plan

# --target name -> module under kvmtune.tuning.export
TARGETS = {
    'oslo-dropin': 'oslo_dropin',
    'kolla': 'kolla',
    'openstack-ansible': 'openstack_ansible',
    'helm': 'helm',
    'provider-config': 'provider_config',
    'tuned': 'tuned',
}
# Targets that write no nova.conf option: a base nova.conf means nothing
# to them, and --nova-conf is refused rather than ignored.
NO_NOVA_CONF = ('provider-config', 'tuned')


@dataclasses.dataclass
class Result:
    target: str
    files: list[tuple[str, str]]  # [(path, 'created'|'unchanged')]
    notes: list[str]


def module(target: str) -> ModuleType:
    if target not in TARGETS:
        raise InputError(f'unknown target {target!r}', key='--target',
                         fix='one of ' + ', '.join(TARGETS))
    return importlib.import_module(f'kvmtune.tuning.export.{TARGETS[target]}')


def build(target: str, plan: 'Plan', facts: 'Facts', host: str | None = None,
          base_path: str | None = None,
          cmdlines: Mapping[str, tuple[list[str], str | None]] | None = None,
          under: 'Reader | None' = None, anyway: bool = False
          ) -> tuple[list['OutFile'], list[str]]:
    """([OutFile], notes) for ``target``; nothing is written.

    ``cmdlines`` {service: (argv, unit)}, ``under`` (the host's files, a
    kvmtune.tuning.novaconf.effective.Reader) and ``anyway`` are oslo-dropin's:
    see kvmtune.tuning.export.oslo_dropin.
    """
    from kvmtune.tuning.export import common

    mod = module(target)
    if target != 'oslo-dropin' and (cmdlines or anyway):
        raise InputError('--service-cmdline, --service-unit and '
                         '--dropin-anyway are for the oslo-dropin target '
                         'only', key='--target',
                         fix='leave them out, or export --target '
                             'oslo-dropin')
    if base_path is not None and target in NO_NOVA_CONF:
        raise InputError(f'the {target} target writes no nova.conf '
                         f'option: a base nova.conf means nothing to it',
                         key='--nova-conf',
                         fix='leave --nova-conf out, or export --target '
                             + ', '.join(t for t in TARGETS
                                         if t not in NO_NOVA_CONF))
    host = common.check_host(host, facts)
    base, text = (common.read_base(base_path, with_text=True)
                  if base_path else (None, None))
    ctx = common.Context(plan=plan, facts=facts, host=host, base=base,
                         base_path=base_path, base_text=text,
                         cmdlines=dict(cmdlines or {}), under=under,
                         anyway=anyway)
    notes: list[str] = []
    files: list[OutFile] = mod.build(ctx, notes)
    return files, notes


def export(target: str, plan: 'Plan', facts: 'Facts', output: str,
           host: str | None = None, base_path: str | None = None,
           cmdlines: Mapping[str, tuple[list[str], str | None]] | None = None,
           under: 'Reader | None' = None, anyway: bool = False) -> Result:
    """Build and write ``target``'s files under ``output``; Result.

    ``base_path`` (--nova-conf): the operator's nova.conf, whose items of
    the lists kvmtune extends every target keeps (Context.nova_conf).

    :raises InputError: unknown target, a host that is not a KVM compute
        node (or not the one the facts describe), a base nova.conf given
        to a target that writes no nova.conf option, or with an option
        the drop-in would not win against (oslo-dropin), an
        existing file that sets a key differently, an output that cannot
        be written. In every case nothing is written.
    """
    from kvmtune.tuning.export import writer

    files, notes = build(target, plan, facts, host=host,
                         base_path=base_path, cmdlines=cmdlines,
                         under=under, anyway=anyway)
    return Result(target=target, files=writer.write(output, files),
                  notes=notes)
