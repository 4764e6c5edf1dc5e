"""The hosts of an Ansible inventory, read by Ansible's own parser.

``load(path, pattern)`` runs ``ansible-inventory -i PATH --list --limit
PATTERN`` (ansible-core, the ``fleet`` extra) and returns each host with
its variables, in the order the inventory lists them: any inventory
Ansible reads (INI, YAML, a directory, a dynamic script or plugin) is
read the same way here, with its group variables applied. What kvmtune
reads of a host:

- ``kvmtune_root``: the host's tree (``/`` when unset); a capture made by
  ``kvmtune host capture`` is a host, as ``--root`` takes it elsewhere;
- ``kvmtune_nova_conf``: the nova.conf nova-compute reads, under that
  root (default /etc/nova/nova.conf; kolla-ansible's is
  /etc/kolla/nova-compute/nova.conf);
- ``kvmtune_nova_host``: the host's name in Nova, when it is not the
  inventory name;
- ``ansible_connection``: ``local`` means the host's tree is on this
  machine, so ``--check`` reads it here; any other host is asked over
  its connection.

No ansible-core, an inventory Ansible cannot read or a pattern that
selects no host is one line, exit 2.
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from kvmtune.errors import InputError
from kvmtune import extras

# ansible-inventory reads a large inventory in seconds; a dynamic one may
# ask a cloud API.
TIMEOUT = 300
DEFAULT_NOVA_CONF = '/etc/nova/nova.conf'
FIX = ('install the fleet extra, kvmtune[fleet] (ansible-core): ' +
       extras.install_hint('fleet'))


@dataclasses.dataclass
class Host:
    """One inventory host and what kvmtune reads of its variables."""

    name: str
    vars: dict[str, Any]

    @property
    def root(self) -> str:
        return str(self.vars.get('kvmtune_root') or '/')

    @property
    def connection(self) -> str | None:
        value = self.vars.get('ansible_connection')
        return str(value) if value is not None else None

    @property
    def local(self) -> bool:
        """Whether the host's tree is on this machine (``--check`` reads
        it here)."""
        return self.connection == 'local'

    @property
    def nova_host(self) -> str:
        """The host's name in Nova (its nova-compute service's host):
        ``kvmtune_nova_host``, else the inventory name."""
        return str(self.vars.get('kvmtune_nova_host') or self.name)

    @property
    def nova_conf(self) -> str:
        return str(self.vars.get('kvmtune_nova_conf') or DEFAULT_NOVA_CONF)

    def in_root(self, path: str) -> str:
        """``path`` of the host, under its root."""
        return os.path.join(self.root, path.lstrip('/'))


def ansible_tool(name: str) -> str:
    """The path of the ansible-core program ``name`` (ansible-inventory,
    ansible-playbook): on PATH, else beside this Python (the venv kvmtune
    is installed in); InputError naming the extra when there is none."""
    found = shutil.which(name) or shutil.which(
        name, path=os.path.dirname(sys.executable))
    if found is None:
        raise InputError(f'{name} is not installed: the fleet rollout runs '
                         'on ansible-core', key=name, fix=FIX)
    return found


def environment() -> dict[str, str]:
    """ansible-*'s environment: an inventory source it cannot parse is an
    error, not a warning and no hosts (ansible-core's
    INVENTORY_UNPARSED_IS_FAILED, INVENTORY_ANY_UNPARSED_IS_FAILED)."""
    return {**os.environ, 'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0',
            'ANSIBLE_INVENTORY_UNPARSED_FAILED': 'True',
            'ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED': 'True'}


def _run(argv: list[str], path: str,
         meanwhile: Callable[[], None] | None = None) -> str:
    """What ``argv`` prints; ``meanwhile`` called while it runs."""
    started = time.monotonic()
    try:
        with subprocess.Popen(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=environment()) as proc:
            try:
                if meanwhile is not None:
                    meanwhile()
                stdout, stderr = proc.communicate(timeout=max(
                    0.0, TIMEOUT - (time.monotonic() - started)))
            except BaseException:
                # as subprocess.run: no child left behind (a timeout, or
                # meanwhile failed)
                proc.kill()
                raise
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f'{os.path.basename(argv[0])} did not run: {exc}',
                         source=path, fix=FIX) from None
    if proc.returncode != 0:
        lines = [line for line in stderr.splitlines()
                 if line.strip()] or ['no output']
        error = next((line for line in lines if 'ERROR' in line), lines[-1])
        raise InputError(f'Ansible cannot read it: {error.strip()}',
                         source=path,
                         fix='give an inventory ansible-inventory -i reads')
    return stdout


def _walk(groups: Mapping[str, Any], name: str, seen: set[str]
          ) -> Iterator[str]:
    """Host names of group ``name`` and its children, in listed order."""
    if name in seen:
        return
    seen.add(name)
    group = groups.get(name)
    if not isinstance(group, dict):
        return
    for host in group.get('hosts') or ():
        yield str(host)
    for child in group.get('children') or ():
        yield from _walk(groups, str(child), seen)


def parse(text: str, path: str) -> list[Host]:
    """The hosts of ``ansible-inventory --list`` output ``text``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f'ansible-inventory printed no JSON ({exc})',
                         source=path, fix=FIX) from None
    if not isinstance(data, dict):
        raise InputError('ansible-inventory printed no JSON object',
                         source=path, fix=FIX)
    meta = data.get('_meta')
    hostvars = meta.get('hostvars', {}) if isinstance(meta, dict) else {}
    names = list(dict.fromkeys(_walk(data, 'all', set())))
    return [Host(name, dict(hostvars.get(name) or {})) for name in names]


def load(path: str, pattern: str = 'all',
         meanwhile: Callable[[], None] | None = None) -> list[Host]:
    """The hosts of the inventory ``path`` that ``pattern`` (an Ansible
    host pattern: a group, ``web:&db``, ...) selects. ``meanwhile``: the
    caller's own preparation, called while ansible-inventory runs (its
    start-up is most of its time, and it takes one core of two:
    kvmtune.rollout.local.Early)."""
    if not os.path.exists(path):
        raise InputError('no such inventory', source=path,
                         key='--inventory',
                         fix='give an inventory file or directory')
    tool = ansible_tool('ansible-inventory')
    hosts = parse(_run([tool, '-i', path, '--list', '--limit', pattern],
                       path, meanwhile), path)
    if not hosts:
        raise InputError(f'no host matches {pattern!r}', source=path,
                         key='--limit',
                         fix='name a group or pattern of the inventory '
                             f'(ansible-inventory -i {path} --graph)')
    return hosts
