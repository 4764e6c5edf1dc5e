"""Profiles: the shipped ones, the search path and every bad input."""

import os
import re

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning import profiles
from tests import hang
from tests import paths
from tests.profilefiles import GOOD
from tests.profilefiles import SHIPPED
from tests.profilefiles import write


def error_line(path):
    with pytest.raises(InputError, match=f'^{re.escape(path)}: ') as err:
        profiles.load_file(path)
    line = err.value.line()
    assert '\n' not in line
    return line


def test_shipped_profiles_load_and_cite_a_seed():
    found = profiles.available(profiles.search_dirs())
    assert sorted(found) == SHIPPED
    for name, path in found.items():
        profile = profiles.load_file(path)
        assert profile.name == name
        assert profile.description
        assert 'doc/sources.md [S' in profile.source
    baseline = profiles.load_file(found['baseline'])
    assert baseline.tuner_refs == []
    pinned = profiles.load_file(found['pinned-hugepages-ept'])
    assert [r.name for r in pinned.tuner_refs] == ['cpu_pinning',
                                                   'hugepages', 'ept']


def test_packaged_dir_is_the_checkout_one():
    expected = os.path.join(paths.REPO, 'kvmtune', 'data', 'profiles')
    assert os.path.samefile(profiles.packaged_dir(), expected)


def test_later_directory_wins(tmp_path):
    path = write(tmp_path, 'baseline.yaml', GOOD.replace(
        'test profile', 'site baseline'))
    found = profiles.available(profiles.search_dirs([str(tmp_path)]))
    assert found['baseline'] == path
    assert profiles.load('baseline', profiles.search_dirs(
        [str(tmp_path)])).description == 'site baseline'


def test_good_profile_and_to_dict(tmp_path):
    path = write(tmp_path, 'mine.yaml', GOOD)
    profile = profiles.load_file(path)
    assert profile.to_dict() == {
        'name': 'mine', 'description': 'test profile',
        'source': 'doc/sources.md [S4]',
        'tuners': [{'name': 'cpu_pinning',
                    'params': {'thread_policy': 'isolate'}},
                   {'name': 'ept'}]}
    assert profiles.load(path, []).name == 'mine'


def test_malformed_yaml_names_line_and_column(tmp_path):
    path = write(tmp_path, 'bad.yaml', """\
        description: x
        source: y
        tuners:
          - name: ept
           params: {}
        """)
    line = error_line(path)
    assert line.startswith(f'{path}: line 5, column 4: malformed YAML')


@pytest.mark.parametrize('body,expected', [
    ('- a\n- b\n', 'a profile is a mapping'),
    ('description: x\nsource: y\ntuners: [cpu_pining]\n',
     "tuners[0]: unknown tuner 'cpu_pining' (fix: known tuners: "
     "cpu_pinning, disk_io, ept, hugepages, nested, numa, vhost_net)"),
    ('description: x\nsource: y\ntuners:\n  - name: numa\n'
     '    params: {node: 2}\n',
     "numa.params: unknown parameter 'node' (fix: known parameters: nodes)"),
    ('description: x\nsource: y\ntuners:\n  - name: numa\n'
     '    params: {nodes: two}\n',
     "numa.params.nodes: 'two' is a string, expected an integer"),
    ('description: x\nsource: y\ntuners:\n  - name: hugepages\n'
     '    params: {page_size: 3M3}\n',
     "hugepages.params.page_size: '3M3' is not valid (for hw:mem_page_size)"
     " (fix: valid values: small, large, any"),
    ('description: x\nsource: y\ntuners:\n  - name: cpu_pinning\n'
     '    params: {policy: pinned}\n',
     "valid values: dedicated, shared, mixed"),
    ('description: x\nsource: y\ntuners: [ept, ept]\n',
     "tuner 'ept' is listed twice"),
    ('description: x\nsource: y\ntuners: ept\n', 'tuners must be a list'),
    ('description: x\nsource: y\ntuners:\n  - {name: ept, parms: {}}\n',
     "unknown key 'parms'"),
    ('description: x\nsource: y\nextra: 1\n', "unknown key 'extra'"),
    ('source: y\ntuners: []\n', 'description must be a non-empty string'),
    ('name: other\ndescription: x\nsource: y\n',
     "name 'other' differs from the file name"),
])
def test_bad_profiles_are_one_line_errors(tmp_path, body, expected):
    path = str(tmp_path / 'p.yaml')
    with open(path, 'w') as f:
        f.write(body)
    assert expected in error_line(path)


