"""Strict mode: under ``CI=true`` a skip is a failure, unless allow-listed.

A skip says "this part of the machine is missing, so this was not
checked", and pytest exits 0 all the same. On a developer's laptop that is
what one wants; in CI it turns a missing part (Nova's venv, the consumers'
venv) into a green run that checked less. So when ``CI`` is ``true`` (or
``1``), a test or a module that skips is reported as failed, naming the
reason, unless the reason matches an entry of the allow-list
(tests/skip-allowlist.yaml): parts CI cannot have, each with the why.

The entries are YAML, a list of mappings::

    - reason: 'a regular expression matching the whole skip reason'
      why: 'why CI cannot have this part'

An expected failure (``xfail``) is not a skip and is left alone. At the
end of a strict session the allow-listed skips that happened are printed,
so a reviewer sees what a green CI did not check.

tests/conftest.py registers this for the repository's tests; a test of the
plugin itself registers it in its own pytester session (``configure``).
"""

import dataclasses
import os
import re

import pytest
import yaml

TRUE = ('true', '1')


def strict_mode(environ=None):
    """Whether the environment asks for strict mode (``CI=true``)."""
    environ = os.environ if environ is None else environ
    return environ.get('CI', '').strip().lower() in TRUE


@dataclasses.dataclass(frozen=True)
class Entry:
    reason: str
    why: str

    def matches(self, reason):
        return re.fullmatch(self.reason, reason) is not None


def load_allowlist(path):
    """The entries of the allow-list file at ``path``.

    Raises ``pytest.UsageError`` naming the file and the entry when the file
    cannot be read, is not a list of {reason, why} mappings, a reason is not
    a valid regular expression or a why is empty.
    """
    try:
        with open(path, encoding='utf-8') as stream:
            data = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError) as exc:
        raise pytest.UsageError(f'skip allow-list {path}: {exc}') from None
    if data is None:
        data = []
    if not isinstance(data, list):
        raise pytest.UsageError(f'skip allow-list {path}: not a list of '
                                'entries')
    entries = []
    for number, item in enumerate(data, 1):
        where = f'skip allow-list {path}, entry {number}'
        if not isinstance(item, dict) or set(item) != {'reason', 'why'}:
            raise pytest.UsageError(f'{where}: wants exactly the keys '
                                    'reason and why')
        reason, why = item['reason'], item['why']
        if not isinstance(reason, str) or not reason:
            raise pytest.UsageError(f'{where}: reason is not a non-empty '
                                    'string')
        try:
            re.compile(reason)
        except re.error as exc:
            raise pytest.UsageError(f'{where}: reason is not a regular '
                                    f'expression: {exc}') from None
        if not isinstance(why, str) or not why.strip():
            raise pytest.UsageError(f'{where}: why is empty')
        entries.append(Entry(reason, ' '.join(why.split())))
    return entries


def skip_reason(report):
    """The reason of a skipped test or collect report."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        message = str(longrepr[2])
    else:
        message = str(longrepr)
    prefix = 'Skipped: '
    if message.startswith(prefix):
        message = message[len(prefix):]
    return message


class StrictSkips:
    """The pytest plugin: checks every skip against the allow-list."""

    def __init__(self, entries, allowlist_path, strict):
        self.entries = entries
        self.allowlist_path = allowlist_path
        self.strict = strict
        # (node id, reason, entry) of each allow-listed skip
        self.allowed = []

    def entry_for(self, reason):
        for entry in self.entries:
            if entry.matches(reason):
                return entry
        return None

    def _check(self, report):
        if not self.strict or not report.skipped:
            return
        if hasattr(report, 'wasxfail'):
            return
        reason = skip_reason(report)
        if self.entry_for(reason) is not None:
            return
        report.outcome = 'failed'
        report.longrepr = (
            f'strict mode (CI=true): skipped: {reason}\n'
            f'That reason is not on {self.allowlist_path}: provide that part '
            f'to this run, or add an entry saying why CI cannot have it.')

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        self._check(outcome.get_result())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        # a module that skips at import (pytest.skip(allow_module_level),
        # importorskip) skips every test in it
        outcome = yield
        self._check(outcome.get_result())

    def _count(self, report):
        # Counted where the reports arrive: in the one process of a plain
        # run, in the controller of a pytest-xdist run (its workers make
        # the reports, and checked them above).
        if self.strict and report.skipped and \
                not hasattr(report, 'wasxfail'):
            reason = skip_reason(report)
            entry = self.entry_for(reason)
            if entry is not None:
                self.allowed.append((report.nodeid, reason, entry))

    def pytest_runtest_logreport(self, report):
        self._count(report)

    def pytest_collectreport(self, report):
        self._count(report)

    def pytest_report_header(self, config):
        if self.strict:
            return (f'strict mode (CI=true): a skip fails unless on '
                    f'{self.allowlist_path} ({len(self.entries)} entries)')
        return None

    def pytest_terminal_summary(self, terminalreporter):
        if not self.strict:
            return
        terminalreporter.write_sep(
            '=', f'allow-listed skips (CI=true): {len(self.allowed)}')
        by_reason = {}
        for nodeid, reason, entry in self.allowed:
            by_reason.setdefault((reason, entry), []).append(nodeid)
        for (reason, entry), nodeids in by_reason.items():
            terminalreporter.write_line(f'{len(nodeids)} skipped: {reason}')
            terminalreporter.write_line(f'    why CI allows it: {entry.why}')
            for nodeid in nodeids:
                terminalreporter.write_line(f'    {nodeid}')


def configure(config, allowlist_path, environ=None):
    """Register the plugin on ``config`` with the allow-list at that path."""
    shown = os.path.relpath(allowlist_path, config.rootpath)
    if shown.startswith(os.pardir):
        shown = str(allowlist_path)
    plugin = StrictSkips(load_allowlist(allowlist_path), shown,
                         strict_mode(environ))
    config.pluginmanager.register(plugin, 'kvmtune-strict-skips')
    return plugin
