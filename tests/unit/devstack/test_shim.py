"""The DevStack shim behaves as DevStack documents its functions.

Each test quotes the statement of DevStack's own source comments or docs
(inc/ini-config, functions-common, inc/python) that it checks, so the
plugin tests built on the shim test the plugin against DevStack's contract.
"""

import os
import subprocess
import sys
import textwrap

import pytest
from tests import paths

ROOT = paths.REPO
SHIM = os.path.join(ROOT, 'tests', 'devstack_shim', 'functions')


def bash(script, env=None, check=True):
    """Run script after sourcing the shim; return the completed process."""
    full_env = dict(os.environ, SHIM_PYTHON=sys.executable, **(env or {}))
    result = subprocess.run(
        ['bash', '-c', f'set -u\nsource {SHIM}\n{script}'],
        capture_output=True, text=True, env=full_env)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def read(path):
    with open(path) as handle:
        return handle.read()


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text(textwrap.dedent("""\
        [DEFAULT]
        # debug = False
        debug=True
        state_path = /var/lib/nova

        [compute]
        cpu_shared_set = 0

        [libvirt]
        virt_type = qemu
        debug = not-this-one
        """))
    return str(path)


# inc/ini-config: "iniset [-sudo] config-file section option value
#  - if the file does not exist, it is created"
def test_iniset_creates_missing_file(tmp_path):
    path = tmp_path / 'new.conf'
    bash(f'iniset {path} kvmtune flavors a:b')
    assert read(path) == '\n[kvmtune]\nflavors = a:b\n'


# inc/ini-config, iniset: "Add section at the end"
def test_iniset_adds_missing_section_at_the_end(conf):
    before = read(conf)
    bash(f'iniset {conf} kvmtune host_traits CUSTOM_KVMTUNE_NESTED')
    assert read(conf) == (before + '\n[kvmtune]\n'
                          'host_traits = CUSTOM_KVMTUNE_NESTED\n')


# inc/ini-config, iniset: a missing option is added ("Add it") with sed's
# "a" command on the section header: the line right below the header.
def test_iniset_adds_missing_option_below_header(conf):
    bash(f'iniset {conf} compute cpu_dedicated_set 1')
    lines = read(conf).splitlines()
    at = lines.index('[compute]')
    assert lines[at + 1] == 'cpu_dedicated_set = 1'
    assert lines[at + 2] == 'cpu_shared_set = 0'


# inc/ini-config, iniset: "Replace it": the option's "name = " part stays
# as written, only the value changes; no other line moves.
def test_iniset_replaces_value_keeping_layout(conf):
    bash(f'iniset {conf} DEFAULT debug False')
    text = read(conf)
    assert 'debug=False\n' in text
    assert '# debug = False\n' in text          # comment untouched
    assert 'debug = not-this-one' in text       # other section untouched
    assert len(text.splitlines()) == 11


# inc/ini-config: sed address "/^\[$section\]/,/^\[.*\]/": only the named
# section is searched, and only lines starting with the option name count.
def test_iniset_ignores_commented_and_other_sections(tmp_path):
    path = tmp_path / 'x.conf'
    path.write_text('[a]\n#opt = 1\n[b]\nopt = 2\n')
    bash(f'iniset {path} a opt 3')
    assert read(path) == '[a]\nopt = 3\n#opt = 1\n[b]\nopt = 2\n'


# inc/ini-config, iniset: "if [[ -z $section || -z $option ]]; then return"
def test_iniset_without_section_or_option_changes_nothing(conf):
    before = read(conf)
    bash(f'iniset {conf} "" debug x; iniset {conf} DEFAULT "" x')
    assert read(conf) == before


# inc/ini-config: "iniget config-file section option" prints the value;
# the shell's word splitting drops the blanks around it.
def test_iniget_prints_value(conf):
    out = bash(f'iniget {conf} DEFAULT debug; iniget {conf} libvirt debug;'
               f' echo "[$(iniget {conf} DEFAULT nothing)]"').stdout
    assert out.splitlines() == ['True', 'not-this-one', '[]']


