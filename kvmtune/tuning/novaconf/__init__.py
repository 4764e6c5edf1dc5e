"""nova.conf, edited in place: kvmtune's options and nothing else.

``apply_plan(plan, path, service)`` is what ``kvmtune nova-conf apply``
calls, ``apply(path, changes, dry_run=False)`` what it and the DevStack
plugin build on; see kvmtune.tuning.novaconf.update.
"""

from kvmtune.tuning.novaconf.update import apply  # noqa: F401
from kvmtune.tuning.novaconf.update import apply_plan  # noqa: F401
from kvmtune.tuning.novaconf.update import ApplyResult  # noqa: F401
