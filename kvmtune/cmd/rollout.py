"""Roll a profile out over a fleet of compute hosts, batch by batch.

  kvmtune rollout --inventory hosts.ini --profile pinned-hugepages --check
  kvmtune rollout --inventory hosts.ini --profile pinned-hugepages \\
      --os-cloud admin --batch 2 --limit computes

Plans every host first, as --check does (a bad host stops it before any
host is disabled), then runs the kvmtune.fleet collection's playbook
(rollout.yml, shipped in this package) with ansible-core (the fleet
extra). Each batch of --batch hosts goes: preflight, disable the
nova-compute service (reason "kvmtune rollout RUN: PROFILE"), drain it
(live or cold migration), apply (nova.conf and kvmtune boot apply),
reboot when a boot-time change is pending or else restart nova-compute,
the verify gate (host, novacompute and cloud layers PASS), enable, the
textfile. A failed host stops the rollout before the next batch. --mode
in-place reboots with the guests on the host (Nova restarts them), --mode
stage stops after apply. One progress line per host and step; --state
FILE makes a stopped rollout go on where it stopped: a host it left
disabled after its apply step gets the plan it applied there again, and
its gate judges that plan (a pool that came up short at boot fails again
until it is fixed), unless --replan HOST plans it again. A host the plan
finds nothing to do on is left alone (not disabled, drained or
rebooted): a finished rollout run again makes nothing.

--check runs nothing on any host and changes nothing: it plans every
host (the files and nova.conf options it would change, reboot or
restart, and why: cmdline, hugepages, module) and its batches. With
--os-cloud it also makes the cloud's preflight of each batch (GET
requests only: every host known to Nova, room for a batch's guests on
the rest of the fleet, in-place holds); without, it names the cloud
checks it skipped. An inventory host may be a capture tree
(``kvmtune_root=DIR ansible_connection=local``), as --root elsewhere.

Exit status: 0 the plan (or the rollout) went through; 1 --check found a
batch the preflight refuses; 2 a host that does not plan, cannot be
reached or Nova does not know, a bad inventory, no credentials or no
ansible-core (one line; nothing disabled, nothing changed), or a
rollout that stopped (the host and step named). doc/source/admin/
rollout.md is the operator's guide.
"""

import argparse
from typing import Any

from kvmtune import cmd
from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS

HELP = 'Roll a profile out over an Ansible inventory of compute hosts.'
COLUMNS = ('batch', 'host', 'action', 'reasons', 'changes')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvmtune.rollout import vocabulary

    parser.add_argument('--inventory', required=True, metavar='INVENTORY',
                        help='an Ansible inventory (any ansible-inventory '
                             '-i reads)')
    cmd.add_profile(parser)
    cmd.add_os_cloud(parser, required=False,
                     help='cloud name in clouds.yaml (an admin one): '
                          'disable, drain, enable and the cloud checks; '
                          'without it --check skips the cloud checks')
    parser.add_argument('--limit', default='all', metavar='PATTERN',
                        help='the inventory hosts to roll out to, an '
                             'Ansible pattern (default: all; kolla-ansible: '
                             'compute, OpenStack-Ansible: compute_hosts)')
    parser.add_argument('--batch', type=int, default=1, metavar='N',
                        help='hosts per batch (Ansible serial; default 1)')
    parser.add_argument('--mode', choices=vocabulary.MODES, default='drain',
                        help='drain: migrate the guests away first '
                             '(default); in-place: reboot with them; '
                             'stage: write, reboot nothing')
    parser.add_argument('--run-id', metavar='ID',
                        help='the run\'s id, in the disabled reason '
                             '(default: a new one)')
    parser.add_argument('--state', metavar='FILE',
                        help='the rollout\'s state file: run again with '
                             'it, the rollout goes on where it stopped '
                             '(its run id, the steps each host has done, '
                             'the plan each host\'s apply step applied)')
    parser.add_argument('--replan', action='append', default=[],
                        metavar='HOST',
                        help='with --state: forget the plan the run applied '
                             'to HOST, a host it left disabled (repeatable): '
                             'its apply step plans it again from the '
                             'profile on its facts now (a huge page pool '
                             'as the host booted it, unless the profile '
                             'sizes it), applies that, and its gate judges '
                             'it')
    parser.add_argument('--check', action='store_true',
                        help='show the plan (preflight, batches, changes '
                             'per host, reboot or restart); change nothing')
    output.add_format(parser, columns=False,
                      formats=('table', 'json', 'yaml'))


