"""oslo-dropin, proven by oslo.config with Nova's own registered options.

The drop-in directories are put where oslo.config looks by itself (here
~/.nova/, with $HOME pointing at the test's directory, the same search as
/etc/nova/), next to a realistic nova.conf; each Nova service, loaded by its
program name, must read every option of the plan it reads, with the
planned value, including the multi-valued reserved_huge_pages.
"""

import os
import shutil

import pytest

from kvmtune import cli
from kvmtune.novaconf import services
from tests.paths import FIXTURES
from tests.unit.export import consumers

BASE = os.path.join(FIXTURES, 'novaconf', 'devstack.conf')


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
    with open(BASE) as handle:
        base = handle.read().replace(
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
    consumers.export('oslo-dropin', out, '--nova-conf', BASE)
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
