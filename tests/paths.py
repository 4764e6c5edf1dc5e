"""Where the tests find the repository and its fixtures.

Tests mirror the package (``tests/unit/<package dir>/test_<module>.py``),
so their depth varies; they name paths through these constants instead of
counting ``..`` from ``__file__``.
"""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures')
HOSTS = os.path.join(FIXTURES, 'hosts')


def __getattr__(name):
    """``NOVA_PYTHON``: the Python whose Nova checks nova.conf values and
    loads what kvmtune writes: $KVMTUNE_NOVA_PYTHON, else the test cloud's
    (kvmtune cloud install makes it); tests that need it skip, with that
    reason, when it is absent. Resolved on first use, so the many tests
    that import this module for paths do not load kvmtune's config."""
    if name == 'NOVA_PYTHON':
        from kvmtune.testcloud import api
        value = os.environ.get('KVMTUNE_NOVA_PYTHON') or api.python()
        globals()[name] = value
        return value
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
