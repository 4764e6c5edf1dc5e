"""The nova.conf editor against oslo.config's own parser.

Every edit is checked twice: the text around it stays byte for byte, and
oslo.config (the parser Nova uses) reads back exactly the values set.
"""

import os

from oslo_config import cfg
import pytest
import re

from kvmtune.tuning.novaconf import inifile
from tests import paths

FIXTURES = os.path.join(paths.FIXTURES, 'novaconf')
FIXTURE_NAMES = ('devstack.conf', 'duplicates.conf', 'multiline.conf')


def fixture_text(name):
    with open(os.path.join(FIXTURES, name), encoding='utf-8') as handle:
        return handle.read()


def oslo_sections(tmp_path, text):
    """What oslo.config's ConfigParser reads from ``text``."""
    path = tmp_path / 'oslo.conf'
    path.write_bytes(text.encode('utf-8'))
    sections = {}
    cfg.ConfigParser(str(path), sections).parse()
    return sections


def oslo_value(tmp_path, text, section, key):
    """The value Nova would get: oslo's last one, section name folded."""
    found = []
    for name, options in oslo_sections(tmp_path, text).items():
        if inifile.normalize_section(name) == \
                inifile.normalize_section(section):
            found += options.get(key, [])
    return found


def our_sections(ini):
    sections = {}
    for block in ini.blocks:
        options = sections.setdefault(block.section, {})
        for entry in block.entries:
            options.setdefault(entry.key, []).append(entry.value)
    return sections


@pytest.mark.parametrize('name', FIXTURE_NAMES)
def test_fixture_round_trips_and_parses_like_oslo(tmp_path, name):
    text = fixture_text(name)
    ini = inifile.IniFile(text)
    assert ini.text == text
    assert our_sections(ini) == oslo_sections(tmp_path, text)


@pytest.mark.parametrize('text', [
    '[DEFAULT]\r\ndebug = True\r\n\r\n[compute]\r\ncpu_shared_set = 0\r\n',
    '[DEFAULT]\ndebug = True',
    '',
    '\n\n# only comments\n; and more\n',
    '[libvirt]\nvirt_type=kvm   \n\t\n[compute]\n',
])
def test_text_round_trips_byte_for_byte(text):
    assert inifile.IniFile(text).text == text


def test_set_existing_option_changes_only_its_line(tmp_path):
    text = fixture_text('devstack.conf')
    ini = inifile.IniFile(text)
    assert ini.set('compute', 'cpu_shared_set', '0,20') is True
    before, after = text.splitlines(), ini.text.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after)
    assert changed == [('cpu_shared_set = 0-3', 'cpu_shared_set = 0,20')]
    assert oslo_value(tmp_path, ini.text, 'compute', 'cpu_shared_set') == \
        ['0,20']


def test_set_same_value_changes_nothing():
    text = fixture_text('devstack.conf')
    ini = inifile.IniFile(text)
    assert ini.set('libvirt', 'cpu_mode', 'host-passthrough') is False
    assert ini.set_multi('DEFAULT', 'absent_multi', []) is False
    assert ini.text == text


def test_quoted_value_equal_after_unquoting_is_left_alone():
    text = fixture_text('multiline.conf')
    ini = inifile.IniFile(text)
    assert ini.get('DEFAULT', 'my_ip') == '10.0.0.11'
    assert ini.set('DEFAULT', 'my_ip', '10.0.0.11') is False
    assert ini.text == text


def test_duplicate_single_option_every_occurrence_agrees(tmp_path):
    text = fixture_text('duplicates.conf')
    ini = inifile.IniFile(text)
    assert ini.get('compute', 'cpu_shared_set') == '0'   # last one wins
    ini.set('compute', 'cpu_shared_set', '0,1')
    ini.set('DEFAULT', 'reserved_host_memory_mb', '4096')
    assert ini.text.count('cpu_shared_set=0,1\n') == 2
    assert ini.text.count('reserved_host_memory_mb=4096\n') == 2
    assert len(ini.text.splitlines()) == len(text.splitlines())
    assert oslo_value(tmp_path, ini.text, 'compute', 'cpu_shared_set') == \
        ['0,1', '0,1']
    # The "[Compute]" header keeps its case.
    assert '\n[Compute]\n' in ini.text


