"""nova.conf, edited in place: kvmtune's options and nothing else.

``apply(path, changes, dry_run=False)`` is what ``kvmtune nova-conf apply``
and the DevStack plugin call; see kvmtune.novaconf.update.
"""

from kvmtune.novaconf.update import ApplyResult  # noqa: F401
from kvmtune.novaconf.update import apply  # noqa: F401
