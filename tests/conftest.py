"""Hooks for every tier: the strict mode of tests/strict.py.

Under ``CI=true`` a skip fails the run unless its reason is on
tests/skip-allowlist.yaml (tox passes ``CI`` and ``KVMTUNE_*``).
"""

import os

from tests import strict

ALLOWLIST = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'skip-allowlist.yaml')


def pytest_configure(config):
    strict.configure(config, ALLOWLIST)
