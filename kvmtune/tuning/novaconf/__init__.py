"""nova.conf, edited in place: kvmtune's options and nothing else.

``update.apply_plan(plan, path, service)`` is what ``kvmtune nova-conf
apply`` calls, ``update.apply(path, changes, dry_run=False)`` what it and
the DevStack plugin build on (kvmtune.tuning.novaconf.update).
"""
