"""oslo.config drop-in files: the tool-neutral way to add to nova.conf.

oslo.config reads ``/etc/nova/nova.conf.d/*.conf`` and
``/etc/nova/<program>.conf.d/*.conf`` in alphabetical order, later values
winning; but only after the default files when the service has no
``--config-file``, and *before* the ``--config-file``s when it has some
(issue 28: kvmtune.novaconf.effective models that order, from
oslo_config/cfg.py). Each service's options go to that
service's own directory (``nova-compute.conf.d``, ``nova-scheduler.conf.d``,
``nova-conductor.conf.d``), so a file never carries an option its reader
does not run.

Multi-valued options are the trap: for a MultiOpt (``[DEFAULT]
reserved_huge_pages``) oslo.config *adds* the values of every file instead
of letting the last one win. With the base nova.conf (``--nova-conf``) that
already sets such an option, the export folds (the same values: the drop-in
leaves the option out) or refuses (other values: they would add up).
"""

import os

from kvmtune.errors import InputError
from kvmtune.export import common

DIRS = {'compute': 'etc/nova/nova-compute.conf.d',
        'scheduler': 'etc/nova/nova-scheduler.conf.d',
        'conductor': 'etc/nova/nova-conductor.conf.d'}


def fold_multi(conf, ctx, notes):
    """``conf`` without the multi-valued options the base nova.conf already
    has with the same values; InputError when it has other values."""
    if ctx.base is None:
        return conf
    folded = {}
    for section, options in conf.items():
        for option, value in options.items():
            have = ctx.base.get(section, {}).get(option)
            if isinstance(value, list) and have:
                if sorted(have) == sorted(value):
                    notes.append(f'[{section}] {option} is in '
                                 f'{ctx.base_path} already: left out of the '
                                 f'drop-in (values of a multi-valued option '
                                 f'add up across files)')
                    continue
                raise InputError(
                    f'[{section}] {option} is multi-valued and is set there '
                    f'to {", ".join(have)}: oslo.config would add the '
                    f'drop-in\'s {", ".join(value)} to it, not replace it; '
                    f'nothing written', source=ctx.base_path,
                    key=f'[{section}] {option}',
                    fix=f'remove {option} from {ctx.base_path} and export '
                        f'again (the drop-in then carries it alone)')
            folded.setdefault(section, {})[option] = value
    return folded


def build(ctx, notes):
    files = []
    for service, conf in sorted(ctx.by_service().items()):
        conf = fold_multi(conf, ctx, notes)
        if conf and service in DIRS:
            files.append(common.OutFile(
                os.path.join(DIRS[service], common.DROPIN_NAME),
                common.render_ini(conf, ctx.header), 'ini'))
    return files + common.host_files(ctx)
