"""kvmtune.image.modules: the guest's kernel modules in load order, from
each module's .modinfo ELF section (the Debian kernel ships no
modules.dep). The modules here are minimal ELF64 relocatable files with
the sections a real .ko has for this purpose (.modinfo, .shstrtab)."""

import struct

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.image import modules


def elf_module(modinfo, extra_section=b'.text'):
    """A 64-bit little-endian ELF with a null section, ``extra_section``,
    .modinfo (NUL-separated key=value) and .shstrtab."""
    names = b'\0' + extra_section + b'\0.modinfo\0.shstrtab\0'
    text_name = 1
    modinfo_name = text_name + len(extra_section) + 1
    shstrtab_name = modinfo_name + len(b'.modinfo') + 1
    body = b'\0'.join(f'{k}={v}'.encode() for k, v in modinfo) + b'\0'
    data = bytearray(64)
    text_off = len(data)
    data += b'\x90' * 8
    modinfo_off = len(data)
    data += body
    names_off = len(data)
    data += names
    data += b'\0' * (-len(data) % 8)
    shoff = len(data)

    def header(name, kind, off, size):
        return struct.pack('<IIQQQQIIQQ', name, kind, 0, 0, off, size,
                           0, 0, 1, 0)
    data += header(0, 0, 0, 0)
    data += header(text_name, 1, text_off, 8)
    data += header(modinfo_name, 1, modinfo_off, len(body))
    data += header(shstrtab_name, 3, names_off, len(names))
    data[:4] = b'\x7fELF'
    data[4] = 2         # ELFCLASS64
    data[5] = 1         # little-endian
    struct.pack_into('<Q', data, 0x28, shoff)
    struct.pack_into('<HHH', data, 0x3A, 64, 4, 3)
    return bytes(data)


def tree(tmp_path, mods):
    """{name: depends} -> .ko files under kernel/<dir>/."""
    for name, depends in mods.items():
        path = tmp_path / 'kernel' / 'drivers' / (name + '.ko')
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(elf_module([('license', 'GPL'),
                                     ('depends', depends),
                                     ('name', name)]))
    return str(tmp_path)


def test_modinfo_reads_every_key(tmp_path):
    path = tmp_path / 'm.ko'
    path.write_bytes(elf_module([('alias', 'virtio:d00000001v*'),
                                 ('alias', 'pci:v00001AF4d*'),
                                 ('depends', 'virtio,virtio_ring'),
                                 ('vermagic', '6.1.0 SMP mod_unload')]))
    assert modules.modinfo(str(path)) == {
        'alias': ['virtio:d00000001v*', 'pci:v00001AF4d*'],
        'depends': ['virtio,virtio_ring'],
        'vermagic': ['6.1.0 SMP mod_unload']}


def test_not_a_module(tmp_path):
    path = tmp_path / 'm.ko'
    path.write_bytes(b'#!/bin/sh\n' * 10)
    with pytest.raises(KvmtuneError, match='not a 64-bit ELF kernel module'):
        modules.modinfo(str(path))
    data = bytearray(elf_module([]))
    data[4] = 1         # ELFCLASS32
    path.write_bytes(bytes(data))
    with pytest.raises(KvmtuneError, match='not a 64-bit ELF'):
        modules.modinfo(str(path))


def test_a_module_without_modinfo(tmp_path):
    path = tmp_path / 'm.ko'
    data = elf_module([('depends', '')])
    path.write_bytes(data.replace(b'.modinfo\0', b'.notinfo\0'))
    with pytest.raises(KvmtuneError, match='no .modinfo section') as err:
        modules.modinfo(str(path))
    assert str(path) in err.value.line()


def test_dependencies_come_first_once(tmp_path):
    root = tree(tmp_path, {'virtio': '', 'virtio_ring': 'virtio',
                           'virtio_pci': 'virtio,virtio_ring',
                           'virtio_blk': 'virtio,virtio_ring',
                           'unused': ''})
    order = [p.rsplit('/', 1)[1] for p in modules.load_order(
        root, ['virtio_pci', 'virtio_blk'])]
    assert order == ['virtio.ko', 'virtio_ring.ko', 'virtio_pci.ko',
                     'virtio_blk.ko']


def test_builtin_modules_and_dashes(tmp_path):
    root = tree(tmp_path, {'nls_iso8859-1': 'nls_base', 'nls_base': ''})
    assert [p.rsplit('/', 1)[1] for p in modules.load_order(
        root, ['nls_iso8859-1'], builtin=['nls-base'])] == [
        'nls_iso8859-1.ko']


def test_a_missing_module_and_a_cycle(tmp_path):
    root = tree(tmp_path, {'a': 'b', 'b': 'a', 'c': 'gone'})
    with pytest.raises(KvmtuneError, match='kernel module gone not found'):
        modules.load_order(root, ['c'])
    with pytest.raises(KvmtuneError, match='module dependency cycle at a'):
        modules.load_order(root, ['a'])


def test_builtin_names(tmp_path):
    assert modules.builtin_names(str(tmp_path)) == set()
    (tmp_path / 'modules.builtin').write_text(
        'kernel/drivers/virtio/virtio.ko\n'
        'kernel/fs/nls/nls_base.ko\n\nnot-a-module.txt\n')
    assert modules.builtin_names(str(tmp_path)) == {'virtio', 'nls_base'}
