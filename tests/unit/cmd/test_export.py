"""``kvmtune export``: idempotent, and every bad input is one line, exit 2,
nothing written."""

import json
import os

import pytest

from kvmtune import cli
from kvmtune.tuning.export import TARGETS
from tests.unit.tuning.export import consumers


def export(output, *extra, target='kolla', host=consumers.HOST,
           profile=consumers.PROFILE):
    argv = ['export', '--profile', profile, '--target', target, '--root',
            consumers.HOST_DIR, '--output', str(output)]
    if host:
        argv += ['--host', host]
    return cli.main(argv + list(extra))


def tree(root):
    """{path: (bytes, mtime_ns, inode)} of every file under root."""
    found = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            info = os.stat(path)
            with open(path, 'rb') as handle:
                found[path] = (handle.read(), info.st_mtime_ns, info.st_ino)
    return found


def one_line_error(capsys, *words):
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('kvmtune: error: '), err
    assert 'Traceback' not in err
    for word in words:
        assert word in err, err


@pytest.mark.parametrize('target', sorted(TARGETS))
def test_second_run_changes_no_byte(tmp_path, capsys, target):
    out = tmp_path / 'out'
    assert export(out, target=target) == 0
    first = tree(out)
    assert first
    capsys.readouterr()
    assert export(out, target=target) == 0
    assert tree(out) == first
    text = capsys.readouterr()
    assert 'created' not in text.out
    assert text.err == (f'{target}: 0 file(s) written, {len(first)} '
                        'unchanged\n')


def test_unknown_target(tmp_path, capsys):
    assert export(tmp_path / 'out', target='tripleo') == 2
    one_line_error(capsys, "unknown target 'tripleo'", 'oslo-dropin')
    assert not (tmp_path / 'out').exists()


def test_host_that_is_not_the_compute_of_the_facts(tmp_path, capsys):
    assert export(tmp_path / 'out', host='controller-1') == 2
    one_line_error(capsys, 'made on compute-intel-1, not on controller-1')
    assert not (tmp_path / 'out').exists()


def test_host_without_kvm_is_not_a_compute(tmp_path, capsys):
    facts = consumers.plan()[1]
    facts['virt'].update(kvm_device=False, mechanism=None)
    facts['cpu']['flags'] = [f for f in facts['cpu']['flags']
                             if f not in ('vmx', 'svm')]
    facts_file = tmp_path / 'controller.json'
    facts_file.write_text(json.dumps(facts))
    assert cli.main(['export', '--profile', 'cpu-pinning', '--target',
                     'kolla', '--facts', str(facts_file), '--output',
                     str(tmp_path / 'out')]) == 2
    one_line_error(capsys, 'not a KVM compute node')
    assert not (tmp_path / 'out').exists()


def test_bad_host_name(tmp_path, capsys):
    assert export(tmp_path / 'out', host='../etc') == 2
    one_line_error(capsys, "not a host name: '../etc'")


def test_plan_with_withheld_values_is_refused(tmp_path, capsys):
    # Facts that cannot support a CPU split (no thread sibling groups): the
    # plan withholds the CPU sets and isolcpus, and no tool gets a file.
    facts = consumers.plan()[1]
    facts['cpu']['thread_siblings'] = []
    facts_file = tmp_path / 'doubtful.json'
    facts_file.write_text(json.dumps(facts))
    out = tmp_path / 'out'
    assert cli.main(['export', '--profile', 'cpu-pinning', '--target',
                     'kolla', '--facts', str(facts_file), '--output',
                     str(out)]) == 2
    one_line_error(capsys, 'withheld', 'no thread sibling group')
    assert not out.exists()


INJECTING_PROFILE = '''\
name: injecting
description: a parameter that tries to write a section of its own
source: tests/unit/cmd/test_export.py
tuners:
  - name: disk_io
    params:
      images_type: lvm
      images_volume_group: "vg0\\n[DEFAULT]\\ntransport_url = rabbit://x"
'''


@pytest.mark.parametrize('target', sorted(TARGETS))
def test_a_parameter_with_a_newline_never_reaches_a_file(tmp_path, capsys,
                                                         target):
    # Before: oslo-dropin and kolla wrote "[DEFAULT] transport_url = ..."
    # into the override file, a section and option nobody planned.
    profile = tmp_path / 'injecting.yaml'
    profile.write_text(INJECTING_PROFILE)
    out = tmp_path / 'out'
    assert export(out, target=target, profile=str(profile)) == 2
    one_line_error(capsys, 'images_volume_group', 'control character')
    assert 'rabbit' not in capsys.readouterr().err
    assert not out.exists()


def test_a_host_name_ending_in_a_newline_is_refused(tmp_path, capsys):
    # Before: '^...$' matched "compute-1\n" and named a file with a
    # newline in it.
    out = tmp_path / 'out'
    assert export(out, host=consumers.HOST + '\n') == 2
    one_line_error(capsys, 'not a host name', '--host')
    assert not out.exists()


def test_a_vmx_host_with_kvm_unloaded_is_a_compute(tmp_path, capsys):
    # Before: export refused it ("no VT-x/AMD-V in its facts") while plan
    # accepted it: the capture was made with kvm_intel unloaded.
    facts = consumers.plan()[1]
    assert 'vmx' in facts['cpu']['flags']
    facts['virt'].update(kvm_device=False, mechanism=None)
    facts_file = tmp_path / 'compute.json'
    facts_file.write_text(json.dumps(facts))
    assert cli.main(['export', '--profile', 'cpu-pinning', '--target',
                     'oslo-dropin', '--facts', str(facts_file), '--output',
                     str(tmp_path / 'out')]) == 0
    assert (tmp_path / 'out').is_dir()


@pytest.mark.parametrize('extra,words', [
    (['--service-cmdline', '/usr/bin/nova-compute "--config-file'],
     ['--service-cmdline', 'quote it']),
    (['--service-cmdline', 'journalctl -u nova-compute'],
     ['not the command line of a Nova service']),
    (['--service-cmdline', '/usr/bin/nova-compute', '--service-cmdline',
      'python3 /usr/bin/nova-compute'], ['nova-compute is given twice']),
    (['--service-unit', 'nova-compute.service'],
     ['--service-unit needs a --service-cmdline']),
    (['--service-cmdline', '/usr/bin/nova-compute', '--service-cmdline',
      '/usr/bin/nova-scheduler', '--service-unit', 'x.service'],
     ['--service-unit names one unit']),
    (['--service-cmdline', 'nova-compute --config-file /etc/nova/nova.conf',
      '--nova-conf', os.path.join(os.path.dirname(__file__), '..', '..',
                                  'fixtures', 'novaconf', 'devstack.conf')],
     ['absolute path']),
])
def test_bad_service_command_lines(tmp_path, capsys, extra, words):
    out = tmp_path / 'out'
    assert export(out, *extra, target='oslo-dropin') == 2
    one_line_error(capsys, *words)
    assert not out.exists()


def test_service_unit_names_the_systemd_drop_in(tmp_path, capsys):
    base = tmp_path / 'nova.conf'
    base.write_text('[compute]\ncpu_dedicated_set = 4-7\n')
    out = tmp_path / 'out'
    assert export(out, '--nova-conf', str(base), '--service-cmdline',
                  '/usr/bin/nova-compute --config-file /etc/nova/nova.conf',
                  '--service-unit', 'openstack-nova-compute.service',
                  target='oslo-dropin') == 0
    assert (out / 'etc/systemd/system/openstack-nova-compute.service.d/'
            '50-kvmtune.conf').exists()
    assert 'restart openstack-nova-compute.service' in capsys.readouterr().out