def _reasons(reasons: dict[str, list[str]]) -> str:
    return '; '.join(f'{reason}: {" ".join(items)}'
                     for reason, items in reasons.items() if items)


def _changes(changes: list[dict[str, Any]]) -> str:
    shown = []
    for change in changes:
        if change['kind'] == 'nova.conf':
            what = (f"[{change['section']}] {change['option']}"
                    if 'option' in change else str(change.get('diff')))
            shown.append(f'nova.conf {what}')
        elif change['kind'] == 'command':
            shown.append('run ' + ' '.join(map(str, change['argv'])))
        else:
            shown.append(f"write {change['path']}")
    return ', '.join(shown) or '-'


def run(args: argparse.Namespace) -> int:
    from kvmtune.rollout import check
    from kvmtune.rollout import inventory
    from kvmtune.rollout import local
    from kvmtune.rollout import run as rollout

    if args.check and args.replan:
        from kvmtune.errors import InputError
        raise InputError('--check forgets no plan', key='--replan',
                         fix='run the rollout with --state and --replan, '
                             'or --check alone')
    # --check prepares its planning while ansible-inventory runs
    early = local.Early(args.profile, args.config_file or ()) \
        if args.check else None
    hosts = inventory.load(args.inventory, args.limit, meanwhile=early)
    if not args.check:
        return rollout.run(args.inventory, hosts, profile=args.profile,
                           limit=args.limit, batch=args.batch,
                           mode=args.mode, cloud=args.os_cloud,
                           run_id=args.run_id, state_file=args.state,
                           replan=args.replan,
                           config_files=args.config_file or ())
    found = check.plan(hosts, args.profile, path=args.inventory,
                       batch=args.batch, mode=args.mode, cloud=args.os_cloud,
                       config_files=args.config_file or (), early=early)
    # the preflight refused a batch: the rollout would stop there; a host
    # that does not plan: every one is listed, then one line, exit 2
    status = EXIT_DIFFERS if found.refused else 0
    unplanned = found.unplanned_error()
    if output.format_of(args) != 'table':
        output.emit(args, [], [], document=found.to_dict())
        if unplanned is not None:
            raise unplanned
        return status
    rows = [(h.batch or '-', h.host, h.action, _reasons(h.reasons),
             _changes(h.changes)) for h in found.hosts]
    output.emit(args, COLUMNS, rows)
    for host in found.hosts:
        for note in host.notes:
            print(f'note: {host.host}: {note}')
    for skipped in found.skipped:
        print(f"skipped ({skipped['why']}): {skipped['check']}: "
              f"{skipped['what']}")
    for report in found.reports:
        print(f"preflight {','.join(report['batch'])}: "
              + ('ok' if report['ok'] else
                 'REFUSED: ' + '; '.join(report['refusals'])))
    summary = found.to_dict()['summary']
    more = ''.join(f", {summary[a]} {a}" for a in ('unknown', 'unplanned')
                   if summary[a])
    print(f"{summary['hosts']} hosts in {len(found.batches)} batches of "
          f"{args.batch}: {summary['reboot']} reboot, {summary['restart']} "
          f"restart, {summary['none']} unchanged{more}; --check changed "
          'nothing')
    if unplanned is not None:
        raise unplanned
    return status
