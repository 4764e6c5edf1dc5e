"""tools/hacking/checks.py, kvmtune's local flake8 checks: each fails on
a planted line, passes the home module, and tox.ini registers both for
``tox -e pep8``."""

import configparser
import importlib.util
import io
import os
import tokenize

from tests import paths

_SPEC = importlib.util.spec_from_file_location(
    'kvmtune_hacking_checks',
    os.path.join(paths.REPO, 'tools', 'hacking', 'checks.py'))
checks = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(checks)

PLANTED = os.path.join('kvmtune', 'cmd', 'planted.py')


def _k101(source, filename=PLANTED):
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    return list(checks.check_vocabulary_literal(source, tokens, filename,
                                                False))


def test_a_planted_kind_literal_fails():
    found = _k101("kind = 'kvmtune-bench-local'\n")
    assert len(found) == 1
    (where, message) = found[0]
    assert where == (1, 7)
    assert message.startswith('K101 ') and 'kvmtune/results/kinds.py' in \
        message


def test_each_concept_s_literal_fails_outside_its_home():
    for literal in ('rally-sweep', 'kvmtune-bench.qcow2', 'MiB/s', '***',
                    'emulated: QEMU TCG, not KVM speed',
                    'ComputeCapabilitiesFilter'):
        assert _k101(f'x = {literal!r}\n'), literal


def test_the_home_module_docstrings_and_names_pass():
    kinds = os.path.join(paths.REPO, 'kvmtune', 'results', 'kinds.py')
    assert _k101("FILE_BENCH_LOCAL = 'kvmtune-bench-local'\n", kinds) == []
    assert _k101('"""reads ``kvmtune-bench-local`` files"""\n') == []
    assert _k101('kind = kinds.FILE_BENCH_LOCAL  # bench-local\n') == []
    # the tests are not the package: they may spell a file's kind
    test = os.path.join('tests', 'unit', 'results', 'test_x.py')
    assert _k101("kind = 'kvmtune-bench-local'\n", test) == []


def test_a_tracker_reference_fails_in_a_comment_and_a_docstring():
    # each planted line split in two, so that this file passes K102 itself
    test = os.path.join('tests', 'unit', 'results', 'test_x.py')
    bench = os.path.join('benchmarks', 'planted.py')
    for line in ('    # see issue' ' 12\n', '"""Fixed (issue' ' 40)."""\n',
                 '# Issues' ' 3 and 4\n'):
        for filename in (PLANTED, test, bench):
            found = checks.check_tracker_reference(line, filename, False)
            assert found and found[1].startswith('K102 '), (line, filename)
    assert checks.check_tracker_reference(
        '# tests/unit/test_hostile.py pins it\n', PLANTED, False) is None
    # nothing else of the repository is read (tools/, doc/ conf.py)
    assert checks.check_tracker_reference(
        '# see issue' ' 12\n', os.path.join('doc', 'source', 'conf.py'),
        False) is None


def test_a_path_outside_the_repository_fails_in_a_docstring():
    """K102 refuses a citation a reader of the repository cannot open:
    the steering notes beside a checkout (planted split in two, so that
    this file passes K102 itself); a path inside the tree is fine."""
    test = os.path.join('tests', 'unit', 'rollout', 'test_x.py')
    for line in ('migrate`` do it (..' '/shared/FLEET-NOTES.md section 2)\n',
                 '    # ..' '/shared/ANCHORS-VERIFY-CAPACITY.md\n',
                 'see ..' '//shared/x.md\n'):
        for filename in (PLANTED, test):
            found = checks.check_tracker_reference(line, filename, False)
            assert found and 'outside the repository' in found[1], line
    for line in ('# doc/source/admin/rollout.md says why\n',
                 '# tests/fixtures/shared/x.json\n',
                 "'''nova/virt/hardware.py (opendev.org/openstack/nova)'''\n"):
        assert checks.check_tracker_reference(line, PLANTED, False) is None


def test_tox_registers_both_checks_for_pep8():
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(os.path.join(paths.REPO, 'tox.ini'))
    local = ini['flake8:local-plugins']
    entries = dict(line.split(' = ') for line in
                   local['extension'].strip().splitlines())
    assert entries == {'K101': 'checks:check_vocabulary_literal',
                       'K102': 'checks:check_tracker_reference'}
    assert local['paths'].strip() == './tools/hacking'
    flake8 = next(line.split() for line in
                  ini['testenv:pep8']['commands'].splitlines()
                  if line.strip().startswith('flake8 '))
    assert {'kvmtune', 'tests', 'benchmarks'} <= set(flake8)
