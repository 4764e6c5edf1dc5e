# Copyright: kvmtune developers
# Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0)
"""kvmtune.fleet.events: one JSON line per host and rollout step."""

from __future__ import annotations

DOCUMENTATION = r"""
name: events
type: aggregate
short_description: One JSON event per host and kvmtune rollout step
description:
  - Writes, to the file O(path), one JSON object a line for each host and
    step of the kvmtune rollout (the tasks that carry the variable
    C(kvmtune_step), the collection's step table), when the host's next
    step starts, when the host fails, or when a batch (a play run) ends.
  - Each event has C(event=step), C(host), C(step), C(status) (the
    strongest of the step's tasks, in the order skipped, ok, changed,
    failed, unreachable), C(batch) (1 for the first batch) and, when the
    step failed, C(result) (the failed task's C(rc), C(msg), C(stdout),
    C(stderr), each at most 8000 characters; nothing of a C(no_log) task)
    and C(line), the last line the step's command printed (kvmtune's own
    one line, with its fix).
  - A batch's start is C(event=batch); the run's end C(event=end) with
    Ansible's per-host counts.
  - The shape follows ansible.posix's jsonl callback (one JSON document a
    line); the file is the contract kvmtune rollout reads
    (doc/design.md, the rollout's contract).
version_added: 0.1.0
author: kvmtune developers (@openstack)
options:
  path:
    description: The file the events are appended to.
    type: path
    env:
      - name: KVMTUNE_EVENTS
    required: true
"""

import json  # noqa: E402
from typing import Any  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402

# A step's status from its tasks' results: the strongest one.
RANK = ('skipped', 'ok', 'changed', 'failed', 'unreachable')
KEPT = ('rc', 'msg', 'stdout', 'stderr')
LIMIT = 8000


def _last_line(result: dict[str, Any]) -> str:
    for key in ('stderr', 'stdout'):
        text = str(result.get(key) or '')
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return ''


def _kept(result: dict[str, Any]) -> dict[str, Any]:
    if result.get('_ansible_no_log'):
        return {'msg': 'the output has been hidden (no_log)'}
    kept = {}
    for key in KEPT:
        value = result.get(key)
        if value is None:
            continue
        if isinstance(value, str) and len(value) > LIMIT:
            value = value[-LIMIT:]
        kept[key] = value
    return kept


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'kvmtune.fleet.events'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._out: Any = None
        self._batch = 0
        # {host: (step, status, result)} of the step each host is in
        self._current: dict[str, tuple[str, str, Any]] = {}

    def _write(self, event: dict[str, Any]) -> None:
        if self._out is None:
            self._out = open(self.get_option('path'), 'a', encoding='utf-8')
        self._out.write(json.dumps(event, sort_keys=True) + '\n')
        self._out.flush()

    def _emit(self, host: str, step: str, status: str,
              result: Any) -> None:
        event: dict[str, Any] = {'event': 'step', 'host': host,
                                 'step': step, 'status': status,
                                 'batch': self._batch}
        if result is not None:
            kept = _kept(result)
            event['result'] = kept
            event['line'] = _last_line(kept)
        self._write(event)

    def _flush(self) -> None:
        for host, (step, status, result) in list(self._current.items()):
            self._emit(host, step, status, result)
        self._current.clear()

    def _result(self, result: Any, status: str) -> None:
        task = result._task
        step = (task.vars or {}).get('kvmtune_step')
        if not step:
            return
        host = result._host.get_name()
        before = self._current.get(host)
        if before is not None and before[0] != step:
            self._emit(host, *before)
            before = None
        if before is None or RANK.index(status) > RANK.index(before[1]):
            kept = result._result if status in ('failed', 'unreachable') \
                else None
            before = (step, status, kept)
        self._current[host] = before
        if RANK.index(status) >= RANK.index('failed'):
            self._emit(host, *before)
            del self._current[host]

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._flush()
        self._batch += 1
        self._write({'event': 'batch', 'batch': self._batch})

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result(result, 'changed' if result.is_changed() else 'ok')

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result(result, 'skipped')

    def v2_runner_on_failed(self, result: Any,
                            ignore_errors: bool = False) -> None:
        self._result(result, 'failed')

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result(result, 'unreachable')

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._flush()
        self._write({'event': 'end', 'hosts': {
            host: stats.summarize(host) for host in sorted(stats.processed)}})
        if self._out is not None:
            self._out.close()
            self._out = None
