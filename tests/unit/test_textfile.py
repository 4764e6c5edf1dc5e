"""kvmtune.textfile: the text format read back by Prometheus's own parser
(prometheus_client), last success carried over, one writer per file."""

import os

from prometheus_client.parser import text_string_to_metric_families
import pytest

from kvmtune.errors import InputError
from kvmtune import textfile
from tests import locks


def _family(value=1.0, **labels):
    family = textfile.Family('kvmtune_demo_bytes', 'A demo.\nTwo lines.')
    family.add(value, **labels)
    return family


def samples(text):
    return [(s.name, s.labels, s.value)
            for f in text_string_to_metric_families(text) for s in f.samples]


def test_render_is_what_prometheus_reads():
    odd = 'a"b\\c\nd'
    text = textfile.render([_family(2.5, hostname=odd, x='1'),
                            textfile.Family('kvmtune_empty', 'none'),
                            _family(1700000000.123)])
    assert samples(text) == [
        ('kvmtune_demo_bytes', {'hostname': odd, 'x': '1'}, 2.5),
        ('kvmtune_demo_bytes', {}, 1700000000.123)]
    # HELP folded to one line; our parser reads what prometheus_client does
    assert '# HELP kvmtune_demo_bytes A demo. Two lines.\n' in text
    assert [(n, dict(l), v) for n, l, v in textfile.parse(text)] == \
        samples(text)
    assert textfile.render([_family(float('nan'))]).endswith(' NaN\n')


def _write(path, success, now, command='verify'):
    textfile.write(str(path), command, [_family(hostname='h1')],
                   success, now=now)
    return {(n, tuple(sorted(l.items()))): v
            for n, l, v in samples(path.read_text())}


def test_the_last_success_is_carried_over_a_failed_run(tmp_path):
    path = tmp_path / 'kvmtune_verify.prom'
    key = (('command', 'verify'), ('hostname', 'h1'))
    found = _write(path, {'h1': False}, 10.0)
    assert found[textfile.LAST_RUN, key] == 10.0
    assert found[textfile.LAST_SUCCESS, key] == 0       # never
    found = _write(path, {'h1': True}, 20.0)
    assert found[textfile.LAST_SUCCESS, key] == 20.0
    found = _write(path, {'h1': False}, 30.0)
    assert found[textfile.LAST_RUN, key] == 30.0
    assert found[textfile.LAST_SUCCESS, key] == 20.0    # kept
    assert os.listdir(tmp_path) == ['kvmtune_verify.prom']


def test_a_cloud_wide_command_has_no_hostname(tmp_path):
    path = tmp_path / 'kvmtune_capacity.prom'
    found = _write(path, {'': True}, 5.0, command='capacity')
    assert found[textfile.LAST_SUCCESS, (('command', 'capacity'),)] == 5.0


@pytest.mark.parametrize('old, words', [
    ('kvmtune_last_run_timestamp_seconds{command="capacity"} 1\n',
     'kvmtune capacity\'s file'),
    ('kvmtune_capacity_last_run_timestamp_seconds 1\n',
     'kvmtune capacity\'s file'),
    ('smartmon_device_smart_healthy{disk="/dev/sda"} 1\n',
     'not written by kvmtune'),
])
def test_another_writers_file_is_refused_and_kept(tmp_path, old, words):
    path = tmp_path / 'x.prom'
    path.write_text(old)
    with pytest.raises(InputError, match=words) as caught:
        _write(path, {'h1': True}, 1.0)
    assert '\n' not in caught.value.line()
    assert path.read_text() == old


def test_a_file_of_the_previous_release_is_taken_over(tmp_path):
    path = tmp_path / 'kvmtune_verify.prom'
    path.write_text('kvmtune_verify_last_run_timestamp_seconds{host="h1"} '
                    '1\n# only a comment would do too\n')
    _write(path, {'h1': True}, 2.0)
    assert 'kvmtune_demo_bytes' in path.read_text()


@pytest.mark.parametrize('name, words', [
    ('x.txt', 'reads only \\*.prom'),
    ('missing/x.prom', 'does not exist'),
])
def test_a_path_the_collector_cannot_use_is_one_line(tmp_path, name,
                                                     words):
    with pytest.raises(InputError, match=words) as caught:
        _write(tmp_path / name, {'h1': True}, 1.0)
    assert '\n' not in caught.value.line()
    assert os.listdir(tmp_path) == []


def test_a_second_writer_holding_the_file_is_refused(tmp_path):
    path = tmp_path / 'kvmtune_verify.prom'
    _write(path, {'h1': True}, 1.0)
    before = path.read_text()
    with locks.held(path):
        with pytest.raises(InputError, match='another program is writing'):
            _write(path, {'h1': True}, 2.0)
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ['kvmtune_verify.prom']
