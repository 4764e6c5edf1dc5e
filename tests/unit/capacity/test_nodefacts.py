"""The nodes' own files capacity reads: HOST.json facts and HOST.conf
nova.conf files in one directory, each by its host name."""

import os
import shutil

import pytest

from kvmtune.capacity import nodefacts
from kvmtune.errors import InputError
from tests import paths

VM_JSON = os.path.join(paths.FIXTURES, 'capacity', 'vm.json')


def test_facts_and_dedicated_cpus_by_host_name(tmp_path):
    shutil.copy(VM_JSON, tmp_path / 'vm.json')
    (tmp_path / 'vm.conf').write_text(
        '[DEFAULT]\ndebug = true\n[compute]\ncpu_dedicated_set = 1-3,^2\n')
    (tmp_path / 'other.conf').write_text('[DEFAULT]\ndebug = true\n')
    (tmp_path / 'notes.txt').write_text('not read')
    by_host, dedicated = nodefacts.read_dir(str(tmp_path))
    assert list(by_host) == ['vm']
    assert by_host['vm']['source'] == str(tmp_path / 'vm.json')
    assert dedicated == {'vm': {1, 3}, 'other': set()}


def test_a_bad_cpu_list_names_the_file_and_key(tmp_path):
    (tmp_path / 'vm.conf').write_text('[compute]\ncpu_dedicated_set = x\n')
    with pytest.raises(InputError) as exc:
        nodefacts.dedicated_set(str(tmp_path / 'vm.conf'))
    assert exc.value.key == '[compute] cpu_dedicated_set'
    assert exc.value.source == str(tmp_path / 'vm.conf')


def test_no_directory_is_one_line(tmp_path):
    with pytest.raises(InputError) as exc:
        nodefacts.read_dir(str(tmp_path / 'nope'))
    assert exc.value.key == '--facts-dir'


def test_a_text_already_read_is_not_read_again(tmp_path):
    # kvmtune rollout --check has each host's nova.conf in memory; the
    # path only names it (here: no such file)
    path = str(tmp_path / 'gone.conf')
    assert nodefacts.dedicated_set(
        path, '[compute]\ncpu_dedicated_set = 4-7,^5\n') == {4, 6, 7}
    with pytest.raises(InputError) as exc:
        nodefacts.dedicated_set(path, '[compute]\ncpu_dedicated_set = x\n')
    assert (exc.value.source, exc.value.key) == (
        path, '[compute] cpu_dedicated_set')
