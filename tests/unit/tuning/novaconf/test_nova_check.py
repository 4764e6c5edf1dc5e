"""kvmtune.tuning.novaconf.nova_check: nova.conf values checked against
Nova's own option definitions, run as kvmtune runs it: a script under the
test cloud's Python, which has Nova (kvmtune cloud install makes it),
answering JSON on stdout; and under a Python without Nova."""

import json
import subprocess
import sys

import pytest

from kvmtune.tuning.novaconf import nova_check
from tests import paths


def run(python, changes):
    proc = subprocess.run([python, nova_check.__file__],
                          input=json.dumps({'changes': changes}),
                          capture_output=True, text=True, timeout=120,
                          cwd='/')
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope='module')
def answer():
    """One run with every kind of problem (Nova's import takes seconds)."""
    return run(paths.NOVA_PYTHON, {
        'compute': {'cpu_dedicated_sett': '1', 'cpu_shared_set': '0-',
                    'cpu_dedicated_set': '2-3'},
        'DEFAULT': {'reserved_huge_pages': 'node:0,size:2048,count:1'},
        'libvirt': {'rx_queue_size': '300', 'cpu_model': 'Haswell',
                    'cpu_mode': 'custom'},
        'Libvirt': {'images_type': ['lvm']},
        'nosuchgroup': {'x': '1'},
    })


def problem(answer, section, option):
    [found] = [p for p in answer['problems']
               if (p['section'], p['option']) == (section, option)]
    return found


def test_the_nova_version_is_named(answer):
    major = int(answer['nova'].split('.')[0])
    assert major >= 29


def test_an_unknown_option_gets_the_closest_name(answer):
    found = problem(answer, 'compute', 'cpu_dedicated_sett')
    assert found['reason'] == 'Nova has no such option'
    assert found['fix'].startswith('did you mean cpu_dedicated_set? ')
    assert nova_check.REFERENCE in found['fix']


def test_nova_types_and_parsers_reject_values(answer):
    assert problem(answer, 'libvirt', 'rx_queue_size')['reason'].startswith(
        "Nova rejects '300': ")
    assert problem(answer, 'compute', 'cpu_shared_set')['reason'] == (
        "Nova rejects it: Invalid range expression '0-'")


def test_lists_and_single_values(answer):
    assert problem(answer, 'DEFAULT', 'reserved_huge_pages')['reason'] == (
        'Nova reads this option as a list (one line per value)')
    # section names fold as oslo.config folds them
    assert problem(answer, 'Libvirt', 'images_type')['reason'] == (
        'Nova reads one value for this option, not a list')


def test_good_values_pass_and_notices_name_the_rest(answer):
    checked = {(p['section'], p['option']) for p in answer['problems']}
    assert ('compute', 'cpu_dedicated_set') not in checked
    assert ('libvirt', 'cpu_mode') not in checked
    assert len(answer['problems']) == 5
    assert answer['notices'] == [
        '[libvirt] cpu_model is deprecated in Nova; it is now [libvirt] '
        'cpu_models',
        '[nosuchgroup] is not a group Nova defines; x was not checked '
        'against Nova']


def test_secret_options_are_nova_own(answer):
    secrets = {tuple(pair) for pair in answer['secrets']}
    assert ('database', 'connection') in secrets
    assert ('libvirt', 'cpu_mode') not in secrets
    assert answer['secrets'] == sorted(answer['secrets'])


def test_reserved_huge_pages_one_bad_value_named():
    answer = run(paths.NOVA_PYTHON, {'DEFAULT': {'reserved_huge_pages': [
        'node:0,size:2048,count:1', 'node:1,size:2048,count:x']}})
    [found] = answer['problems']
    assert found['reason'].startswith(
        "Nova rejects it: 'node:1,size:2048,count:x': ")


def test_without_nova_the_answer_says_so():
    assert run(sys.executable, {'compute': {'x': '1'}}) == {
        'nova': None, 'problems': [], 'notices': [], 'secrets': []}


def test_group_key_folds_like_oslo_config():
    assert nova_check._group_key('DEFAULT') == 'DEFAULT'
    assert nova_check._group_key(None) == 'DEFAULT'
    assert nova_check._group_key('Libvirt') == 'libvirt'