def test_multi_option_replaced_where_the_first_was(tmp_path):
    text = fixture_text('duplicates.conf')
    ini = inifile.IniFile(text)
    pages = ['node:0,size:1GB,count:2', 'node:1,size:1GB,count:2']
    assert ini.set_multi('DEFAULT', 'reserved_huge_pages', pages) is True
    lines = ini.text.splitlines()
    first = lines.index('reserved_huge_pages=node:0,size:1GB,count:2')
    assert lines[first - 1].startswith('# 2M pages')
    assert lines[first + 1] == 'reserved_huge_pages=node:1,size:1GB,count:2'
    assert lines[first + 2] == '; keep the 1G page on node 1 as well'
    assert oslo_value(tmp_path, ini.text, 'DEFAULT',
                      'reserved_huge_pages') == pages
    assert ini.set_multi('DEFAULT', 'reserved_huge_pages', pages) is False


def test_multi_option_absent_goes_after_the_sections_last_option(tmp_path):
    text = fixture_text('devstack.conf')
    ini = inifile.IniFile(text)
    pages = ['node:0,size:2048,count:64']
    ini.set_multi('DEFAULT', 'reserved_huge_pages', pages)
    lines = ini.text.splitlines()
    index = lines.index('reserved_huge_pages = node:0,size:2048,count:64')
    assert lines[index - 1] == 'compute_driver = libvirt.LibvirtDriver'
    assert lines[index + 1:index + 3] == ['', '[wsgi]']
    assert oslo_value(tmp_path, ini.text, 'DEFAULT',
                      'reserved_huge_pages') == pages


def test_new_option_goes_before_comments_leading_to_next_section():
    ini = inifile.IniFile(fixture_text('devstack.conf'))
    ini.set('libvirt', 'hw_machine_type', 'x86_64=q35')
    lines = ini.text.splitlines()
    index = lines.index('hw_machine_type = x86_64=q35')
    assert lines[index - 1] == 'virt_type = kvm'
    assert lines[index + 1:index + 4] == [
        '', '# Everything below is for the workers in the cell.',
        '[conductor]']


def test_new_option_in_empty_section_follows_its_header():
    ini = inifile.IniFile('[compute]\n# shared CPUs below\n\n[libvirt]\n')
    ini.set('compute', 'cpu_shared_set', '0')
    assert ini.text == ('[compute]\ncpu_shared_set = 0\n# shared CPUs '
                        'below\n\n[libvirt]\n')


def test_new_option_goes_to_the_last_block_of_a_repeated_section(tmp_path):
    ini = inifile.IniFile(fixture_text('duplicates.conf'))
    ini.set('compute', 'cpu_dedicated_set', '2-7')   # present: unchanged
    ini.set('compute', 'max_disk_devices_to_attach', '8')
    assert ini.text.endswith('cpu_shared_set=0\n'
                             'max_disk_devices_to_attach=8\n')


def test_new_section_at_end_keeps_missing_final_newline(tmp_path):
    text = '[DEFAULT]\ndebug = True'
    ini = inifile.IniFile(text)
    ini.set('compute', 'cpu_shared_set', '0-1')
    assert ini.text == ('[DEFAULT]\ndebug = True\n\n[compute]\n'
                        'cpu_shared_set = 0-1')
    assert oslo_value(tmp_path, ini.text, 'compute', 'cpu_shared_set') == \
        ['0-1']


def test_new_option_after_last_line_without_newline():
    ini = inifile.IniFile('[DEFAULT]\ndebug = True')
    ini.set('DEFAULT', 'my_ip', '10.0.0.1')
    assert ini.text == '[DEFAULT]\ndebug = True\nmy_ip = 10.0.0.1'


def test_crlf_file_gets_crlf_lines(tmp_path):
    text = '[DEFAULT]\r\ndebug = True\r\n\r\n[compute]\r\ncpu_shared_set=0\r\n'
    ini = inifile.IniFile(text)
    ini.set('compute', 'cpu_shared_set', '0-1')
    ini.set_multi('DEFAULT', 'reserved_huge_pages',
                  ['node:0,size:2048,count:1', 'node:0,size:1GB,count:1'])
    ini.set('libvirt', 'virt_type', 'kvm')
    assert '\n' not in ini.text.replace('\r\n', '')
    assert ini.text == (
        '[DEFAULT]\r\ndebug = True\r\n'
        'reserved_huge_pages = node:0,size:2048,count:1\r\n'
        'reserved_huge_pages = node:0,size:1GB,count:1\r\n\r\n'
        '[compute]\r\ncpu_shared_set=0-1\r\n\r\n'
        '[libvirt]\r\nvirt_type = kvm\r\n')
    assert oslo_value(tmp_path, ini.text, 'libvirt', 'virt_type') == ['kvm']