def test_unknown_profile_lists_available():
    with pytest.raises(InputError,
                       match=r"unknown profile 'pinned' \(fix: "
                             r"available: ") as err:
        profiles.load('pinned', profiles.search_dirs())
    assert err.value.line() == (
        "unknown profile 'pinned' (fix: available: " + ', '.join(SHIPPED) +
        ')')


def test_missing_file_and_directory():
    with pytest.raises(InputError,
                       match=r'^/nonexistent/p\.yaml: no such file'):
        profiles.load_file('/nonexistent/p.yaml')
    with pytest.raises(InputError,
                       match='^/nonexistent-dir: cannot read the profile '
                             'directory'):
        profiles.available(['/nonexistent-dir'])


def test_config_sample_is_current(tmp_path):
    """etc/kvmtune/kvmtune.conf.sample is what oslo-config-generator writes
    (regenerate it with: tox -e genconfig)."""
    import subprocess
    import sys

    root = paths.REPO
    out = tmp_path / 'kvmtune.conf.sample'
    subprocess.run(
        [sys.executable, '-m', 'oslo_config.generator', '--config-file',
         'etc/kvmtune/kvmtune-config-generator.conf', '--output-file',
         str(out)], cwd=root, check=True)
    with open(os.path.join(root, 'etc', 'kvmtune',
                           'kvmtune.conf.sample')) as f:
        assert f.read() == out.read_text()
    assert '#profile_dirs =' in out.read_text()


# -- hostile profiles ---------------------------------------------------------

def test_a_second_tuners_key_is_an_error_not_a_silent_override(tmp_path):
    path = write(tmp_path, 'twice.yaml', """\
        description: x
        source: y
        tuners:
          - cpu_pinning
        tuners:
          - ept
        """)
    line = error_line(path)
    assert "duplicate key 'tuners'" in line and 'line 5' in line


@pytest.mark.parametrize('tuners, words', [
    ('{}', 'a mapping'),
    ('', 'missing or empty'),
    ('{cpu_pinning: {}}', 'a mapping'),
    ('ept', 'a str'),
])
def test_tuners_that_are_not_a_list(tmp_path, tuners, words):
    path = write(tmp_path, 'p.yaml', f"""\
        description: x
        source: y
        tuners: {tuners}
        """)
    line = error_line(path)
    assert 'tuners must be a list' in line and words in line


def test_missing_tuners_key(tmp_path):
    path = write(tmp_path, 'p.yaml', 'description: x\nsource: y\n')
    assert "tuners: []" in error_line(path)


@pytest.mark.parametrize('params', ['[]', '', '{}', 'null', '[a, b]'])
def test_empty_or_list_params(tmp_path, params):
    path = write(tmp_path, 'p.yaml', f"""\
        description: x
        source: y
        tuners:
          - name: cpu_pinning
            params: {params}
        """)
    line = error_line(path)
    assert 'tuners[0].params' in line


def test_empty_tuner_map(tmp_path):
    path = write(tmp_path, 'p.yaml', """\
        description: x
        source: y
        tuners:
          - {}
        """)
    assert 'missing tuner name' in error_line(path)


@pytest.mark.parametrize('text, words', [
    (b'description: caf\xe9\nsource: y\ntuners: []\n', 'not UTF-8'),
    (b'description: x\nsource: y\ntuners: ' + b'[' * 5000 + b'\n',
     'nested'),
    (b'description: x\nsource: y\ntuners: []\n1: x\n', 'not a string'),
    (b'description: x\nsource: y\ntuners: []\n? [a]\n: x\n',
     'not a string'),
    (b'description: x\nsource: y\ntuners: []\nyes: x\n', 'not a string'),
])
def test_yaml_that_used_to_be_an_internal_error(tmp_path, text, words):
    path = tmp_path / 'p.yaml'
    path.write_bytes(text)
    assert words in error_line(str(path))


def test_profile_dir_entry_that_is_a_directory_or_fifo(tmp_path):
    (tmp_path / 'dir.yaml').mkdir()
    fifo = tmp_path / 'fifo.yaml'
    os.mkfifo(fifo)
    write(tmp_path, 'mine.yaml', GOOD)
    found = hang.call(lambda: profiles.available([str(tmp_path)]),
                      release=[fifo])
    assert sorted(found) == ['mine']
    with pytest.raises(InputError, match='directory'):
        profiles.load_file(str(tmp_path / 'dir.yaml'))
    with pytest.raises(InputError, match='FIFO'):
        hang.call(lambda: profiles.load_file(str(fifo)), release=[fifo])
