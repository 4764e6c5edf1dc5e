"""nova.conf, edited in place: kvmtune's options and nothing else.

``apply(path, changes, dry_run=False)`` is what ``kvmtune nova-conf apply``
and the DevStack plugin call; see kvmtune.novaconf.apply.
"""

from kvmtune.novaconf.apply import ApplyResult  # noqa: F401
from kvmtune.novaconf.apply import apply  # noqa: F401
