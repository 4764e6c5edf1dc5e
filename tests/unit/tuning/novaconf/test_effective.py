"""oslo.config's precedence, as kvmtune.tuning.novaconf.effective models it,
checked against oslo.config itself with Nova's options registered (Nova's
Python: tests.paths.NOVA_PYTHON) on the same files and command lines."""

import json
import subprocess

import pytest

from kvmtune.tuning.novaconf import effective
from tests.unit.tuning.export.consumers import needs_nova
from tests.unit.tuning.export.consumers import NOVA_PYTHON

# Nova's own parse, as nova/config.py's parse_args does it:
# CONF(argv[1:], project='nova') with prog from argv[0].
_OSLO = r'''
import json, os, sys
import nova.conf
argv = json.loads(sys.argv[1])
CONF = nova.conf.CONF
CONF(argv[1:], project='nova',
     prog=os.path.basename(argv[0]).removesuffix('.py'))
json.dump({'dedicated': CONF.compute.cpu_dedicated_set,
           'shared': CONF.compute.cpu_shared_set,
           'reserved': [
               ','.join(f'{k}:{v}' for k, v in sorted(item.items()))
               for item in CONF.reserved_huge_pages or []]}, sys.stdout)
'''


def oslo(argv, home, env=None):
    done = subprocess.run(
        [NOVA_PYTHON, '-c', _OSLO, json.dumps(argv)], capture_output=True,
        text=True, timeout=120, env={'HOME': str(home), 'PATH': '/usr/bin',
                                     **(env or {})})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ours(argv, home, env=None):
    eff = effective.effective(argv, effective.Reader('/', home=str(home)),
                              environ=env)
    reserved, _ = eff.get('DEFAULT', 'reserved_huge_pages', multi=True)
    return {'dedicated': eff.get('compute', 'cpu_dedicated_set')[0],
            'shared': eff.get('compute', 'cpu_shared_set')[0],
            'reserved': [','.join(sorted(item.split(',')))
                         for item in reserved or []]}


@pytest.fixture
def home(tmp_path):
    """A service HOME whose ~/.nova holds every default file and dir (the
    first search directory: /etc/nova is never read)."""
    etc = tmp_path / '.nova'
    (etc / 'nova.conf.d').mkdir(parents=True)
    (etc / 'nova-compute.conf.d').mkdir()
    (etc / 'nova.conf').write_text(
        '[DEFAULT]\nreserved_huge_pages = node:0,size:2048,count:1\n'
        '[compute]\ncpu_dedicated_set = 4-7\ncpu_shared_set = 0\n')
    (etc / 'nova-compute.conf').write_text(
        '[compute]\ncpu_shared_set = 0-1\n')
    (etc / 'nova.conf.d' / '10-base.conf').write_text(
        '[compute]\ncpu_dedicated_set = 8-9\n')
    (etc / 'nova-compute.conf.d' / '50-kvmtune.conf').write_text(
        '[DEFAULT]\nreserved_huge_pages = node:1,size:2048,count:2\n'
        '[compute]\ncpu_dedicated_set = 2-3\n')
    (etc / 'nova-compute.conf.d' / '90-late.conf').write_text(
        '[compute]\ncpu_shared_set = 1\n')
    return tmp_path


def shapes(home):
    etc = home / '.nova'
    files = ['--config-file', str(etc / 'nova.conf'),
             '--config-file', str(etc / 'nova-compute.conf')]
    return {
        'no --config-file': ['/usr/bin/nova-compute'],
        '--config-file x2 (distro units)': ['/usr/bin/nova-compute',
                                            *files],
        '--config-file x2 then --config-dir': [
            '/usr/bin/nova-compute', *files, '--config-dir',
            str(etc / 'nova-compute.conf.d')],
        '--config-dir before --config-file': [
            '/usr/bin/nova-compute', '--config-dir',
            str(etc / 'nova-compute.conf.d'), *files],
        'python runs the script': ['/usr/bin/python3',
                                   '/usr/bin/nova-compute', *files],
    }


@needs_nova
@pytest.mark.parametrize('shape', [
    'no --config-file', '--config-file x2 (distro units)',
    '--config-file x2 then --config-dir',
    '--config-dir before --config-file', 'python runs the script'])
def test_the_model_reads_what_oslo_config_reads(home, shape):
    argv = shapes(home)[shape]
    # the interpreter is not part of what oslo.config sees
    want = oslo(effective.real_argv(argv), home)
    assert ours(argv, home) == want