# inc/ini-config: "inidelete [-sudo] config-file section option" removes
# the option's lines from that section only.
def test_inidelete_removes_option_in_section_only(conf):
    bash(f'inidelete {conf} DEFAULT debug')
    text = read(conf)
    assert 'debug=True' not in text
    assert '# debug = False' in text
    assert 'debug = not-this-one' in text


# inc/ini-config: "ini_has_option config-file section option"
def test_ini_has_option(conf):
    result = bash(f'ini_has_option {conf} compute cpu_shared_set && echo y;'
                  f' ini_has_option {conf} compute debug || echo n')
    assert result.stdout.split() == ['y', 'n']


# functions-common: "Normalize config values to True or False
# Accepts as False: 0 no No NO false False FALSE
# Accepts as True: 1 yes Yes YES true True TRUE
# VAR=$(trueorfalse default-value test-value)" (test-value: the variable's
# name; unset or unrecognised gives the default).
@pytest.mark.parametrize('value,expected', [
    *[(v, 'False') for v in '0 no No NO false False FALSE'.split()],
    *[(v, 'True') for v in '1 yes Yes YES true True TRUE'.split()],
    ('maybe', 'default'), ('', 'default')])
def test_trueorfalse(value, expected):
    out = bash(f'X="{value}"; trueorfalse default X').stdout.strip()
    assert out == expected
    assert bash('unset X; trueorfalse True X').stdout.strip() == 'True'


# functions-common: "enable_service service [service ...]" adds to
# ENABLED_SERVICES; "is_service_enabled service [service ...]" is true if
# any of them is enabled.
def test_enable_and_is_service_enabled():
    out = bash('ENABLED_SERVICES=n-api,tempest; enable_service kvmtune;'
               ' enable_service kvmtune; echo $ENABLED_SERVICES;'
               ' is_service_enabled kvmtune && echo on;'
               ' is_service_enabled nova kvmtune && echo any;'
               ' is_service_enabled n-cpu || echo off;'
               ' is_service_enabled n-ap || echo exact').stdout
    assert out.split() == ['n-api,tempest,kvmtune', 'on', 'any', 'off',
                           'exact']


# functions-common: "die $LINENO "message"": prints and exits non-zero.
def test_die_exits_with_message():
    result = bash('die 42 "kvmtune post-config failed"; echo not-reached',
                  check=False)
    assert result.returncode == 1
    assert 'kvmtune post-config failed' in result.stderr
    assert ':42' in result.stderr
    assert 'not-reached' not in result.stdout


# functions-common: echo_summary "something to say" reaches the console.
def test_echo_summary():
    assert bash('echo_summary "Installing kvmtune"').stdout == \
        'Installing kvmtune\n'


# inc/python: "setup_develop directory [extras]" installs the project from
# its directory in develop (editable) mode, so the tree is what runs.
def test_setup_develop_installs_editable(tmp_path):
    project = tmp_path / 'demo'
    (project / 'demoshim').mkdir(parents=True)
    (project / 'demoshim' / '__init__.py').write_text('VALUE = 1\n')
    (project / 'setup.py').write_text(
        'from setuptools import setup\n'
        "setup(name='demoshim', version='0.1', packages=['demoshim'])\n")
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip',
                    str(venv)], check=True)
    python = venv / 'bin' / 'python'
    # Borrow pip from this interpreter; the build backend comes from the
    # package index, as it does for DevStack.
    site = subprocess.run(
        [str(python), '-c', 'import site; print(site.getsitepackages()[0])'],
        capture_output=True, text=True, check=True).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith('site-packages')]
    with open(os.path.join(site, 'borrowed.pth'), 'w') as handle:
        handle.write('\n'.join(borrowed) + '\n')
    bash(f'setup_develop {project}', env={'PYTHON': str(python)})
    (project / 'demoshim' / '__init__.py').write_text('VALUE = 2\n')
    out = subprocess.run([str(python), '-c',
                          'import demoshim; print(demoshim.VALUE)'],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == '2', out.stderr
