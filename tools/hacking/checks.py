"""kvmtune's local flake8 checks, in the style of nova/hacking/checks.py
(https://opendev.org/openstack/nova/src/branch/master/nova/hacking/checks.py).

Registered in tox.ini ``[flake8:local-plugins]``; ``tox -e pep8`` runs
them over kvmtune/, tests/ and benchmarks/ (tests/unit/test_hacking.py
proves each can fail).

K101  a literal of the shared vocabulary outside its home module: import
      the name instead (doc/source/reference/glossary.rst).
K102  a tracker reference ("issue 12"), or a path outside the repository
      ("../shared/NOTES.md"), in kvmtune's code, its tests or its
      benchmarks: cite what a reader of the repository can open instead
      (the test that pins it, a doc, an upstream file or URL).
"""

import ast
import os
import re
import tokenize

try:
    from hacking import core
    flake8ext = core.flake8ext
except ImportError:     # the unit tier has no hacking: plain functions
    def flake8ext(func):
        return func

# literal -> the module that defines it (path under the repository)
HOMES = {
    # result kinds
    'kvmtune-bench-local': 'kvmtune/results/kinds.py',
    'kvmtune-bench-compare': 'kvmtune/results/kinds.py',
    'kvmtune-bench-nested': 'kvmtune/results/kinds.py',
    'kvmtune-baseline': 'kvmtune/results/kinds.py',
    'bench-local': 'kvmtune/results/kinds.py',
    'bench-compare': 'kvmtune/results/kinds.py',
    'bench-nested': 'kvmtune/results/kinds.py',
    'rally-sweep': 'kvmtune/results/kinds.py',
    # the guest image's files
    'kvmtune-bench.raw': 'kvmtune/image/__init__.py',
    'kvmtune-bench.qcow2': 'kvmtune/image/__init__.py',
    'kvmtune-bench.json': 'kvmtune/image/__init__.py',
    'initrd.img': 'kvmtune/image/__init__.py',
    # units and the emulated label
    'MiB/s': 'kvmtune/results/units.py',
    'MB/s': 'kvmtune/results/units.py',
    'transactions/s': 'kvmtune/results/units.py',
    'emulated: QEMU TCG, not KVM speed': 'kvmtune/results/units.py',
    # the secret mask
    '***': 'kvmtune/errors.py',
    # Nova's default filters: only the release table has them
    'ComputeCapabilitiesFilter': 'kvmtune/data/nova_releases.yaml',
    'ImagePropertiesFilter': 'kvmtune/data/nova_releases.yaml',
    'ServerGroupAntiAffinityFilter': 'kvmtune/data/nova_releases.yaml',
}
_TRACKER = re.compile(r'\bissues? #?\d+', re.IGNORECASE)
# a path that leaves the repository: the steering notes beside a checkout
# (../shared/...) are no file a reader of the repository has
_OUTSIDE = re.compile(r'(?<![\w.])\.\./+shared/')


def _in_package(filename):
    parts = os.path.normpath(filename).split(os.sep)
    return 'kvmtune' in parts and 'tests' not in parts


def _cites(filename):
    """The code, the tests or the benchmarks: what K102 reads."""
    parts = os.path.normpath(filename).split(os.sep)
    return bool({'kvmtune', 'tests', 'benchmarks'} & set(parts))


def _home(filename, literal):
    return os.path.normpath(filename).endswith(
        os.path.normpath(HOMES[literal]))


@flake8ext
def check_vocabulary_literal(logical_line, tokens, filename, noqa):
    """K101: a vocabulary literal belongs to its home module only (a
    string of the code, not a docstring's or a comment's mention).

    Okay: from kvmtune.results import kinds
    K101: kind = 'kvmtune-bench-local'
    """
    if noqa or not _in_package(filename):
        return
    for token in tokens:
        if token.type != tokenize.STRING or token.string[:1] in 'fFbB':
            continue
        try:
            value = ast.literal_eval(token.string)
        except (ValueError, SyntaxError):
            continue
        if value in HOMES and not _home(filename, value):
            yield (token.start, f'K101 {value!r} is defined in '
                   f'{HOMES[value]}: import it from there')


@flake8ext
def check_tracker_reference(physical_line, filename, noqa):
    """K102: no tracker reference in kvmtune's code, tests or
    benchmarks.

    Okay: # tests/unit/test_hostile.py pins this
    K102: # see issue 12
    K102: # ../shared/FLEET-NOTES.md section 2
    """
    if noqa or not _cites(filename):
        return None
    match = _TRACKER.search(physical_line)
    if match:
        return (match.start(), 'K102 a tracker reference: cite the test '
                'that pins it, a doc or an upstream file instead')
    match = _OUTSIDE.search(physical_line)
    if match:
        return (match.start(), 'K102 a path outside the repository: cite '
                'a doc of the repository, an upstream file or a URL')
    return None
