"""Plan, verify, boot apply and rollout --check agree on a command line.

Every host tree of tests/fixtures/hosts (the constructed ones and every
real capture) with every boot side of tests/fixtures/boot laid over it,
for every profile kvmtune ships: the plan's kernel arguments judged by
verify's host layer (its ``cmdline`` rows), by ``boot apply --dry-run``
(its cmdline and hugepages reasons) and by the rollout's per-host
planning (kvmtune.rollout.check.plan, as ``rollout --check`` calls it)
say the same. A host whose booted line gives the plan is left alone
(nothing staged for the boot loader, no reboot); a host that drifts gets
one staged line, one argument per key (on GRUB hosts the line bash
gives sourcing the files boot apply wrote, as grub-mkconfig sources
them), which, booted (the line becomes /proc/cmdline of the tree), passes
verify and leaves boot apply nothing to stage. The staged line of a BLS
host is also checked against the grubby commands boot apply gives,
applied to each entry's options the way grubby-bls does (rhboot/grubby,
grubby-bls: update_args).
"""

import glob
import os
import subprocess

import pytest

from kvmtune.boot import apply
from kvmtune.boot import loader
from kvmtune.boot import record
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.facts import cmdline
from kvmtune.rollout import check
from kvmtune.rollout import inventory
from kvmtune.tuning import plan as plans
from kvmtune import verify
from tests import hosttrees
from tests import paths

HOSTS = sorted(
    os.path.relpath(os.path.dirname(proc), paths.HOSTS)
    for pattern in ('*/proc', 'real/*/proc')
    for proc in glob.glob(os.path.join(paths.HOSTS, pattern)))
BOOTS = sorted(name for name in os.listdir(hosttrees.BOOT)
               if os.path.isdir(os.path.join(hosttrees.BOOT, name)))
PROFILES = sorted(name[:-len('.yaml')] for name in os.listdir(
    os.path.join(os.path.dirname(plans.__file__), '..', 'data', 'profiles'))
    if name.endswith('.yaml'))
BOOT_REASONS = ('cmdline', 'hugepages')


def _sourced(root, name, plan):
    """What GRUB's shell gives, boot apply's files written: grub-mkconfig
    sources /etc/default/grub, then (Debian) grub.d/*.cfg, and boots
    GRUB_CMDLINE_LINUX then GRUB_CMDLINE_LINUX_DEFAULT. The tree's files
    are put back after."""
    default = root / 'etc' / 'default'
    saved = hosttrees.snapshot(default)
    apply.apply(None, root=str(root), plan=plan)
    script = '. ./grub; ' + ('for f in grub.d/*.cfg; do . "$f"; done; '
                             if name == 'grub-debian' else '') + \
        'echo "$GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT"'
    done = subprocess.run(['bash', '-c', script], cwd=default,
                          capture_output=True, text=True, check=True)
    for path in default.rglob('*'):
        if path.is_file() and str(path.relative_to(default)) not in saved:
            path.unlink()
    for rel, data in saved.items():
        (default / rel).write_bytes(data)
    (root / record.PATH).unlink(missing_ok=True)
    return ' '.join(done.stdout.split())


def _cmdline_rows(plan, root):
    found = verify.run([plan], verify.Context(root=str(root)), ('host',))
    return [row for row in found if row.name.startswith('cmdline ')]


def _rollout(root, profile):
    host = inventory.Host('h', {'kvmtune_root': str(root),
                                'ansible_connection': 'local'})
    return check.plan([host], profile, path='inventory').hosts[0]


def _unplanned(root, profile):
    """--check's refusal of a host that does not plan: it lists the host
    as unplanned (kvmtune/rollout/check.py), and its one line is the
    host's error."""
    host = inventory.Host('h', {'kvmtune_root': str(root),
                                'ansible_connection': 'local'})
    found = check.plan([host], profile, path='inventory')
    assert [h.action for h in found.hosts] == ['unplanned']
    return found.unplanned_error().line()


def _boot(root, line):
    (root / 'proc' / 'cmdline').write_text(line + '\n')


@pytest.mark.parametrize('boot', BOOTS)
@pytest.mark.parametrize('host', HOSTS)
def test_plan_verify_boot_apply_and_rollout_check_agree(
        tmp_path, host, boot):
    root = hosttrees.make(tmp_path / 'host', boot, capture=host)
    proc = root / 'proc' / 'cmdline'
    booted_line = proc.read_text().strip() if proc.exists() else None
    facts = host_facts.gather(str(root), probe_kvm=False)
    for profile in PROFILES:
        if booted_line is not None:
            _boot(root, booted_line)
        try:
            plan, = plans.for_host([profile], facts=facts)
        except InputError as refused:
            # withheld or refused: boot apply refuses it too, and the
            # rollout lists the host as unplanned with the same reason
            with pytest.raises(InputError):
                apply.apply(profile, root=str(root), dry_run=True)
            assert refused.problem in _unplanned(root, profile)
            continue
        rows = _cmdline_rows(plan, root)
        if booted_line is None and plan.kernel_args:
            # a capture without proc/cmdline: unknown, never a pass, and
            # refused where it would stage
            assert {row.status for row in rows} == {verify.UNKNOWN}
            with pytest.raises(InputError, match='booted command line is '
                                                 'unknown'):
                apply.apply(profile, root=str(root), dry_run=True)
            assert 'unknown' in _unplanned(root, profile)
            continue
        passes = all(row.status == verify.PASS for row in rows)
        staged = apply.apply(profile, root=str(root), dry_run=True)
        reasons = {r: v for r, v in staged.reasons.items()
                   if r in BOOT_REASONS and v}
        assert passes == (not reasons), (profile, rows, reasons)
        rolled = _rollout(root, profile)
        assert {r: v for r, v in rolled.reasons.items()
                if r in BOOT_REASONS and v} == reasons, profile
        if passes:
            assert staged.cmdline == [] and not any(
                'grub' in path for path, status in staged.files
                if status == 'would write'), profile
            assert rolled.action != 'reboot'
            if not staged.files and not staged.reasons:
                # nothing to boot; a plan with nova.conf options is
                # unknown to --check where the tree has no nova.conf
                # (kvmtune/rollout/check.py), never "none"
                assert rolled.action == (
                    'unknown' if plan.nova_conf else 'none'), (
                    profile, rolled.changes)
            continue
        assert rolled.action == 'reboot'
        assert staged.cmdline, profile
        if staged.loader != 'grubby-bls':
            assert [_sourced(root, staged.loader, plan)] == \
                staged.cmdline, profile
        if staged.loader == 'grubby-bls':
            # GRUB boots $tuned_params from its environment block
            env = loader._grubenv(str(root))
            for (_, words), line in zip(loader._bls_entries(str(root)),
                                        staged.cmdline):
                by_grubby = hosttrees.grubby_bls(' '.join(words),
                                                 staged.commands)
                assert loader._expand(by_grubby.split(), env) == \
                    line.split(), profile
        for line in staged.cmdline:
            kept = cmdline.read(line)
            for key in {cmdline.key_of(a) for a in plan.kernel_args} - {
                    'hugepagesz', 'hugepages'}:
                assert len(kept.of_key(key)) == 1, (profile, line)
        # the simulated boot: the staged line is what the host runs
        _boot(root, staged.cmdline[0])
        rows = _cmdline_rows(plan, root)
        assert all(row.status == verify.PASS for row in rows), (
            profile, [(r.name, r.live) for r in rows])
        again = apply.apply(None, root=str(root), plan=plan, dry_run=True)
        assert not any(again.reasons.get(r) for r in BOOT_REASONS), (
            profile, again.reasons)
