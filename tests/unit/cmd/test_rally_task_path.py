"""``kvmtune rally task-path``: where an installed Rally task file is, or
all of them with their paths."""

import os

from kvmtune import cli


def test_rally_task_path(capsys):
    assert cli.main(['rally', 'task-path', 'disk-scaling']) == 0
    path = capsys.readouterr().out.strip()
    assert path.endswith('tasks/disk-scaling.yaml')
    with open(path) as f:
        assert 'KvmTune.disk_scaling' in f.read()
    assert cli.main(['rally', 'task-path', 'nope']) == 2
    err = capsys.readouterr().err
    assert "no Rally task named 'nope'" in err and 'disk-scaling' in err


def test_a_file_name_is_taken_too(capsys):
    assert cli.main(['rally', 'task-path', 'network-scaling.yaml']) == 0
    path = capsys.readouterr().out.strip()
    assert os.path.basename(path) == 'network-scaling.yaml'
    assert os.path.isfile(path)


def test_without_a_name_every_task_is_listed_with_its_path(capsys):
    assert cli.main(['rally', 'task-path']) == 0
    listed = dict(line.split('  ') for line in
                  capsys.readouterr().out.splitlines())
    assert sorted(listed) == ['disk-scaling', 'network-scaling']
    for name, path in listed.items():
        assert os.path.basename(path) == name + '.yaml'
        assert os.path.isfile(path)
