"""``kvmtune plan``: the plan of a profile on a captured host or a facts
file, as text (section by section, each option with the service that reads
it) or JSON; exit 1 when it has a FAIL check; bad input is one line,
exit 2. The plan itself is tested in
tests/unit/tuning/test_plan.py."""

import json
import os

import pytest

from kvmtune import cli
from kvmtune import facts as host_facts
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
AMD = os.path.join(paths.HOSTS, 'amd-epyc-npt')
PLAN_KEYS = {'profile', 'facts_source', 'nova_conf', 'kernel_args',
             'nova_release',
             'modprobe', 'extra_specs', 'owned_extra_specs', 'checks',
             'notes', 'hugepages', 'nova_conf_services', 'withheld'}


def test_plan_command_json_on_a_captured_root(capsys):
    assert cli.main(['plan', '--profile', 'pinned-hugepages-ept', '--root',
                     INTEL, '--format', 'json']) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == PLAN_KEYS
    assert data['facts_source'] == INTEL
    assert data['nova_conf']['compute']['cpu_shared_set'] == '0,20,40,60'


def test_plan_command_text_from_a_facts_file(tmp_path, capsys):
    facts_file = tmp_path / 'amd.json'
    facts_file.write_text(json.dumps(host_facts.gather(AMD)))
    # a FAIL check (no /dev/vhost-net): the plan is shown, exit 1
    assert cli.main(['plan', '--profile', 'net-tuned', '--facts',
                     str(facts_file)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f'Profile net-tuned on {facts_file}\n')
    assert '  [libvirt]\n  rx_queue_size = 1024\n' in out
    assert '  hw:vif_multiqueue_enabled=true\n' in out
    assert 'vhost-net-device' in out
    assert out.rstrip().endswith('fail')


def test_plan_text_lists_multi_valued_options_line_by_line(capsys):
    assert cli.main(['plan', '--profile', 'hugepages', '--root',
                     INTEL]) == 0
    out = capsys.readouterr().out
    assert ('  reserved_huge_pages = node:0,size:1GB,count:1\n'
            '  reserved_huge_pages = node:1,size:1GB,count:1\n') in out
    assert 'removed if present' not in out


def test_plan_text_names_the_service_that_reads_each_option(capsys):
    # INTEL has 1G pages, no 2M pool: FAIL hugepage-pool, exit 1
    assert cli.main(['plan', '--profile', 'pinned-hugepages', '--root',
                     INTEL]) == 1
    lines = capsys.readouterr().out.splitlines()

    def read_by(option):
        last = max(i for i, line in enumerate(lines)
                   if line.startswith(f'  {option} = '))
        return lines[last + 1]

    assert read_by('reserved_huge_pages') == '      read by: nova-compute'
    assert read_by('enabled_filters') == (
        '      read by: nova-scheduler, nova-conductor')
    assert read_by('disable_fallback_pcpu_query') == (
        '      read by: nova-scheduler')


@pytest.mark.parametrize('argv,expected', [
    (['--profile', 'nope'], "unknown profile 'nope'"),
    (['--profile', 'baseline', '--root', '/nonexistent'],
     'error: /nonexistent: '),
    (['--profile', 'baseline', '--facts', '/nonexistent.json'],
     'cannot read facts'),
])
def test_plan_command_bad_input_exits_2(argv, expected, capsys):
    assert cli.main(['plan'] + argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and expected in err


def test_plan_text_of_a_profile_that_changes_nothing(capsys):
    assert cli.main(['plan', '--profile', 'baseline', '--root', INTEL,
                     '--nova-release', '29']) == 0
    assert capsys.readouterr().out == (
        f'Profile baseline on {INTEL}\n'
        'for Nova 29\n'
        '\n'
        'nova.conf:\n  (no change)\n\n'
        'kernel arguments:\n  (no change)\n\n'
        'modprobe.d:\n  (no change)\n\n'
        'flavor extra specs:\n  (none)\n\n'
        'checks:\n  (none)\n\n'
        '0 pass, 0 warn, 0 fail\n')


def test_plan_exits_1_with_a_fail_check_and_0_without(capsys):
    """The exit status says FAIL (errors.EXIT_DIFFERS), the text shows
    the plan all the same; a plan with no FAIL check exits 0."""
    pvm = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')
    assert cli.main(['plan', '--profile', 'pinned-hugepages-ept',
                     '--root', pvm]) == 1
    out = capsys.readouterr().out
    assert 'FAIL ept ept-enabled' in out
    assert out.rstrip().endswith('2 fail')
    assert cli.main(['plan', '--profile', 'cpu-pinning', '--root',
                     pvm]) == 0
    assert capsys.readouterr().out.rstrip().endswith('0 fail')
