"""The record of what the DevStack plugin changed: changes.json.

One JSON document in the state directory, rewritten atomically after each
change, so an interrupted phase still leaves an accurate record::

    {"schema": 1,
     "nova_conf": [{"path": "/etc/nova/nova.conf", "section": "compute",
                    "option": "cpu_dedicated_set",
                    "before": null, "after": ["1"]}],
     "files": [{"path": "/etc/modprobe.d/kvm_intel.conf",
                "before": null, "after": "options kvm_intel nested=1\\n"}],
     "created": [{"path": "/etc/nova/nova.conf.kvmtune.bak"}],
     "sysctl": [{"path": "/proc/sys/vm/nr_hugepages",
                 "before": "0", "after": "256"}],
     "flavors": [{"profile": "cpu-pinning", "name": "m1.small.cpu-pinning",
                  "id": "...", "created": true, "before_specs": {}}],
     "traits": [{"provider": "<uuid>", "hostname": "compute-1",
                 "added": ["CUSTOM_KVMTUNE_NESTED"], "removed": []}],
     "images": [{"id": "...", "name": "kvmtune-bench", "file": "..."}],
     "tempest_options": ["flavors", "benchmark_image"]}

``before`` is what was there before kvmtune's first change (null: nothing),
kept across repeated runs so undoing always returns to the original.
"""

import json
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune import privileged

FILE_NAME = 'changes.json'
SCHEMA = 1


class Changes:

    def __init__(self, state_dir: str) -> None:
        self.path = os.path.join(state_dir, FILE_NAME)
        self.data = self._load()

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path) as handle:
                data: dict[str, Any] = json.load(handle)
        except FileNotFoundError:
            return {'schema': SCHEMA}
        except ValueError as exc:
            raise InputError(f'not valid JSON: {exc}', source=self.path,
                             fix='restore it, or remove it and undo the '
                                 'plugin\'s changes by hand')
        if data.get('schema') != SCHEMA:
            raise InputError(f'schema {data.get("schema")!r} is not '
                             f'{SCHEMA}', source=self.path, key='schema',
                             fix='a newer or older plugin wrote it: undo '
                                 'its changes by hand, then remove it')
        return data

    def save(self) -> None:
        self.data = {k: v for k, v in self.data.items() if v or k == 'schema'}
        if set(self.data) == {'schema'}:
            # Nothing left to undo: no record at all.
            if os.path.exists(self.path):
                os.unlink(self.path)
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        privileged.write_file(
            self.path, json.dumps(self.data, indent=2, sort_keys=True) + '\n',
            mode=0o600)

    def entries(self, kind: str) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self.data.setdefault(kind, [])
        return entries

    def find(self, kind: str, **keys: Any) -> dict[str, Any] | None:
        for entry in self.data.get(kind, []):
            if all(entry.get(k) == v for k, v in keys.items()):
                found: dict[str, Any] = entry
                return found
        return None

    def drop(self, kind: str, entry: dict[str, Any] | None = None) -> None:
        """Forget one entry of kind (or all of them)."""
        if entry is None:
            self.data.pop(kind, None)
            return
        self.data[kind].remove(entry)
        if not self.data[kind]:
            del self.data[kind]
