"""oslo-dropin, proven by oslo.config with Nova's own registered options.

The drop-in directories are put where oslo.config looks by itself (here
~/.nova/, with $HOME pointing at the test's directory, the same search as
/etc/nova/), next to a realistic nova.conf; each Nova service, loaded by its
program name, must read every option of the plan it reads, with the
planned value, including the multi-valued reserved_huge_pages.
"""

import os
import shlex
import shutil
import subprocess

import pytest

from kvmtune import cli
from kvmtune.errors import InputError
from kvmtune.tuning import export as exports
from kvmtune.tuning.novaconf import effective
from kvmtune.tuning.novaconf import services
from tests.paths import FIXTURES
from tests.unit.tuning.export import consumers
from tests.unit.tuning.novaconf.test_effective import oslo

BASE = os.path.join(FIXTURES, 'novaconf', 'devstack.conf')


def _quiet_base():
    """devstack.conf without the single-valued options the plan sets to
    other values (those are refused: see the precedence tests below)."""
    with open(BASE) as handle:
        return ''.join(line for line in handle
                       if not line.startswith(('cpu_shared_set',
                                               'enabled_filters')))


def _home(tmp_path, base_text):
    out = tmp_path / 'out'
    consumers.export('oslo-dropin', out)
    home = tmp_path / 'home'
    shutil.copytree(out / 'etc' / 'nova', home / '.nova')
    (home / '.nova' / 'nova.conf').write_text(base_text)
    return home


@consumers.needs_nova
def test_each_service_reads_its_planned_values(tmp_path):
    with open(BASE) as handle:
        home = _home(tmp_path, handle.read())
    plan, _ = consumers.plan()
    keys = [(s, o) for s, opts in plan.nova_conf.items() for o in opts]
    by_service = {}
    for service in ('compute', 'scheduler', 'conductor'):
        got = consumers.nova_reads(keys, prog=f'nova-{service}', home=home)
        by_service[service] = got
        assert got['files'] == [str(home / '.nova' / 'nova.conf')]
        assert str(home / '.nova' / f'nova-{service}.conf.d') in got['dirs']
        for key, value in consumers.planned(plan.nova_conf).items():
            section, option = key.split('.')
            if service in services.readers(section, option):
                assert got[key] == value, (service, key)
    compute = by_service['compute']
    assert compute['DEFAULT.reserved_huge_pages'] == [
        'node:0,size:1GB,count:1', 'node:1,size:1GB,count:1']
    assert compute['compute.cpu_dedicated_set'] == '1-19,21-39,41-59,61-79'
    # The scheduler's options are not in the compute's drop-in: nova-compute
    # still reads the base nova.conf's filters.
    assert 'NUMATopologyFilter' not in compute[
        'filter_scheduler.enabled_filters']
    assert 'NUMATopologyFilter' in by_service['scheduler'][
        'filter_scheduler.enabled_filters']
    assert by_service['scheduler'][
        'workarounds.disable_fallback_pcpu_query'] == 'true'


