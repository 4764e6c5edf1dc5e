"""Where the tests find the repository and its fixtures.

Tests mirror the package (``tests/unit/<package dir>/test_<module>.py``),
so their depth varies; they name paths through these constants instead of
counting ``..`` from ``__file__``.
"""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures')
HOSTS = os.path.join(FIXTURES, 'hosts')


def _nova_python():
    from kvmtune.testcloud import api
    return os.environ.get('KVMTUNE_NOVA_PYTHON') or api.python()


# The Python whose Nova checks nova.conf values and loads what kvmtune
# writes: $KVMTUNE_NOVA_PYTHON, else the test cloud's (kvmtune cloud install
# makes it). Tests that need it skip, with that reason, when it is absent.
NOVA_PYTHON = _nova_python()
