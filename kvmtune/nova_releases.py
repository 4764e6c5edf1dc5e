"""What each Nova release kvmtune supports has of what the tuners plan.

The table (package data ``kvmtune/data/nova_releases.yaml``) is written by
the release matrix (``tools/nova-matrix --write-table``) from each
release's own code: its oslo.config option registration (nova/conf/), its
extra-spec validators (nova/api/validation/extra_specs/) and its scheduler
filters (nova/scheduler/filters/). The matrix tests compare it with every
release again, so it cannot drift from what the releases say.

A plan is made for one release (``kvmtune plan --nova-release N``,
``[nova] release`` in kvmtune.conf, else the Nova importable here, else the
newest release in the table): the tuners plan only options, values and
extra specs that release has (kvmtune.tuning.tuners.releasefit).
"""

import functools
import importlib.metadata
import importlib.util
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune import yamlinput

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                    'nova_releases.yaml')


@functools.lru_cache(maxsize=None)
def table() -> Any:
    return yamlinput.load_yaml(DATA)


def known() -> list[int]:
    """The release majors in the table, oldest first."""
    return sorted(int(major) for major in table()['releases'])


def newest() -> int:
    return known()[-1]


def _in_range(entries: list[dict[str, Any]],
              major: int) -> dict[str, Any] | None:
    for entry in entries:
        first, last = entry['releases']
        if first <= major <= last:
            return {k: v for k, v in entry.items() if k != 'releases'}
    return None


class Release:
    """One Nova release as the table describes it."""

    def __init__(self, major: int) -> None:
        self.major = major
        info = table()['releases'][str(major)]
        self.nova = info['nova']
        self.series = info['series']

    def __repr__(self) -> str:
        return f'Release({self.major})'

    @property
    def label(self) -> str:
        return f'Nova {self.major} ({self.series})'

    def option(self, section: str, option: str) -> dict[str, Any] | None:
        """{'exists', 'deprecated_for_removal', 'deprecated_since',
        'choices', 'replaced_by'} for an option a tuner plans; None when
        the table does not list it (no tuner planned it when the table was
        written)."""
        entries = table()['options'].get(f'{section}.{option}')
        if entries is None:
            return None
        return _in_range(entries, self.major)

    def default_filters(self) -> list[str]:
        """Nova's default [filter_scheduler] enabled_filters."""
        return list(self.option(  # type: ignore[index]  # in every release
            'filter_scheduler', 'enabled_filters')['default'])

    def has_filter(self, name: str) -> bool:
        return name in _in_range(  # type: ignore[index]  # every release
            table()['filters'], self.major)['known']

    def has_feature(self, name: str) -> bool:
        """True when the release has the behaviour ``name`` of the table's
        features (found in its source by the matrix)."""
        present: bool = _in_range(  # type: ignore[index]  # every release
            table()['features'][name], self.major)['present']
        return present

    def spec(self, name: str) -> dict[str, Any] | None:
        """{'validated', 'enum'} for an extra spec a tuner sets, or None
        when the table does not list it."""
        entries = table()['specs'].get(name)
        return None if entries is None else _in_range(entries, self.major)


def installed_major() -> int | None:
    """The major of the Nova importable in this Python, or None."""
    if importlib.util.find_spec('nova') is None:
        return None
    try:
        return int(importlib.metadata.version('nova').split('.')[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _configured() -> Any:
    from kvmtune import conf as kvmtune_conf
    try:
        return kvmtune_conf.CONF.nova.release
    except Exception:   # kvmtune.conf not loaded: oslo.config's errors
        return None


def get(major: 'int | str | Release | None' = None,
        source: str = '--nova-release', key: str | None = None) -> Release:
    """The Release to plan for.

    ``major`` (the CLI's --nova-release), else ``[nova] release`` of a
    loaded kvmtune.conf, else the Nova importable here, else the newest
    release in the table. A release outside the table is an InputError.
    """
    if major is None:
        major = _configured()
        source, key = 'kvmtune.conf', '[nova] release'
    if major is None:
        major = installed_major()
        source, key = 'the Nova installed here', None
        if major is not None and major > newest():
            major = newest()    # newer than the table: its newest
    if major is None:
        return Release(newest())
    if isinstance(major, Release):
        return major
    try:
        major = int(major)
    except (TypeError, ValueError):
        major = None
    if major not in known():
        raise InputError(
            f'kvmtune knows Nova {known()[0]} to {newest()}, not '
            f'{major if major is not None else "that"}',
            source=source, key=key,
            fix=f'give one of {", ".join(map(str, known()))} '
                '(user guide, "Nova releases")')
    return Release(major)
