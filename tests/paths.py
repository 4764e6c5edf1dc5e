"""Where the tests find the repository and its fixtures.

Tests mirror the package (``tests/unit/<package dir>/test_<module>.py``),
so their depth varies; they name paths through these constants instead of
counting ``..`` from ``__file__``.
"""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures')
HOSTS = os.path.join(FIXTURES, 'hosts')
