"""kvmtune.devstack.changes: changes.json, the record of what the DevStack
plugin changed, rewritten after each change and gone when nothing is left
to undo."""

import json
import os
import stat

import pytest

from kvmtune.devstack import changes as changes_mod
from kvmtune.errors import InputError


def test_changes_file_with_wrong_schema_is_one_line_error(tmp_path):
    (tmp_path / 'changes.json').write_text('{"schema": 7}')
    with pytest.raises(InputError, match='schema: schema 7 is not 1') as err:
        changes_mod.Changes(str(tmp_path))
    assert "schema 7 is not 1" in err.value.line()


def test_a_new_state_dir_has_an_empty_record(tmp_path):
    changes = changes_mod.Changes(str(tmp_path / 'state'))
    assert changes.data == {'schema': changes_mod.SCHEMA}
    assert changes.path == str(tmp_path / 'state' / 'changes.json')


def test_entries_saved_read_back_and_private(tmp_path):
    changes = changes_mod.Changes(str(tmp_path / 'state'))
    changes.entries('files').append({'path': '/etc/x', 'before': None,
                                     'after': 'y\n'})
    changes.entries('flavors')      # an empty kind is not written
    changes.save()
    path = tmp_path / 'state' / 'changes.json'
    assert json.loads(path.read_text()) == {
        'schema': 1, 'files': [{'path': '/etc/x', 'before': None,
                                'after': 'y\n'}]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = changes_mod.Changes(str(tmp_path / 'state'))
    assert again.find('files', path='/etc/x')['after'] == 'y\n'
    assert again.find('files', path='/etc/y') is None
    assert again.find('traits') is None


def test_dropping_the_last_entry_removes_the_record(tmp_path):
    changes = changes_mod.Changes(str(tmp_path))
    first = {'path': 'a'}
    changes.entries('created').extend([first, {'path': 'b'}])
    changes.save()
    changes.drop('created', first)
    assert changes.data['created'] == [{'path': 'b'}]
    changes.drop('created', {'path': 'b'})
    assert 'created' not in changes.data
    changes.save()
    assert not (tmp_path / 'changes.json').exists()
    changes.entries('images').append({'id': '1'})
    changes.drop('images')
    changes.save()
    assert os.listdir(tmp_path) == []


def test_a_record_that_is_not_json_is_one_line(tmp_path):
    (tmp_path / 'changes.json').write_text('{"schema": 1,')
    with pytest.raises(InputError, match='not valid JSON') as err:
        changes_mod.Changes(str(tmp_path))
    assert '\n' not in err.value.line() and err.value.fix