@consumers.needs_nova
def test_multi_valued_option_in_base_adds_up_so_export_refuses(
        tmp_path, capsys):
    with open(BASE) as handle:
        base = handle.read().replace(
            '[DEFAULT]\n', '[DEFAULT]\nreserved_huge_pages = '
            'node:0,size:2048,count:64\n', 1)
    home = _home(tmp_path, base)
    # What oslo.config makes of the base plus a drop-in: both add up.
    got = consumers.nova_reads([('DEFAULT', 'reserved_huge_pages')],
                               home=home)
    assert got['DEFAULT.reserved_huge_pages'] == [
        'node:0,size:2048,count:64', 'node:0,size:1GB,count:1',
        'node:1,size:1GB,count:1']
    # So given that base, the export refuses, and writes nothing.
    base_path = tmp_path / 'nova.conf'
    base_path.write_text(base)
    out = tmp_path / 'refused'
    capsys.readouterr()
    assert cli.main(['export', '--profile', consumers.PROFILE, '--target',
                     'oslo-dropin', '--root', consumers.HOST_DIR,
                     '--host', consumers.HOST, '--output', str(out),
                     '--nova-conf', str(base_path)]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f'{base_path}: [DEFAULT] reserved_huge_pages: ' in err
    assert 'would add' in err
    assert not out.exists()


@consumers.needs_nova
def test_same_multi_values_in_base_are_folded(tmp_path, capsys):
    base = _quiet_base().replace(
        '[DEFAULT]\n', '[DEFAULT]\n'
        'reserved_huge_pages = node:1,size:1GB,count:1\n'
        'reserved_huge_pages = node:0,size:1GB,count:1\n', 1)
    base_path = tmp_path / 'nova.conf'
    base_path.write_text(base)
    out = tmp_path / 'out'
    assert cli.main(['export', '--profile', consumers.PROFILE, '--target',
                     'oslo-dropin', '--root', consumers.HOST_DIR,
                     '--host', consumers.HOST, '--output', str(out),
                     '--nova-conf', str(base_path)]) == 0
    assert 'left out of the drop-in' in capsys.readouterr().out
    home = tmp_path / 'home'
    shutil.copytree(out / 'etc' / 'nova', home / '.nova')
    shutil.copyfile(base_path, home / '.nova' / 'nova.conf')
    got = consumers.nova_reads([('DEFAULT', 'reserved_huge_pages'),
                                ('DEFAULT', 'reserved_host_memory_mb')],
                               home=home)
    assert sorted(got['DEFAULT.reserved_huge_pages']) == [
        'node:0,size:1GB,count:1', 'node:1,size:1GB,count:1']
    assert got['DEFAULT.reserved_host_memory_mb'] == '4096'


def test_base_without_multi_values_changes_nothing(tmp_path):
    out = tmp_path / 'out'
    base = tmp_path / 'nova.conf'
    base.write_text(_quiet_base())
    consumers.export('oslo-dropin', out, '--nova-conf', str(base))
    text = (out / 'etc/nova/nova-compute.conf.d/50-kvmtune.conf').read_text()
    assert text.count('reserved_huge_pages = ') == 2


@pytest.mark.parametrize('service', ['scheduler', 'conductor'])
def test_no_compute_option_in_controller_dropins(tmp_path, service):
    out = tmp_path / 'out'
    consumers.export('oslo-dropin', out)
    text = (out / f'etc/nova/nova-{service}.conf.d/50-kvmtune.conf'
            ).read_text()
    assert 'cpu_dedicated_set' not in text
    assert 'enabled_filters = ' in text


# -- where the drop-in stands in oslo.config's order -----------------------
#
# The export names host paths (/etc/nova/...). oslo.config searches ~/.nova
# before /etc/nova (oslo_config/cfg.py _get_config_dirs), so the tests put
# the exported etc/nova/ tree and the base nova.conf in $HOME/.nova and run
# Nova's own parse (tests/unit/tuning/novaconf/test_effective.py's) with every
# /etc/nova/ of the command line turned into $HOME/.nova/.

TRAP_BASE = '[DEFAULT]\ndebug = true\n[compute]\ncpu_dedicated_set = 4-7\n'
PLANNED = '1-19,21-39,41-59,61-79'      # the plan's, for this host fixture
NOVA = '/usr/bin/nova-compute'
FILES = ['--config-file', '/etc/nova/nova.conf',
         '--config-file', '/etc/nova/nova-compute.conf']
DIR = ['--config-dir', '/etc/nova/nova-compute.conf.d']
SHAPES = {
    'no --config-file': [NOVA],
    '--config-file x2 (distro units)': [NOVA, *FILES],
    '--config-file x2 then --config-dir': [NOVA, *FILES, *DIR],
    '--config-dir before --config-file': [NOVA, *DIR, *FILES],
}
# Where a drop-in in /etc/nova/nova-compute.conf.d loses to nova.conf.
LOSES = {'--config-file x2 (distro units)',
         '--config-dir before --config-file'}
SYSTEMD = 'etc/systemd/system/nova-compute.service.d/50-kvmtune.conf'


def _argv(tmp_path, *extra):
    base = tmp_path / 'base.conf'
    base.write_text(TRAP_BASE)
    return ['export', '--profile', consumers.PROFILE, '--target',
            'oslo-dropin', '--root', consumers.HOST_DIR, '--host',
            consumers.HOST, '--nova-conf', str(base), *extra]


def _host(tmp_path, out):
    """$HOME for oslo.config: the exported etc/nova and the base."""
    home = tmp_path / 'home'
    shutil.copytree(out / 'etc' / 'nova', home / '.nova')
    (home / '.nova' / 'nova.conf').write_text(TRAP_BASE)
    (home / '.nova' / 'nova-compute.conf').write_text('[DEFAULT]\n')
    return home


def _at(home, argv):
    return [word.replace('/etc/nova/', f'{home}/.nova/') for word in argv]


def exec_start(text):
    """The command of the last ExecStart= of a systemd drop-in kvmtune
    wrote: its words (quoted as systemd.service(5) says, which for the
    words kvmtune writes is the shell's), %% and $$ undone."""
    lines = [line for line in text.splitlines()
             if line.startswith('ExecStart=')]
    assert lines[-2] == 'ExecStart='        # the reset comes first
    return [word.replace('%%', '%').replace('$$', '$')
            for word in shlex.split(lines[-1][len('ExecStart='):])]


@consumers.needs_nova
def test_held_out_case_is_refused_naming_the_option(tmp_path, capsys):
    out = tmp_path / 'out'
    capsys.readouterr()
    assert cli.main(_argv(tmp_path, '--output', str(out))) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert '[compute] cpu_dedicated_set' in err
    assert 'remove cpu_dedicated_set from' in err
    assert not out.exists()
    # ... and rightly: in the distro units' shape oslo.config keeps 4-7.
    consumers.export('oslo-dropin', tmp_path / 'plain')
    home = _host(tmp_path, tmp_path / 'plain')
    shape = SHAPES['--config-file x2 (distro units)']
    assert oslo(_at(home, shape), home)['dedicated'] == '4-7'


@consumers.needs_nova
@pytest.mark.parametrize('shape', sorted(SHAPES))
def test_with_the_command_line_the_plan_wins_in_every_shape(
        tmp_path, capsys, shape):
    out = tmp_path / 'out'
    argv = SHAPES[shape]
    assert cli.main(_argv(tmp_path, '--output', str(out),
                          '--service-cmdline', shlex.join(argv))) == 0
    printed = capsys.readouterr().out
    home = _host(tmp_path, out)
    systemd = out / SYSTEMD
    assert systemd.exists() == (shape in LOSES)
    if shape in LOSES:
        # as started now oslo.config keeps the base's value ...
        assert oslo(_at(home, argv), home)['dedicated'] == '4-7'
        assert 'would stay 4-7' in printed
        # ... and started as the systemd drop-in says, the plan's
        started = exec_start(systemd.read_text())
        assert started[:len(argv)] == argv or shape.startswith(
            '--config-dir before')
        assert started[-2:] == DIR
    else:
        started = argv
        assert 'takes every planned value' in printed
    got = oslo(_at(home, started), home)
    assert got['dedicated'] == PLANNED
    # the model and oslo.config agree on the started command line
    eff = effective.effective(_at(home, started),
                              effective.Reader('/', home=str(home)))
    assert eff.get('compute', 'cpu_dedicated_set')[0] == PLANNED


@consumers.needs_nova
def test_anyway_writes_and_states_the_shapes_where_it_loses(tmp_path,
                                                            capsys):
    out = tmp_path / 'out'
    assert cli.main(_argv(tmp_path, '--output', str(out),
                          '--dropin-anyway')) == 0
    printed = capsys.readouterr().out
    assert not (out / SYSTEMD).exists()
    [note] = [line for line in printed.splitlines()
              if 'cpu_dedicated_set' in line]
    assert ('takes effect only when nova-compute is started without '
            '--config-file, or with --config-dir '
            '/etc/nova/nova-compute.conf.d after its last --config-file'
            in note)
    home = _host(tmp_path, out)
    for shape, argv in SHAPES.items():
        # what the note says, read off the command line ...
        files = [i for i, w in enumerate(argv) if w == '--config-file']
        dirs = [i for i, w in enumerate(argv) if w == '--config-dir']
        stated = not files or bool(dirs and dirs[-1] > files[-1])
        # ... is what oslo.config does
        got = oslo(_at(home, argv), home)['dedicated']
        assert (got == PLANNED) == stated, shape
        assert stated == (shape not in LOSES)


@consumers.needs_nova
def test_a_file_read_after_the_drop_in_is_refused_even_so(tmp_path):
    # Exporting on the host: its own files count. A later drop-in of
    # another tool (90-*) beats kvmtune's 50- in every shape.
    root = tmp_path / 'host'
    late = root / 'etc' / 'nova' / 'nova-compute.conf.d' / '90-late.conf'
    late.parent.mkdir(parents=True)
    late.write_text('[compute]\ncpu_dedicated_set = 8-9\n')
    plan, facts = consumers.plan()
    with pytest.raises(InputError,
                       match=r'^\[compute\] cpu_dedicated_set: nova-compute '
                             r'started as ') as caught:
        exports.build('oslo-dropin', plan, facts, host=consumers.HOST,
                      cmdlines={'compute': ([NOVA, *FILES], None)},
                      under=effective.Reader(str(root)))
    line = caught.value.line()
    assert '[compute] cpu_dedicated_set' in line
    assert 'would read 8-9 from /etc/nova/nova-compute.conf.d/' \
        '90-late.conf' in line
    # and oslo.config agrees: with the --config-dir, 90-late still wins
    out = tmp_path / 'out'
    consumers.export('oslo-dropin', out)
    home = _host(tmp_path, out)
    shutil.copyfile(late, home / '.nova' / 'nova-compute.conf.d' /
                    '90-late.conf')
    assert oslo(_at(home, [NOVA, *FILES, *DIR]), home)['dedicated'] == '8-9'


def test_only_the_oslo_dropin_target_takes_a_command_line(capsys):
    assert cli.main(['export', '--profile', consumers.PROFILE, '--target',
                     'kolla', '--root', consumers.HOST_DIR, '--output',
                     '/nonexistent/never', '--service-cmdline', NOVA]) == 2
    assert 'oslo-dropin target only' in capsys.readouterr().err


def _systemd_analyze():
    try:
        return subprocess.run(['systemd-analyze', '--version'],
                              capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not _systemd_analyze(),
                    reason='no systemd-analyze (apt-get install systemd)')
def test_systemd_reads_the_unit_drop_in(tmp_path):
    # systemd's own parser: the unit as Debian's nova-compute package
    # ships it (ExecStart through its init script), kvmtune's drop-in.
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    nova = bin_dir / 'nova-compute'
    nova.write_text('#!/bin/sh\n')
    nova.chmod(0o755)
    argv = [str(nova), *FILES, '--log-file', '/var/log/nova/a b%1$x.log']
    out = tmp_path / 'out'
    assert cli.main(_argv(tmp_path, '--output', str(out),
                          '--service-cmdline', shlex.join(argv))) == 0
    units = tmp_path / 'units'
    shutil.copytree(out / 'etc' / 'systemd' / 'system', units)
    (units / 'nova-compute.service').write_text(
        '[Unit]\nDescription=OpenStack Compute\n[Service]\nType=simple\n'
        'ExecStart=/etc/init.d/nova-compute systemd-start\n'
        '[Install]\nWantedBy=multi-user.target\n')
    dropin = units / 'nova-compute.service.d' / '50-kvmtune.conf'

    def verify():
        return subprocess.run(
            ['systemd-analyze', 'verify', '--man=no', '--generators=no',
             str(units / 'nova-compute.service')],
            capture_output=True, text=True, cwd=tmp_path, timeout=60,
            env={**os.environ, 'SYSTEMD_UNIT_PATH': f'{units}:'})

    done = verify()
    assert done.returncode == 0, done.stderr
    assert exec_start(dropin.read_text()) == [*argv, *DIR]
    # the drop-in is what systemd read: without its ExecStart= reset the
    # unit has two commands, which systemd refuses
    dropin.write_text(dropin.read_text().replace('ExecStart=\n', '', 1))
    done = verify()
    assert done.returncode != 0
    assert 'more than one ExecStart=' in done.stderr


OPERATOR_FILTERS = ['PciPassthroughFilter',
                    'AggregateInstanceExtraSpecsFilter']


@consumers.needs_nova
def test_operator_filters_are_merged_not_refused(tmp_path, capsys):
    """A base with the operator's filters: the drop-in carries their
    filters and kvmtune's (as nova-conf apply merges them), read after the
    base it gives them all, and read before it (the distro units' shape)
    the base's list stays: the operator's filters are never lost."""
    theirs = ['ComputeFilter', *OPERATOR_FILTERS]
    base = _quiet_base().replace(
        '[filter_scheduler]\n', '[filter_scheduler]\nenabled_filters = '
        + ','.join(theirs) + '\n', 1)
    base_path = tmp_path / 'nova.conf'
    base_path.write_text(base)
    out = tmp_path / 'out'
    capsys.readouterr()
    assert cli.main(['export', '--profile', consumers.PROFILE, '--target',
                     'oslo-dropin', '--root', consumers.HOST_DIR,
                     '--host', consumers.HOST, '--output', str(out),
                     '--nova-conf', str(base_path)]) == 0
    printed = capsys.readouterr().out
    assert '[filter_scheduler] enabled_filters: the drop-in has ' \
        f'{base_path}\'s items and kvmtune\'s' in printed
    union = ','.join([*theirs, 'NUMATopologyFilter'])
    home = tmp_path / 'home'
    shutil.copytree(out / 'etc' / 'nova', home / '.nova')
    shutil.copyfile(base_path, home / '.nova' / 'nova.conf')
    for service in ('scheduler', 'conductor'):
        dropin = home / '.nova' / f'nova-{service}.conf.d' / '50-kvmtune.conf'
        assert f'enabled_filters = {union}\n' in dropin.read_text()
        # oslo.config with Nova's options, the drop-in read after the base
        got = consumers.nova_reads([('filter_scheduler', 'enabled_filters')],
                                   prog=f'nova-{service}', home=home)
        assert got['filter_scheduler.enabled_filters'] == union
        # kvmtune's model of that order agrees ...
        reader = effective.Reader('/', home=str(home))
        value, where = effective.effective(
            [f'/usr/bin/nova-{service}'], reader).get(
                'filter_scheduler', 'enabled_filters')
        assert (value, where) == (union, str(dropin))
        # ... and started --config-file nova.conf, the base's list stays
        value, where = effective.effective(
            [f'/usr/bin/nova-{service}', '--config-file',
             str(home / '.nova' / 'nova.conf')], reader).get(
                 'filter_scheduler', 'enabled_filters')
        assert value == ','.join(theirs)
