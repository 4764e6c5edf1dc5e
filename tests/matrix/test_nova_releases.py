"""Every shipped profile's plan on every real capture, checked by each
supported Nova release's own code (tests/novamatrix/check.py in that
release's venv: its oslo.config option registration, its start-up parsers,
its scheduler filters and its extra-spec validators), and the release
table kvmtune plans from compared with what each release says.

The venvs are made when missing (tests/novamatrix: /var/cache/kvmtune/
nova-<N>, once per machine) and reused after; the figures land in the
terminal summary (tests/matrix/conftest.py).
"""

import time

import pytest

from kvmtune import nova_releases
from tests.matrix import conftest
from tests import novamatrix
from tests.novamatrix import run

MAJORS = sorted(novamatrix.RELEASES)
STARTED = time.monotonic()


@pytest.fixture(scope='module')
def venvs():
    started = time.monotonic()
    built = novamatrix.build_all(MAJORS, say=lambda line: None)
    for major, got in built.items():
        state = 'reused, built in' if got['reused'] else 'installed in'
        conftest.FIGURES[f'nova-{major} ({got["nova"]}) venv'] = \
            f'{state} {got["seconds"]} s'
    conftest.FIGURES['venvs ready after'] = \
        f'{time.monotonic() - started:.1f} s'
    return built


@pytest.fixture(scope='module')
def all_facts():
    return run.facts_of()


@pytest.fixture(scope='module')
def checked(venvs, all_facts):
    """{major: (results, description)}: one run of each release's Nova
    checks the plans and describes the release."""
    answers = {}
    for major in MAJORS:
        started = time.monotonic()
        answers[major] = run.check_release(major, all_facts)
        conftest.RESULTS[major] = answers[major][0]
        conftest.FIGURES[f'nova-{major} check'] = \
            f'{time.monotonic() - started:.1f} s'
    conftest.FIGURES['matrix (venvs, facts, checks)'] = \
        f'{time.monotonic() - STARTED:.1f} s'
    return answers


@pytest.fixture(scope='module')
def descriptions(checked):
    return {major: got[1] for major, got in checked.items()}


def test_the_matrix_covers_the_supported_releases():
    assert {29, 31, 33, 34} <= set(MAJORS)
    assert MAJORS == nova_releases.known()
    assert len(run.real_captures()) >= 21
    assert len(run.shipped_profiles()) >= 8


@pytest.mark.parametrize('major', MAJORS)
def test_each_venv_holds_its_release(venvs, descriptions, major):
    assert descriptions[major]['nova'] == novamatrix.RELEASES[major][0]
    assert novamatrix.ready(major)


def test_the_release_table_is_what_each_release_says(descriptions):
    # kvmtune/data/nova_releases.yaml, rewritten by tools/nova-matrix
    # --write-table when a release changes.
    assert run.table(descriptions) == nova_releases.table()


@pytest.mark.parametrize('major', MAJORS)
def test_profiles_on_real_captures(checked, all_facts, descriptions, major):
    results = checked[major][0]
    assert set(results) == set(run.shipped_profiles())
    failed = {name: got['problems'][:3] for name, got in results.items()
              if got['status'] == 'failed'}
    assert not failed, failed
    for name, got in results.items():
        if got['status'] == 'ok':
            assert got['plans'] == len(all_facts)
        else:
            assert f'Nova {major}' in got['reason'], got
    # No deprecated option is planned where the release has a
    # non-deprecated equivalent (Nova's own deprecated_opts say which).
    options = descriptions[major]['options']
    for name, got in results.items():
        for line in got['deprecated']:
            where = line.split(': ', 1)[1].split(':', 1)[0]
            section, option = where.lstrip('[').split('] ')
            info = options[f'{section}.{option}']
            assert info['exists'] and not info['replaced_by'], line
            # ... and the plan says so in a note.
            assert any(where in note and 'deprecated' in note
                       for note in got['notes']), (name, line)


@pytest.mark.parametrize('major', MAJORS)
def test_each_release_refuses_what_it_does_not_have(venvs, major):
    # The checker is not a rubber stamp: each release's own code names a
    # missing option, a value outside its choices, a CPU set its parser
    # rejects, an unknown filter and an extra spec its validators refuse.
    answer = run.ask(major, {'plans': [{
        'id': 'bad',
        'nova_conf': {
            'libvirt': {'rx_queue_size': '100'},
            'workarounds': {'no_such_option': 'true'},
            'compute': {'cpu_dedicated_set': '3-1'},
            'filter_scheduler': {'enabled_filters': 'NoSuchFilter'}},
        'extra_specs': {'hw:cpu_policy': 'pinned',
                        'hw:no_such_spec': '1'}}]})
    problems = answer['plans']['bad']['problems']
    assert answer['nova'] == novamatrix.RELEASES[major][0]
    for words in ('[libvirt] rx_queue_size', '[workarounds] '
                  'no_such_option: no such option', 'get_cpu_dedicated_set',
                  'no filter NoSuchFilter', 'extra spec hw:cpu_policy=pinned',
                  'extra spec hw:no_such_spec'):
        assert any(words in problem for problem in problems), \
            (words, problems)
