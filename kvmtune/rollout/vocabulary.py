"""The rollout's words on both sides of the seam between Python and
Ansible: its modes and its steps.

``STEPS`` is the one step table: each step's name, where it runs (on the
compute host over Ansible's connection, on the controller, delegated to
localhost, or both), whether the state file records it (a step recorded
is not made again by a run again with the same ``--state``) and the
``kvmtune rollout-step`` command that makes or records it. The state
file (kvmtune.rollout.state), ``kvmtune rollout-step``
(kvmtune.cmd.rollout_step), the events reader (kvmtune.rollout.events)
and the kvmtune.fleet collection's roles (each step's tasks carry
``vars: {kvmtune_step: NAME}``; tests/unit/rollout/test_vocabulary.py
reads the roles and holds them to this table) all use it. doc/design.md
("The rollout's contract") writes it out.
"""

import dataclasses
import enum


class Mode(str, enum.Enum):
    """How a host's change meets its guests."""

    # the guests leave the host (migrated) before it changes
    DRAIN = 'drain'
    # the guests stay; Nova starts them again after the reboot
    IN_PLACE = 'in-place'
    # write the changes and stop: no disable, no reboot, no restart
    STAGE = 'stage'

    def __str__(self) -> str:
        return self.value


MODES = tuple(mode.value for mode in Mode)
# The modes the cloud's preflight judges a batch in (stage touches no
# service and no guest).
JUDGED = (Mode.DRAIN.value, Mode.IN_PLACE.value)

# What the rollout does on a host (kvmtune rollout --check's action):
# reboot or restart it, in a batch; leave it alone, with nothing to
# change (none) or nothing kvmtune can see to change while a part it
# would change cannot be seen (unknown: its nova.conf is not there); or
# stop, the host does not plan (unplanned; the run and --check exit 2).
ACTIONS = ('reboot', 'restart', 'none', 'unknown', 'unplanned')
# The actions that put a host in a batch.
ROLLED = ('reboot', 'restart')

HOST = 'host'
CONTROLLER = 'controller'


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    # where its tasks run: the compute host, the controller, or both
    where: tuple[str, ...]
    # recorded in the state file when made (a run again skips it)
    recorded: bool
    # the kvmtune rollout-step command that makes or records it
    command: str | None = None
    what: str = ''


STEPS = (
    Step('preflight', (HOST, CONTROLLER), True, 'preflight',
         "the host's facts and pending changes, then the batch's room "
         'in the cloud'),
    Step('disable', (CONTROLLER,), True, 'disable',
         'nova-compute disabled with the run\'s reason'),
    Step('drain', (CONTROLLER,), True, 'drain',
         'the guests migrated away (drain mode)'),
    Step('apply', (HOST, CONTROLLER), True, 'record-plan',
         'nova.conf and the boot-time changes written; the plan applied '
         'recorded'),
    Step('reboot', (HOST,), False, None,
         'the host rebooted, when a boot-time change is pending'),
    Step('restart', (HOST,), False, None,
         'nova-compute restarted, when only nova.conf changed'),
    Step('verify', (HOST,), False, None,
         'kvmtune verify: the host runs the plan applied'),
    Step('gate', (CONTROLLER,), True, 'gate',
         'the cloud sees the host as planned'),
    Step('enable', (CONTROLLER,), True, 'enable',
         'nova-compute enabled again, when the gate passed'),
    Step('textfile', (HOST,), False, None,
         "kvmtune verify's node_exporter textfile"),
)
NAMES = tuple(step.name for step in STEPS)
# The steps the state file records, in order.
RECORDED = tuple(step.name for step in STEPS if step.recorded)
# The last step recorded: a host it is done for is done with the run.
LAST = RECORDED[-1]
# What ``kvmtune rollout-step`` makes: {command: step}.
COMMANDS = {step.command: step.name for step in STEPS if step.command}


def step(name: str) -> Step:
    """The step called ``name`` (KeyError: not a step)."""
    for found in STEPS:
        if found.name == name:
            return found
    raise KeyError(name)
