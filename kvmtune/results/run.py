"""A Run: one set of guests measured one way (doc/design.md 9.4).

One Rally sweep of one flavor, one ``kvmtune bench local`` run (or one
column of a ``--compare``), one level of ``kvmtune bench nested``, or the
bare host of a baseline. ``iterations`` maps a VM count to the iterations
run at that count, each the Rows of its measuring guests (Rally runs a
count once per iteration; bench local and nested once). A network
server's Row is left out: it serves, it measures nothing.
"""

import dataclasses

from kvmtune.results import kinds
from kvmtune.results.records import Record
from kvmtune.results.row import Row


@dataclasses.dataclass
class Run:
    label: str
    source: str
    kind: str
    record: Record | None
    iterations: dict[int, list[list[Row]]]
    # one line per Rally iteration that failed before leaving its rows
    errors: list[str] = dataclasses.field(default_factory=list)
    # (VM count, {phase: seconds}) per Rally iteration (results.rally)
    budgets: list[tuple[int, dict[str, float | None]]] = \
        dataclasses.field(default_factory=list)
    # what a Rally sweep ran: scenario name, flavor
    scenario: str | None = None
    flavor: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in kinds.RUN_KINDS:
            raise ValueError(f'kind {self.kind!r} not in {kinds.RUN_KINDS}')

    @property
    def bare(self) -> bool:
        """The bare host (a baseline): the 100 % of every share."""
        return self.kind == kinds.BASELINE

    @property
    def rows(self) -> list[Row]:
        return [r for _, its in sorted(self.iterations.items())
                for rows in its for r in rows]

    @property
    def emulated(self) -> bool:
        """Any guest figure measured under QEMU TCG (or the record says
        the guests ran under TCG)."""
        return any(r.emulated for r in self.rows) or bool(
            (self.record or {}).get('emulated'))

    @property
    def workload(self) -> str | None:
        name = ((self.record or {}).get('workload') or {}).get('name')
        return name or next((r.workload for r in self.rows if r.workload),
                            None)

    @property
    def failures(self) -> list[str]:
        """One line per guest without a valid result, and per failed
        iteration: listed, never averaged."""
        out = [f'{n} VMs: {r.instance}: {r.status}'
               + (f' ({r.reason})' if r.reason else '')
               for n, its in sorted(self.iterations.items())
               for rows in its for r in rows if not r.ok]
        return out + [f'iteration failed: {e}' for e in self.errors]
