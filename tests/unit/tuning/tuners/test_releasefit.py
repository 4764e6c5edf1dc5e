"""kvmtune.tuning.tuners.releasefit (Tuner.fit_release): what a tuner plans
for a Nova release, read from the release table. The real table has no
option missing in 29-34 (the matrix tier checks that against each
release), so the cases a release could differ in are made by editing a
copy of it: pure logic."""

import copy
import os

import pytest

from kvmtune import cli
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune import nova_releases
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from tests import paths

EPYC = os.path.join(paths.HOSTS, 'real', 'x86_64-epyc_7451')
FALLBACK = 'workarounds.disable_fallback_pcpu_query'


@pytest.fixture
def edited(monkeypatch):
    """A copy of the real table; the test edits Nova 29's records."""
    data = copy.deepcopy(nova_releases.table())
    monkeypatch.setattr(nova_releases, 'table', lambda: data)

    def release_29(section, key):
        entries = data[section][key]
        first, last = entries[0]['releases']
        record = dict(entries[0])
        entries[0]['releases'] = [30, last]
        record['releases'] = [29, 29]
        entries.insert(0, record)
        return record
    return release_29


def plan(name, major):
    return plans.build_plan(profiles.load(name, profiles.search_dirs()),
                            host_facts.gather(EPYC), release=major)


def test_a_deprecated_option_without_equivalent_is_planned_with_a_note():
    made = plan('cpu-pinning', 34)
    assert made.nova_conf['workarounds'] == {
        'disable_fallback_pcpu_query': 'true'}
    [note] = [n['note'] for n in made.notes
              if 'disable_fallback_pcpu_query' in n['note']]
    assert note.startswith('Nova 34 (2026.2): [workarounds] '
                           'disable_fallback_pcpu_query is deprecated for '
                           'removal since 20.0.0')
    assert 'nova/scheduler/manager.py' in note


def test_an_optional_option_a_release_lacks_is_left_out(edited):
    record = edited('options', FALLBACK)
    record.update(exists=False, read=False)
    made = plan('cpu-pinning', 29)
    assert 'workarounds' not in made.nova_conf
    assert any(n['note'].startswith(
        'Nova 29 (2024.1 Caracal) has no [workarounds] '
        'disable_fallback_pcpu_query; not planned') for n in made.notes)
    # Other releases are not touched.
    assert 'workarounds' in plan('cpu-pinning', 30).nova_conf


def test_a_deprecated_option_with_an_equivalent_is_planned_as_it(edited):
    record = edited('options', FALLBACK)
    record['replaced_by'] = '[scheduler] pcpu_fallback_off'
    edited_new = {'releases': [29, 34], 'exists': True, 'read': True,
                  'deprecated_for_removal': False, 'choices': None}
    nova_releases.table()['options']['scheduler.pcpu_fallback_off'] = [
        edited_new]
    made = plan('cpu-pinning', 29)
    assert made.nova_conf['scheduler'] == {'pcpu_fallback_off': 'true'}
    assert 'workarounds' not in made.nova_conf
    assert any('planned as [scheduler] pcpu_fallback_off' in n['note']
               for n in made.notes)


def test_a_needed_option_a_release_lacks_refuses(edited):
    edited('options', 'compute.cpu_dedicated_set').update(exists=False)
    with pytest.raises(InputError, match='has no') as info:
        plan('cpu-pinning', 29)
    assert info.value.problem == (
        'profile cpu-pinning is unavailable: Nova 29 (2024.1 Caracal) has '
        'no [compute] cpu_dedicated_set, which its tuner cpu_pinning needs')
    assert info.value.key == '--nova-release'


def test_refusal_on_the_command_line_is_one_line(edited, capsys):
    edited('options', 'libvirt.rx_queue_size')['choices'] = ['256', '512']
    assert cli.main(['plan', '--profile', 'net-tuned', '--root', EPYC,
                     '--nova-release', '29']) == 2
    captured = capsys.readouterr()
    assert captured.out == '' and captured.err.count('\n') == 1
    assert ('Nova 29 (2024.1 Caracal) does not accept [libvirt] '
            'rx_queue_size = 1024 (only 256, 512)') in captured.err
    # Nova 30 takes it: planned, not refused (exit 1, not 2: the capture
    # has no /dev/vhost-net, a FAIL check of the plan)
    assert cli.main(['plan', '--profile', 'net-tuned', '--root', EPYC,
                     '--nova-release', '30']) == 1


def test_an_option_defined_but_never_read_counts_as_missing(edited):
    edited('options', 'libvirt.cpu_mode').update(read=False)
    with pytest.raises(InputError, match='defines but never reads '
                       r'\[libvirt\] cpu_mode'):
        plan('nested-host', 29)


def test_an_extra_spec_a_release_does_not_validate_refuses(edited):
    edited('specs', 'hw:cpu_policy')['enum'] = ['dedicated', 'shared']
    made = plan('cpu-pinning', 29)       # dedicated: accepted
    assert made.extra_specs['hw:cpu_policy'] == 'dedicated'
    edited('specs', 'hw:vif_multiqueue_enabled').update(validated=False)
    with pytest.raises(InputError, match='does not validate the extra spec '
                       'hw:vif_multiqueue_enabled'):
        plan('net-tuned', 29)


def test_filters_start_from_the_release_defaults(edited):
    record = edited('options', 'filter_scheduler.enabled_filters')
    record['default'] = ['ComputeFilter', 'AvailabilityZoneFilter']
    with pytest.raises(InputError, match='has no scheduler filter '
                       'AvailabilityZoneFilter'):
        plan('cpu-pinning', 29)
    nova_releases.table()['filters'][0]['known'].append(
        'AvailabilityZoneFilter')
    made = plan('cpu-pinning', 29)
    assert made.nova_conf['filter_scheduler']['enabled_filters'] == \
        'ComputeFilter,AvailabilityZoneFilter,NUMATopologyFilter'


@pytest.fixture
def reset_conf():
    from kvmtune import conf
    yield
    conf.load([])


def test_nova_conf_apply_for_a_release_that_lacks_it_writes_nothing(
        edited, tmp_path, capsys, reset_conf):
    # [nova] release in kvmtune.conf reaches nova-conf apply (via
    # kvmtune.tuning.plan.for_host): the refusal is one line, exit 2, and the
    # nova.conf is left byte for byte.
    edited('options', 'compute.cpu_shared_set').update(exists=False)
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text('[nova]\nrelease = 29\n')
    nova_conf = tmp_path / 'nova.conf'
    nova_conf.write_text('[DEFAULT]\ndebug = true\n')
    argv = ['--config-file', str(conf), 'nova-conf', 'apply', '--profile',
            'cpu-pinning', '--config', str(nova_conf), '--root', EPYC,
            '--service', 'all']
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count('\n') == 1
    assert 'Nova 29 (2024.1 Caracal) has no [compute] cpu_shared_set' in \
        captured.err
    assert nova_conf.read_text() == '[DEFAULT]\ndebug = true\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'kvmtune.conf', 'nova.conf']
