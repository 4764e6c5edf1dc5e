"""``kvmtune host inspect`` under hostile input."""

import json
import os
import stat

import pytest

from kvmtune import cli
from kvmtune import facts as host_facts
from tests import devices
from tests import hang
from tests import paths
from tests.unit import fulldisk

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')


def _one_line_exit_2(capsys, argv, *words, release=()):
    assert hang.call(lambda: cli.main(argv), release=release) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1, err
    for word in words:
        assert word in err, err
    return err


def test_output_to_a_null_device_leaves_the_device(tmp_path, capsys):
    node = devices.char_device(tmp_path)
    before = os.lstat(node)
    _one_line_exit_2(capsys, ['host', 'inspect', '--root', INTEL,
                              '-o', node], 'character device')
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_output_to_a_fifo_is_refused(tmp_path, capsys):
    fifo = tmp_path / 'facts.json'
    os.mkfifo(fifo)
    _one_line_exit_2(capsys, ['host', 'inspect', '--root', INTEL,
                              '-o', str(fifo)], 'FIFO', release=[fifo])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _facts_file(tmp_path, text):
    path = tmp_path / 'facts.json'
    path.write_text(text)
    return str(path)


def _good_facts():
    return host_facts.gather(INTEL)


@pytest.mark.parametrize('mutate, words', [
    (lambda text: '[' * 100000 + ']' * 100000, 'nested'),
    (lambda text: '{"a":' * 200 + '1' + '}' * 200, 'nested'),
    (lambda text: text.replace('"schema": 1', '"schema": NaN', 1), 'NaN'),
    (lambda text: text.replace('"schema": 1', '"schema": 1e400', 1),
     '1e400'),
    (lambda text: text[:-1] + ', "schema": 1}', 'duplicate'),
])
def test_hostile_facts_file(tmp_path, capsys, mutate, words):
    text = json.dumps(_good_facts())
    assert '"schema": 1' in text
    path = _facts_file(tmp_path, mutate(text))
    _one_line_exit_2(capsys, ['host', 'inspect', '--facts', path], path,
                     words)


def test_facts_file_that_is_a_fifo(tmp_path, capsys):
    fifo = tmp_path / 'facts.json'
    os.mkfifo(fifo)
    _one_line_exit_2(capsys, ['plan', '--profile', 'baseline', '--facts',
                              str(fifo)], 'FIFO', release=[fifo])


def test_capture_record_that_is_a_fifo_does_not_hang(tmp_path, capsys):
    import shutil
    tree = tmp_path / 'host'
    shutil.copytree(INTEL, tree, symlinks=True)
    record = tree / host_facts.CAPTURE_FILE
    if record.exists():
        record.unlink()
    os.mkfifo(record)
    assert hang.call(lambda: cli.main(['host', 'inspect', '--root',
                                       str(tree)]), release=[record]) == 0


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('old', [{'facts.json': b'{"the": "old facts"}\n'},
                                 {}], ids=['over-old', 'new'])
def test_a_read_only_filesystem_keeps_the_old_facts_file(tmp_path, capsys,
                                                         old):
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        err = _one_line_exit_2(capsys, ['host', 'inspect', '--root', INTEL,
                                        '--format', 'json', '-o',
                                        str(ro / 'facts.json')])
        fulldisk.assert_one_line_readonly(err)
        fulldisk.assert_left_as_it_was(ro, old, filler=False)


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_the_old_facts_file(tmp_path, capsys):
    old = {'facts.json': b'{"the": "old facts"}\n'}
    with fulldisk.full_tmpfs(tmp_path / 'full', old) as full:
        err = _one_line_exit_2(capsys, ['host', 'inspect', '--root', INTEL,
                                        '--format', 'json', '-o',
                                        str(full / 'facts.json')])
        fulldisk.assert_one_line_full(err)
        fulldisk.assert_left_as_it_was(full, old)


@pytest.mark.parametrize('name, line', [
    # before: "1G pages (pdpe1gb) no", an x86 flag read on arm64
    ('128arm-2pa2n8cluster4co', 'aarch64, huge page sizes 64k, 2M, 32M, 1G'),
    ('20s390-2g6s4c', 's390x, huge page sizes 1M'),
    ('nvidia-dgx-gb10', 'aarch64, huge page sizes unknown'),
    ('x86_64-epyc_7451', 'x86_64, huge page sizes 2M, 1G'),
])
def test_the_table_names_the_architecture_and_its_page_sizes(
        name, line, capsys):
    root = os.path.join(paths.HOSTS, 'real', name)
    assert cli.main(['host', 'inspect', '--root', root]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2].endswith('; ' + line)