@needs_nova
def test_the_trap_a_base_value_beats_the_drop_in_with_config_file(home):
    # Started with --config-file, the drop-in dirs are read
    # first, so nova.conf's 4-7 wins over the drop-in's 2-3; started with
    # no --config-file the drop-in wins. Both as oslo.config says.
    plain = oslo(shapes(home)['no --config-file'], home)
    explicit = oslo(shapes(home)['--config-file x2 (distro units)'], home)
    assert plain['dedicated'] == '2-3'
    assert explicit['dedicated'] == '4-7'
    # multi-valued: every file adds up, whatever the order
    assert sorted(explicit['reserved']) == sorted(plain['reserved']) == [
        'count:1,node:0,size:2048', 'count:2,node:1,size:2048']


@needs_nova
def test_the_environment_beats_every_file(home):
    env = {'OS_COMPUTE__CPU_DEDICATED_SET': '10-11'}
    argv = shapes(home)['no --config-file']
    assert oslo(argv, home, env)['dedicated'] == '10-11'
    assert ours(argv, home, env)['dedicated'] == '10-11'


def test_sources_in_order_and_where_each_value_came_from(home):
    etc = home / '.nova'
    argv = shapes(home)['--config-file x2 then --config-dir']
    eff = effective.effective(argv, effective.Reader('/', home=str(home)))
    # a --config-dir on the command line: no default directory is read
    assert [(s.path, s.origin) for s in eff.sources] == [
        (str(etc / 'nova.conf'), 'argv'),
        (str(etc / 'nova-compute.conf'), 'argv'),
        (str(etc / 'nova-compute.conf.d' / '50-kvmtune.conf'), 'argv'),
        (str(etc / 'nova-compute.conf.d' / '90-late.conf'), 'argv')]
    assert eff.get('compute', 'cpu_dedicated_set') == (
        '2-3', str(etc / 'nova-compute.conf.d' / '50-kvmtune.conf'))
    argv = shapes(home)['--config-file x2 (distro units)']
    eff = effective.effective(argv, effective.Reader('/', home=str(home)))
    assert [(s.path, s.origin) for s in eff.sources][:3] == [
        (str(etc / 'nova.conf.d' / '10-base.conf'), 'default'),
        (str(etc / 'nova-compute.conf.d' / '50-kvmtune.conf'), 'default'),
        (str(etc / 'nova-compute.conf.d' / '90-late.conf'), 'default')]


def test_retitled_and_interpreted_command_lines():
    assert effective.real_argv([
        'nova-compute: master process [/usr/bin/nova-compute '
        '--config-file /etc/nova/nova.conf]']) == [
        '/usr/bin/nova-compute', '--config-file', '/etc/nova/nova.conf']
    assert effective.real_argv(['python3.11', '-u', '/opt/v/bin/nova-'
                                'scheduler']) == ['/opt/v/bin/nova-scheduler']
    assert effective.prog_of(['/usr/bin/nova-compute.py']) == 'nova-compute'


def test_an_unreadable_file_is_named_not_fatal(home):
    bad = home / '.nova' / 'nova-compute.conf.d' / '20-bad.conf'
    bad.write_text('no section here = 1\n')
    eff = effective.effective(shapes(home)['no --config-file'],
                              effective.Reader('/', home=str(home)))
    assert str(bad) in eff.unreadable
    assert eff.get('compute', 'cpu_dedicated_set')[0] == '2-3'


def test_an_overlay_shows_files_about_to_be_written(tmp_path):
    host = tmp_path / 'etc' / 'nova' / 'nova-compute.conf.d'
    host.mkdir(parents=True)
    (host / '90-late.conf').write_text('[compute]\ncpu_shared_set = 1\n')
    (tmp_path / 'etc' / 'nova' / 'nova.conf').write_text(
        '[compute]\ncpu_dedicated_set = 4-7\n')
    overlay = effective.Overlay(
        {'/etc/nova/nova-compute.conf.d/50-kvmtune.conf':
         '[compute]\ncpu_dedicated_set = 2-3\n'},
        under=effective.Reader(str(tmp_path)))
    eff = effective.effective(['/usr/bin/nova-compute'], overlay)
    assert [s.path for s in eff.sources] == [
        '/etc/nova/nova.conf',
        '/etc/nova/nova-compute.conf.d/50-kvmtune.conf',
        '/etc/nova/nova-compute.conf.d/90-late.conf']
    assert eff.get('compute', 'cpu_dedicated_set')[0] == '2-3'
    assert eff.get('compute', 'cpu_shared_set')[0] == '1'
    # with no host under it, only the files given exist
    alone = effective.Overlay({'/etc/nova/nova.conf': '[DEFAULT]\n'})
    eff = effective.effective(['/usr/bin/nova-compute', '--config-file',
                               '/etc/nova/other.conf'], alone)
    assert '/etc/nova/other.conf' in eff.unreadable
