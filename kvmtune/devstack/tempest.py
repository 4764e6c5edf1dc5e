"""test-config: the [kvmtune] options for tempest.conf.

``extra`` leaves what it made in ``<state dir>/found.json``; this turns it
into ``(option, value)`` pairs that kvmtune.devstack.postconfig.set_options
writes into ``[kvmtune]`` of tempest.conf with kvmtune's one INI editor,
recording what was there so that clean puts it back (clean.sh does not
know TEMPEST_CONFIG: lib/tempest defines it and clean.sh does not source
it, so the path is taken from the record). The options are the Tempest
plugin's (kvmtune/tempest_plugin/config.py).
"""

import json
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune import privileged

FOUND_FILE = 'found.json'


def save_found(state_dir: str, found: dict[str, Any]) -> None:
    os.makedirs(state_dir, exist_ok=True)
    privileged.write_file(
        os.path.join(state_dir, FOUND_FILE),
        json.dumps(found, indent=2, sort_keys=True) + '\n')


def load_found(state_dir: str) -> Any:
    path = os.path.join(state_dir, FOUND_FILE)
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise InputError('does not exist', source=path,
                         fix='run the stack extra phase first')


def options(found: dict[str, Any]) -> list[tuple[str, str]]:
    """[(option, value)] in the Tempest plugin's formats."""
    lines = [
        ('flavors', ','.join(f'{profile}:{name}' for profile, name
                             in sorted(found['flavors'].items()))),
        ('traits_tagged', str(bool(found['traits_tagged']))),
        ('host_traits', ','.join(found['host_traits'])),
    ]
    if found.get('benchmark_image'):
        lines.append(('benchmark_image', found['benchmark_image']))
    return lines


def remove_found(state_dir: str) -> None:
    path = os.path.join(state_dir, FOUND_FILE)
    if os.path.exists(path):
        os.unlink(path)
