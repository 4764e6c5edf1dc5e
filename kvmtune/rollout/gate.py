"""The gate after a host's change: the plan against what runs, before the
host takes guests again.

``gate(plans, ctx)`` runs kvmtune's verify layers ``host`` (the booted
command line, page pools, module parameters), ``novacompute`` (the
options the running nova-compute reads, and that it was restarted after
the change) and ``cloud`` (the host's resource provider and the
profiles' flavors) (kvmtune.verify). The gate passes only when every check
is PASS: a DRIFT or an UNKNOWN (a check that could not be made) keeps the
host disabled, and the verdict's one line names the first such check and
its fix.
"""

from collections.abc import Sequence
import dataclasses
from typing import Any
from typing import TYPE_CHECKING

from kvmtune import verify

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

LAYERS = ('host', 'novacompute', 'cloud')


@dataclasses.dataclass
class Verdict:
    """The gate's answer: the checks, and whether the host may go on."""
    host: str | None
    checks: list[verify.Check]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.status == verify.PASS
                                         for c in self.checks)

    def line(self) -> str:
        """One line: what passed, or the first check that did not."""
        if not self.checks:
            return 'no check was made: the gate does not pass on nothing'
        bad = [c for c in self.checks if c.status != verify.PASS]
        if not bad:
            return f'{len(self.checks)} checks PASS'
        first = bad[0]
        if first.status == verify.DRIFT:
            what = (f'{first.layer} {first.name}: expected '
                    f'{first.expected}, live {first.live}')
            fix = first.fix or 'apply the plan again'
        else:
            what = f'{first.layer} {first.name}: unknown ({first.reason})'
            fix = 'make the check possible (see the reason), then gate again'
        more = f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''
        return f'{what}{more}; the host stays disabled (fix: {fix})'

    def to_dict(self) -> dict[str, Any]:
        return {'host': self.host, 'passed': self.passed,
                'line': self.line(),
                'checks': [c.to_dict() for c in self.checks]}


def gate(plans: Sequence['Plan'], ctx: verify.Context,
         layers: Sequence[str] = LAYERS) -> Verdict:
    """Run the layers for the host of ``ctx``."""
    return Verdict(ctx.host, verify.run(plans, ctx, layers))
