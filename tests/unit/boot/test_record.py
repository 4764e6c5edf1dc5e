"""kvmtune.boot.record: the reboot-required record and its reader, on a
copy of a real capture (tests/fixtures/hosts)."""

import json
import os
import shutil

import pytest

from kvmtune.boot import record
from kvmtune.errors import InputError
from tests import paths

CAPTURE = os.path.join(paths.HOSTS, 'real', '20em64t-hybrid-1p6c2t+2ca4co1t')
REASONS = {'cmdline': ['isolcpus=2-11'],
           'hugepages': ['hugepagesz=2M', 'hugepages=512'],
           'module': []}


@pytest.fixture
def root(tmp_path):
    tree = tmp_path / 'host'
    shutil.copytree(CAPTURE, tree, symlinks=True)
    return tree


def _boot(root, boot_id):
    path = root / record.BOOT_ID
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(boot_id + '\n')


def test_written_record_is_the_contract_and_pending_until_a_reboot(root):
    _boot(root, '0b4e6f2a-1111-4c33-9d5e-7f0a2b3c4d5e')
    written = record.write(str(root), 'pinned-hugepages', REASONS)
    assert written == str(root / 'var/lib/kvmtune/reboot-required.json')
    assert json.loads(open(written).read()) == {
        'schema': 1, 'profile': 'pinned-hugepages',
        'boot_id': '0b4e6f2a-1111-4c33-9d5e-7f0a2b3c4d5e',
        'reasons': REASONS}
    # only the reasons with something pending, in REASONS order
    assert record.pending(str(root)) == {
        'cmdline': ['isolcpus=2-11'],
        'hugepages': ['hugepagesz=2M', 'hugepages=512']}
    assert list(record.pending(str(root))) == ['cmdline', 'hugepages']
    _boot(root, '9f8e7d6c-2222-4b44-8a6f-5e4d3c2b1a09')   # rebooted
    assert record.pending(str(root)) == {}
    assert record.read(str(root))['boot_id'].startswith('0b4e6f2a')


def test_a_tree_without_a_boot_id_records_null_and_stays_pending(root):
    assert not (root / record.BOOT_ID).exists()
    record.write(str(root), 'cpu-pinning', {'cmdline': ['isolcpus=4-7']})
    assert record.read(str(root))['boot_id'] is None
    assert record.pending(str(root)) == {'cmdline': ['isolcpus=4-7']}


def test_remove_ends_pending_and_says_whether_there_was_one(root):
    record.write(str(root), 'cpu-pinning', {'module': ['kvm_intel ept=1']})
    assert record.remove(str(root)) is True
    assert record.pending(str(root)) == {}
    assert record.read(str(root)) is None
    assert record.remove(str(root)) is False


def test_rewrite_leaves_no_temporary_file(root):
    record.write(str(root), 'a', {'cmdline': ['isolcpus=1']})
    record.write(str(root), 'b', {'cmdline': ['isolcpus=2']})
    assert os.listdir(root / 'var/lib/kvmtune') == ['reboot-required.json']
    assert record.read(str(root))['profile'] == 'b'


def test_unknown_reason_is_refused_and_nothing_written(root):
    with pytest.raises(InputError, match="unknown reboot reason 'kernel'"):
        record.write(str(root), 'p', {'kernel': ['x']})
    assert not (root / record.PATH).exists()


@pytest.mark.parametrize('content, key', [
    ('[]', 'schema'),
    ('{"schema": 2}', 'schema'),
    ('{"schema": 1, "profile": 3}', 'profile'),
    ('{"schema": 1, "profile": "p", "boot_id": 5, "reasons": {}}',
     'boot_id'),
    ('{"schema": 1, "profile": "p", "boot_id": null, "reasons": []}',
     'reasons'),
    ('{"schema": 1, "profile": "p", "boot_id": null, '
     '"reasons": {"cmdline": "isolcpus=1"}}', 'reasons.cmdline'),
])
def test_a_record_of_another_shape_is_one_line_naming_the_key(
        root, content, key):
    target = root / record.PATH
    target.parent.mkdir(parents=True)
    target.write_text(content)
    with pytest.raises(InputError) as err:
        record.pending(str(root))
    assert err.value.key == key
    assert '\n' not in err.value.line()
