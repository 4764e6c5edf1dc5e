"""What kvmtune's DevStack plugin (devstack/plugin.sh) runs.

plugin.sh stays a thin dispatcher; each DevStack phase is one sub-command of
``python -m kvmtune.devstack``. Every change a phase makes is recorded in
``<state dir>/changes.json`` (what was there before, what kvmtune put
there), so ``unstack`` and ``clean`` undo exactly the plugin's own changes
and nothing an operator or another plugin did.
"""
