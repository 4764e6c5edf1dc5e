"""The Ansible invocation of a rollout: the kvmtune.fleet collection's
playbook (playbooks/rollout.yml, ``PLAYBOOK``; the collection found
through ANSIBLE_COLLECTIONS_PATH, ``COLLECTIONS_PATH``), the rollout's
settings as its extra variables (``extra_vars``: the variables of the
Python-Ansible contract, doc/design.md), the ``ansible-playbook`` command
(``command``) and its environment (``environment``: the collection's
callback plugin ``kvmtune.fleet.events`` enabled, writing the run's
events, kvmtune.rollout.events, to the file it names).

kvmtune.rollout.run runs it; tests and an operator's own plays can build
the same command.
"""

from collections.abc import Sequence
import json
import os
import sys
from typing import Any

from kvmtune.rollout import inventory
from kvmtune.rollout import vocabulary

# Where the collection is, in the checkout and in the installed package
# (package data): ANSIBLE_COLLECTIONS_PATH takes the directory above
# ansible_collections/.
COLLECTIONS_PATH = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'data')
COLLECTION = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'kvmtune',
                          'fleet')
PLAYBOOK = os.path.join(COLLECTION, 'playbooks', 'rollout.yml')
# The rollout's modes (kvmtune.rollout.vocabulary.Mode).
MODES = vocabulary.MODES
# The collection's callback plugin that writes the run's events.
CALLBACK = 'kvmtune.fleet.events'


def extra_vars(*, profile: str, batch: int, mode: str, cloud: str | None,
               run_id: str, config_files: Sequence[str] = (),
               facts_dir: str = '', state_file: str | None = None,
               resume_hosts: Sequence[str] = ()) -> dict[str, Any]:
    """The playbook's variables (the roles' meta/argument_specs.yml;
    ``resume_hosts``: the hosts, as Nova names them, the run took out and
    has not put back, which go on whatever is left to change)."""
    return {'kvmtune_profile': profile, 'kvmtune_batch': batch,
            'kvmtune_mode': mode, 'kvmtune_os_cloud': cloud or '',
            'kvmtune_run_id': run_id,
            'kvmtune_config_files': list(config_files),
            'kvmtune_facts_dir': facts_dir,
            'kvmtune_state_file': state_file or '',
            'kvmtune_resume_hosts': list(resume_hosts),
            # the controller's kvmtune, for the cloud steps (delegated to
            # localhost): this one
            'kvmtune_controller_command': [sys.executable, '-m',
                                           'kvmtune.cli']}


def command(path: str, limit: str, variables: dict[str, Any],
            var_files: Sequence[str] = ()) -> list[str]:
    """ansible-playbook: ``variables`` and the JSON files ``var_files``
    as extra variables."""
    return [inventory.ansible_tool('ansible-playbook'), '-i', path,
            '--limit', limit, '-e', json.dumps(variables),
            *[word for name in var_files for word in ('-e', f'@{name}')],
            PLAYBOOK]


def environment(events: str | None = None) -> dict[str, str]:
    """ansible-playbook's environment: the collection on its path, the
    default screen output (for the log), and, with ``events`` (a file),
    the collection's events callback writing there."""
    paths = [COLLECTIONS_PATH] + [
        p for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(':')
        if p]
    env = {**os.environ, 'ANSIBLE_COLLECTIONS_PATH': ':'.join(paths),
           'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.default',
           'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0',
           'ANSIBLE_RETRY_FILES_ENABLED': '0'}
    if events is not None:
        enabled = [c for c in os.environ.get(
            'ANSIBLE_CALLBACKS_ENABLED', '').split(',') if c.strip()]
        env['ANSIBLE_CALLBACKS_ENABLED'] = ','.join(
            [*enabled, CALLBACK] if CALLBACK not in enabled else enabled)
        env['KVMTUNE_EVENTS'] = events
    return env
