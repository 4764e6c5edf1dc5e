"""The disk_io tuner: the libvirt image backend and cache modes it sets,
only what the profile gives, and its parameters checked."""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.tuners import base
from kvmtune.tuning.tuners import disk_io


def test_disk_io_sets_only_what_is_given():
    assert disk_io.DiskIo({}, {}).nova_conf() == {
        ('libvirt', 'disk_cachemodes'): 'file=none,block=none'}
    tuned = disk_io.DiskIo({'images_type': 'lvm',
                            'images_volume_group': 'nova',
                            'use_cow_images': False,
                            'preallocate_images': 'space'}, {})
    assert tuned.nova_conf() == {
        ('libvirt', 'images_type'): 'lvm',
        ('libvirt', 'images_volume_group'): 'nova',
        ('libvirt', 'disk_cachemodes'): 'file=none,block=none',
        ('DEFAULT', 'use_cow_images'): 'false',
        ('DEFAULT', 'preallocate_images'): 'space'}
    assert any('hw_disk_bus' in note for note in tuned.notes())


def test_disk_cache_modes_check():
    (check,) = disk_io.DiskIo({}, {}).checks()
    assert check.status == base.PASS
    assert 'bypassed (O_DIRECT) for block, file disks' in check.message
    (check,) = disk_io.DiskIo({'cache_modes': ['file=unsafe',
                                               'block=writeback']},
                              {}).checks()
    assert check.status == base.WARN and 'file disks' in check.message
    assert disk_io.DiskIo({'cache_modes': []}, {}).checks() == []


def test_disk_io_bad_params():
    with pytest.raises(InputError) as err:
        disk_io.DiskIo.parse_params({'images_type': 'lvm'}, 'p.yaml')
    assert err.value.key == 'disk_io.params.images_volume_group'
    with pytest.raises(InputError) as err:
        disk_io.DiskIo.parse_params({'cache_modes': ['file=fast']})
    assert "'file=fast'" in err.value.line()
    with pytest.raises(InputError, match="'vmdk' is not valid"):
        disk_io.DiskIo.parse_params({'images_type': 'vmdk'})