def test_spacing_style_of_the_section_is_used():
    ini = inifile.IniFile('[a]\nx=1\n\n[b]\ny : 2\n')
    ini.set('a', 'z', '3')
    ini.set('b', 'w', '4')
    assert ini.text == '[a]\nx=1\nz=3\n\n[b]\ny : 2\nw : 4\n'


def test_option_with_empty_value_gets_the_sections_spacing(tmp_path):
    ini = inifile.IniFile(fixture_text('multiline.conf'))
    ini.set('DEFAULT', 'dhcp_domain', 'cloud.example')
    assert '\ndhcp_domain = cloud.example\n' in ini.text


def test_continuation_lines_are_replaced_with_the_value(tmp_path):
    text = fixture_text('multiline.conf')
    ini = inifile.IniFile(text)
    assert ini.get('filter_scheduler', 'enabled_filters') == \
        'ComputeFilter,\nNUMATopologyFilter'
    ini.set('filter_scheduler', 'enabled_filters', 'NUMATopologyFilter')
    assert '    NUMATopologyFilter' not in ini.text
    assert '# a comment right after the continuation' in ini.text
    assert oslo_value(tmp_path, ini.text, 'filter_scheduler',
                      'enabled_filters') == ['NUMATopologyFilter']


@pytest.mark.parametrize('value', [' padded ', '"quoted"', "'", ''])
def test_values_oslo_would_alter_are_quoted(tmp_path, value):
    ini = inifile.IniFile('[DEFAULT]\n')
    ini.set('DEFAULT', 'x', value)
    assert oslo_value(tmp_path, ini.text, 'DEFAULT', 'x') == [value]
    assert inifile.IniFile(ini.text).set('DEFAULT', 'x', value) is False


def test_multiline_value_refused():
    ini = inifile.IniFile('[DEFAULT]\n')
    with pytest.raises(ValueError, match='^a value cannot span lines$'):
        ini.set('DEFAULT', 'x', 'a\nb')


def test_lowercase_default_is_not_default(tmp_path):
    # oslo.config folds section names to lower case except DEFAULT.
    ini = inifile.IniFile('[default]\ndebug = True\n')
    assert ini.get('DEFAULT', 'debug') is None
    ini.set('DEFAULT', 'debug', 'False')
    assert ini.text == '[default]\ndebug = True\n\n[DEFAULT]\ndebug = False\n'


def test_removing_values_of_a_multi_option_at_the_end_of_file():
    ini = inifile.IniFile('[DEFAULT]\na = 1\nm = x\nm = y')
    ini.set_multi('DEFAULT', 'm', [])
    assert ini.text == '[DEFAULT]\na = 1'


@pytest.mark.parametrize('text, lineno, words', [
    ('debug = True\n[DEFAULT]\n', 1, 'before any [section]'),
    ('[DEFAULT]\n[compute\n', 2, 'malformed section header'),
    ('[DEFAULT]\n[]\n', 2, 'malformed section header'),
    ('[DEFAULT]\njust words\n', 2, 'no "="'),
    ('[DEFAULT]\n= 1\n', 2, 'empty name'),
    ('[DEFAULT]\n\n  indented = 1\n', 3, 'continues no option'),
    ('[DEFAULT]\n# c\n\tx\n', 3, 'continues no option'),
])
def test_unparsable_lines(tmp_path, text, lineno, words):
    with pytest.raises(inifile.ParseError, match=re.escape(words)) as info:
        inifile.IniFile(text)
    assert info.value.lineno == lineno
    assert words in info.value.problem
    # oslo.config refuses the same text.
    with pytest.raises(cfg.ParseError, match=r'oslo\.conf:\d+, '):
        oslo_sections(tmp_path, text)


def test_many_duplicates_edited_in_one_pass():
    """set/set_multi over duplicates edit every copy at once (one
    reparse per copy made 4,000 duplicates take minutes)."""
    text = '[compute]\n' + 'cpu_shared_set = 0-1\n' * 3000 + 'x = 1\n' + \
        'cpu_shared_set = 0-1'
    ini = inifile.IniFile(text)
    assert ini.set('compute', 'cpu_shared_set', '2-3')
    assert ini.text == text.replace('0-1', '2-3')
    ini = inifile.IniFile(text)
    assert ini.set_multi('compute', 'cpu_shared_set', ['4'])
    # the last line (no final newline) went: the new last line has none
    assert ini.text == '[compute]\ncpu_shared_set = 4\nx = 1'
    assert ini.get('compute', 'cpu_shared_set') == '4'
