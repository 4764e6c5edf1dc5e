"""Hooks for every tier: the strict mode of tests/strict.py, and the
order of the long tests.

Under ``CI=true`` a skip fails the run unless its reason is on
tests/skip-allowlist.yaml (tox passes ``CI`` and ``KVMTUNE_*``).

A test marked ``slow`` (tens of seconds: a real install, Nova's own code
over many cases) is started first: the unit tier runs on two pytest-xdist
workers (tox.ini), and a long test left for the end keeps one of them
busy alone. CI's log prints the slowest tests (``--durations``), which is
where a test earns the mark.
"""

import os

from tests import strict

ALLOWLIST = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'skip-allowlist.yaml')


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'slow: runs for tens of seconds; started first')
    strict.configure(config, ALLOWLIST)


def pytest_collection_modifyitems(config, items):
    # stable: the slow ones first, each group in collection order (every
    # xdist worker collects, and must arrive at the same order)
    items.sort(key=lambda item: item.get_closest_marker('slow') is None)
