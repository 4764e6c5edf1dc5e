"""The gate: it passes only when every check of the host, novacompute and
cloud layers is PASS; a DRIFT or UNKNOWN keeps the host disabled with one
line naming the first such check and its fix."""

import os

from kvmtune import facts as host_facts
from kvmtune.rollout import gate
from kvmtune.tuning import plan
from kvmtune import verify
from tests import paths

CAPTURE = os.path.join(paths.HOSTS, 'real', '32intel64-2p8co2t+8ve')


def _check(status, name='kernel arg', **kw):
    return verify.Check(layer='host', name=name, expected='x',
                        live='y' if status != verify.UNKNOWN else None,
                        status=status, **kw)


def test_all_pass_passes():
    verdict = gate.Verdict('c2', [_check(verify.PASS)] * 3)
    assert verdict.passed and verdict.line() == '3 checks PASS'


def test_no_check_is_no_pass():
    verdict = gate.Verdict('c2', [])
    assert not verdict.passed and 'on nothing' in verdict.line()


def test_a_drift_names_the_check_and_its_fix():
    verdict = gate.Verdict('c2', [
        _check(verify.PASS), _check(verify.DRIFT, 'hugepages node 0',
                                    fix='kvmtune pages apply'),
        _check(verify.UNKNOWN, reason='no nova-compute process')])
    assert not verdict.passed
    assert verdict.line() == ('host hugepages node 0: expected x, live y '
                              '(and 1 more); the host stays disabled (fix: '
                              'kvmtune pages apply)')
    assert verdict.to_dict()['passed'] is False


def test_unknown_is_not_a_pass():
    verdict = gate.Verdict('c2', [_check(verify.UNKNOWN,
                                         reason='no libvirt')])
    assert not verdict.passed
    assert verdict.line().startswith('host kernel arg: unknown (no libvirt)')


def test_a_host_not_booted_with_the_plan_does_not_pass():
    # a real capture that never booted the profile's kernel arguments
    facts = host_facts.gather(CAPTURE)
    plans = plan.for_host(['pinned-hugepages'], facts=facts)
    verdict = gate.gate(plans, verify.Context(root=CAPTURE, facts=facts),
                        ['host'])
    assert verdict.checks and not verdict.passed
    assert 'the host stays disabled' in verdict.line()
    assert {c.layer for c in verdict.checks} == {'host'}


def _short_pool_host(tmp_path):
    """A test fleet host's tree (tests/fleet.py, the capture of two NUMA
    nodes) with a 2M pool of 256 pages, pinned-hugepages staged on it by
    boot apply, then the SIMULATED reboot with the pool planted short:
    the kernel reserved half the pages its command line asks for. The
    plan boot apply staged (applied), and the host's facts now."""
    from kvmtune.boot import apply
    from kvmtune.facts import kernel
    from tests import fleet
    from tests import hosttrees

    hosts = fleet.Fleet(tmp_path, ['c3'], captures=(fleet.CAPTURES[1],))
    host = hosts.hosts[0]
    hosttrees.make(host.root, host.distro, host.capture)
    hosts._write_boot_id(host)
    hosts._set_pools(host, kernel.parse_args('hugepagesz=2M hugepages=256'))
    applied = apply.apply('pinned-hugepages', root=str(host.root)).plan
    assert applied.hugepages == [
        {'node': 0, 'size_kb': 2048, 'count': 128},
        {'node': 1, 'size_kb': 2048, 'count': 128}]
    hosts.plant_short_pool('c3')
    assert 'hugepages=256' in hosts.reboot('c3').split()
    return str(host.root), applied, host_facts.gather(str(host.root))


