"""kvmtune.image.build: what makes an image up to date (the fingerprint),
the publish step a reader never sees half done, one build at a time, and
the fio version taken from the fetched packages. The full build (apt,
mtools, syslinux, the guest booting) is tests/functional/
test_image_bench.py's."""

import fcntl
import json
import os

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.image import build

DEBS = ['/c/fio_3.33-3_amd64.deb', '/c/busybox-static_1%3a1.35.0_amd64.deb']


def test_fingerprint_follows_what_goes_into_the_image():
    first = build._fingerprint(DEBS, with_net=False, static_fio=False)
    assert first == build._fingerprint(DEBS, False, False)
    # where the cache is does not matter, the package files do
    assert first == build._fingerprint(
        ['/elsewhere/' + os.path.basename(d) for d in DEBS], False, False)
    others = {build._fingerprint(DEBS[:1], False, False),
              build._fingerprint(DEBS + ['/c/x_1_all.deb'], False, False),
              build._fingerprint(DEBS, True, False),
              build._fingerprint(DEBS, False, True)}
    assert first not in others and len(others) == 4


def test_fio_version_from_the_package_file_name():
    assert build._fio_version(DEBS) == '3.33-3'
    assert build._fio_version(['/c/fio_1%3a3.35-1_amd64.deb']) == '1:3.35-1'
    with pytest.raises(KvmtuneError, match='no fio package'):
        build._fio_version(DEBS[1:])


def make(names, text='new'):
    def run(work):
        for name in names:
            with open(os.path.join(work, name), 'w') as f:
                f.write(text)
        return {'sizes': {name: len(text) for name in names}}
    return run


def test_publish_moves_the_outputs_then_writes_the_manifest(tmp_path):
    out = str(tmp_path)
    stale = tmp_path / '.build-killed'
    stale.mkdir()
    (stale / 'half.raw').write_text('x')
    manifest_path = str(tmp_path / 'kvmtune-bench.json')
    manifest = build.publish(out, ['a.raw', 'b.qcow2'], manifest_path,
                             make(['a.raw', 'b.qcow2']),
                             {'fingerprint': 'f1'})
    assert manifest == {'sizes': {'a.raw': 3, 'b.qcow2': 3},
                        'fingerprint': 'f1', 'changed': True}
    with open(manifest_path) as f:
        assert json.load(f) == {'sizes': {'a.raw': 3, 'b.qcow2': 3},
                                'fingerprint': 'f1'}
    # the killed build's work directory and this one's are gone
    assert sorted(os.listdir(out)) == ['a.raw', 'b.qcow2',
                                       'kvmtune-bench.json']
    assert build._read_manifest(manifest_path)['fingerprint'] == 'f1'


def test_a_failed_build_leaves_the_old_image(tmp_path):
    out = str(tmp_path)
    manifest_path = str(tmp_path / 'kvmtune-bench.json')
    build.publish(out, ['a.raw'], manifest_path, make(['a.raw'], 'old'),
                  {'fingerprint': 'old'})

    def fail(work):
        make(['a.raw'])(work)
        raise KvmtuneError('mcopy failed')
    with pytest.raises(KvmtuneError, match='mcopy failed'):
        build.publish(out, ['a.raw'], manifest_path, fail,
                      {'fingerprint': 'new'})
    assert (tmp_path / 'a.raw').read_text() == 'old'
    assert build._read_manifest(manifest_path)['fingerprint'] == 'old'
    assert sorted(os.listdir(out)) == ['a.raw', 'kvmtune-bench.json']


def test_an_unreadable_manifest_is_no_manifest(tmp_path):
    path = tmp_path / 'kvmtune-bench.json'
    assert build._read_manifest(str(path)) == {}
    path.write_text('{"fingerprint": ')
    assert build._read_manifest(str(path)) == {}


def test_one_build_at_a_time(tmp_path):
    with open(tmp_path / '.build.lock', 'w') as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(KvmtuneError) as err:
            build.build(output=str(tmp_path), log=lambda line: None)
    assert err.value.line() == (
        f'{tmp_path}: another image build is running (fix: wait for it to '
        'finish)')
    assert os.listdir(tmp_path) == ['.build.lock']
