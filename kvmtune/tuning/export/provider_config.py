"""Nova's provider config: kvmtune's traits put on by nova-compute itself.

nova-compute reads ``[compute] provider_config_location`` (default
/etc/nova/provider_config/) at start and adds the traits listed there to
the compute node's resource provider (nova/compute/provider_config.py;
doc/source/admin/managing-resource-providers.rst), so no Placement write
by kvmtune (``host tag``) is needed. ``uuid: $COMPUTE_NODE`` names this
node's own provider. Only CUSTOM_ traits are allowed there, which all of
kvmtune's are. The kernel arguments and modprobe lines come along as
files for the host.
"""

import os

from kvmtune.tuning.export import common

DIR = 'etc/nova/provider_config'


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    traits = ctx.traits()
    files = []
    if traits:
        files.append(common.OutFile(
            os.path.join(DIR, common.PROVIDER_FILE),
            common.render_yaml(common.provider_config(traits), ctx.header),
            'yaml'))
    else:
        notes.append('the facts give this host none of kvmtune\'s traits: '
                     'no provider config written')
    return files + common.host_files(ctx)