def test_the_gate_judges_the_plan_applied_not_one_made_after_the_reboot(
        tmp_path):
    root, applied, facts = _short_pool_host(tmp_path)
    verdict = gate.gate([applied], verify.Context(root=root, facts=facts),
                        ['host'])
    assert verdict.line() == (
        'host pages node0 2M: expected >= 128, live 64 (64 free, 0 in use) '
        '(and 1 more); the host stays disabled (fix: the kernel could not '
        'reserve the pool at boot (the booted command line asks for '
        'hugepagesz=2M hugepages=256): free the memory it needs at boot '
        '(fewer boot-time reservations, such as crashkernel=) and reboot, '
        'or plan the host again with a smaller pool (a plan made now keeps '
        'the pool the host has) and boot that (shrunk since the boot: '
        'kvmtune pages apply 0:2M:128))')
    # planned again from the facts after the reboot, the short pool is
    # kept as it came up (the hugepages tuner keeps a pool a host has):
    # the command line, which is right, would look wrong
    again = gate.gate(plan.for_host(['pinned-hugepages'], facts=facts),
                      verify.Context(root=root, facts=facts), ['host'])
    assert again.line().startswith('host cmdline hugepages (2M): expected '
                                   'hugepages=128, live hugepages=256;')


def test_rollout_step_gate_takes_the_plan_applied(tmp_path, monkeypatch):
    import io
    import json

    from kvmtune.errors import EXIT_DIFFERS
    from kvmtune.rollout import steps

    root, applied, _ = _short_pool_host(tmp_path)
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(
        json.dumps(applied.to_dict()).encode())))
    result = steps.make('gate', None, ['c3'], 'R1',
                        profiles=['pinned-hugepages'], root=root,
                        plan_file='-', layers=['host'])
    assert result.exit_code == EXIT_DIFFERS
    assert result.line.startswith('host pages node0 2M: expected >= 128, '
                                  'live 64 ')
    assert 'could not reserve the pool at boot' in result.line


def _boot_apply(root, *what, stdin=None, monkeypatch=None):
    """kvmtune boot apply -f json on the tree ``root``: its document."""
    import contextlib
    import io
    import json

    from kvmtune import cli

    if stdin is not None:
        monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(
            json.dumps(stdin).encode())))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(['boot', 'apply', *what, '--root', root, '-f',
                         'json']) == 0
    return json.loads(out.getvalue())


def test_a_run_again_applies_and_judges_the_plan_it_recorded(
        tmp_path, monkeypatch):
    """The rollout run again for the host whose pool came up short, with
    nothing fixed: the apply role stages the plan the run recorded (boot
    apply --plan -), which the host booted (no reboot), and the gate
    judges that plan: the same line. The profile planned again on the
    facts after the reboot (what the apply step did before, and what
    --replan HOST does) takes the short pool as planned and stages its
    command line: a reboot, and a gate that would pass."""
    from kvmtune.rollout import state

    root, applied, facts = _short_pool_host(tmp_path)
    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='pinned-hugepages', run_id='R1')
    for step in ('preflight', 'disable', 'drain'):
        run.mark('c3', step)
    run.record_plan('c3', applied.to_dict())
    first = gate.gate([applied], verify.Context(root=root, facts=facts),
                      ['host']).line()

    recorded = state.load(path).applied('c3')
    staged = _boot_apply(root, '--plan', '-', stdin=recorded,
                         monkeypatch=monkeypatch)
    assert staged['plan'] == recorded
    assert staged['reboot_required'] is False
    assert [f for f in staged['files'] if f['status'] != 'unchanged'] == []
    again = gate.gate([plan.from_dict(staged['plan'])],
                      verify.Context(root=root, facts=facts), ['host'])
    assert not again.passed and again.line() == first

    replanned = _boot_apply(root, '--profile', 'pinned-hugepages',
                            '--dry-run')
    assert replanned['plan']['hugepages'] == [
        {'node': 0, 'size_kb': 2048, 'count': 64},
        {'node': 1, 'size_kb': 2048, 'count': 64}]
    # the smaller pool on the command line: a reboot
    assert replanned['reasons']['hugepages'] == [
        'default_hugepagesz=2M', 'hugepagesz=2M', 'hugepages=128',
        '-hugepages=256']
    assert gate.gate([plan.from_dict(replanned['plan'])],
                     verify.Context(root=root, facts=facts),
                     ['host']).line().startswith('host cmdline hugepages')
