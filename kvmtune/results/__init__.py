"""The measuring half's one result model (doc/design.md 9.4).

``kvmtune.results.verdict`` is the one reading of a guest's console: its
status line, its result frame verified and parsed, and the reason when
there is no usable figure. The Rally scenarios (through
kvmtune.rally.scenarios.kvmtune.guests), bench local and bench nested all
call it, and each only adds what it alone knows (Nova gave no console;
QEMU exited; no start signal).
"""
