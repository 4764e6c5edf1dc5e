"""Ask compute hosts over Ansible what a profile would change there.

``ask(hosts, inventory, profile)`` runs, in one ``ansible`` call (its
forks ask the hosts at once), a short Python script on each host that
runs the host's own kvmtune, read-only:

- ``kvmtune boot apply --profile P --root R --dry-run -f json``: the
  boot-time changes and the reboot reasons;
- ``kvmtune host inspect --root R -f json``: the facts (the cloud's
  preflight plans on them);
- ``kvmtune nova-conf apply --profile P --root R --config C --service
  compute --dry-run``, when the host has that nova.conf: its diff; and,
  once that has read the file, its bytes (the preflight reads its
  ``cpu_dedicated_set``), decoded here by the same reader
  (kvmtune.tuning.novaconf.update.decode_config): a file Nova would not
  read is one line naming the host and the file, never a traceback.

R is the host's ``kvmtune_root`` (default ``/``) and C its
``kvmtune_nova_conf`` under it, both from the inventory (Ansible's
templating, on each host's own variables). A host Ansible cannot reach,
or whose kvmtune refuses, is one InputError naming the host.
"""

import base64
from collections.abc import Sequence
import dataclasses
import json
import shlex
import subprocess
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune import facts as host_facts
from kvmtune.rollout import inventory

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts

# How long Ansible may take to ask every host.
TIMEOUT = 900
# What runs on each host (python3 -c): its three answers as one JSON line.
SCRIPT = '''\
import base64, json, os, subprocess, sys
profile, root, conf = sys.argv[1:4]
def run(*argv):
    done = subprocess.run(["kvmtune", *argv], capture_output=True, text=True)
    return [done.returncode, done.stdout, done.stderr]
boot = run("boot", "apply", "--profile", profile, "--root", root,
           "--dry-run", "-f", "json")
facts = run("host", "inspect", "--root", root, "-f", "json")
nova = run("nova-conf", "apply", "--profile", profile, "--root", root,
           "--config", conf, "--service", "compute", "--dry-run") \\
    if os.path.isfile(conf) else None
data = None
if nova is not None and nova[0] == 0:   # kvmtune's reader took the file
    with open(conf, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
print(json.dumps({"boot": boot, "facts": facts, "nova": nova,
                  "conf": data, "path": conf}))
'''
# The script's arguments, templated by Ansible on each host's variables.
ROOT = '{{ kvmtune_root | default("/") | quote }}'
NOVA_CONF = ('{{ (kvmtune_root | default("/"), (kvmtune_nova_conf | '
             f'default("{inventory.DEFAULT_NOVA_CONF}"))[1:]) | path_join '
             '| quote }}')


@dataclasses.dataclass
class Answer:
    """One host's answer."""

    staged: dict[str, Any]      # boot apply --dry-run -f json
    facts: 'Facts'              # host inspect -f json, checked
    # the lines nova-conf apply --dry-run would add (its diff's "+"
    # lines), or None: no nova.conf there
    nova_conf: list[str] | None
    # that nova.conf's text (None: not there)
    conf_text: str | None = None


def host_error(name: str, exc: KvmtuneError) -> InputError:
    """``exc`` as one line naming the inventory host ``name`` first."""
    where = ': '.join(str(p) for p in (exc.source, exc.key) if p)
    problem = f'{where}: {exc.problem}' if where else exc.problem
    return InputError(problem, source=f'inventory host {name}', fix=exc.fix)


def command(path: str, hosts: Sequence[inventory.Host], profile: str
            ) -> list[str]:
    """The ``ansible`` command that asks ``hosts`` of the inventory
    ``path``."""
    return [inventory.ansible_tool('ansible'), '-i', path,
            ':'.join(h.name for h in hosts), '-o', '-m',
            'ansible.builtin.command', '-a',
            ' '.join(['python3', '-c', shlex.quote(SCRIPT),
                      shlex.quote(profile), ROOT, NOVA_CONF])]


def ask(hosts: Sequence[inventory.Host], path: str, profile: str
        ) -> 'dict[str, Answer | KvmtuneError]':
    """{host name: Answer} of ``hosts`` (none: {} without running
    Ansible); a host that did not answer, or whose kvmtune refused, has
    the error naming it in its place. Ansible that does not run at all is
    the error (InputError)."""
    if not hosts:
        return {}
    try:
        done = subprocess.run(command(path, hosts, profile),
                              capture_output=True, text=True,
                              timeout=TIMEOUT, check=False,
                              env=inventory.environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f'Ansible did not answer: {exc}', source=path,
                         fix='check that ansible reaches the hosts '
                             '(ansible -m ping)') from None
    lines = {}
    for line in done.stdout.splitlines():
        name, sep, rest = line.partition(' | ')
        if sep:
            lines[name] = rest
    answers: dict[str, Answer | KvmtuneError] = {}
    for host in hosts:
        try:
            answers[host.name] = parse(host.name, lines.get(host.name),
                                       done.stderr)
        except KvmtuneError as exc:
            answers[host.name] = exc
    return answers


def parse(name: str, line: str | None, stderr: str = '') -> Answer:
    """The Answer of host ``name`` from its line of ``ansible -o``'s
    output (``CHANGED | rc=0 | (stdout) {...}``)."""
    source = f'inventory host {name}'
    marker = '(stdout) '
    if line is None or not line.startswith('CHANGED') or marker not in line:
        what = ' '.join((line or stderr or 'no answer').split())[:300]
        raise InputError(f'unreachable or failed over Ansible: {what}',
                         source=source,
                         fix='check that ansible reaches it (ansible -m '
                             'ping) and that kvmtune is on its PATH')
    try:
        answer = json.loads(line.split(marker, 1)[1])
        runs = [('boot', answer['boot']), ('facts', answer['facts'])]
        if answer['nova'] is not None:
            runs.append(('nova', answer['nova']))
        outs = {}
        for what, (rc, out, err) in runs:
            if rc != 0:
                last = (err.strip().splitlines() or ['failed'])[-1]
                # kvmtune's one line there carries its own fix
                raise InputError(last.removeprefix('kvmtune: error: '),
                                 source=source,
                                 fix=None if '(fix: ' in last
                                 else 'see kvmtune on that host')
            outs[what] = out
        staged = json.loads(outs['boot'])
        data = answer.get('conf')
        data = None if data is None else base64.b64decode(data, validate=True)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f'its answer was not understood ({exc})',
                         source=source,
                         fix='install the same kvmtune on it') from None
    if not isinstance(staged, dict):
        raise InputError('its answer was not understood (not a JSON object)',
                         source=source, fix='install the same kvmtune on it')
    facts = host_facts.parse(outs['facts'].encode('utf-8'),
                             f'{source}: kvmtune host inspect')
    nova = None if 'nova' not in outs else [
        text[1:] for text in outs['nova'].splitlines()
        if text.startswith('+') and not text.startswith('+++')]
    return Answer(staged, facts, nova, None if data is None else
                  _decoded(name, str(answer.get('path')), data))


def _decoded(name: str, path: str, data: bytes) -> str:
    """nova.conf's text from the bytes a host sent, by nova-conf apply's
    reader."""
    from kvmtune.tuning.novaconf import update

    try:
        return update.decode_config(path, data)
    except KvmtuneError as exc:
        raise host_error(name, exc) from None
