#!/usr/bin/python
# Copyright: kvmtune developers
# Apache License 2.0 (https://www.apache.org/licenses/LICENSE-2.0)
"""kvmtune.fleet.host: a compute host's kvmtune reads and writes."""

from __future__ import annotations

DOCUMENTATION = r"""
module: host
short_description: Read or apply a kvmtune profile on a compute host
version_added: 0.1.0
author: kvmtune developers (@openstack)
description:
  - Runs the host's own kvmtune, once per call, for what the rollout needs
    of the host; the host side of kvmtune rollout (the kvmtune.fleet
    roles C(facts) and C(apply) call it).
  - O(state=read) reads the host's facts (C(kvmtune host inspect)) and
    what the profile or plan would change (C(kvmtune boot apply
    --dry-run), C(kvmtune nova-conf apply --dry-run)); it never changes
    the host and reports C(changed=false), with C(pending) saying whether
    anything would change.
  - O(state=applied) writes nova.conf (C(kvmtune nova-conf apply --service
    compute)) and the boot-time changes (C(kvmtune boot apply)). In check
    mode it runs the same commands with C(--dry-run) and reports what
    would change, nova.conf's diff included (C(--diff)).
  - It never reboots or restarts anything; C(reboot_required) and
    C(nova_conf.changed) say what the caller should do (the shape of
    linux-system-roles' kernel_settings module, which reports
    C(reboot_required) and leaves the reboot to its caller).
options:
  state:
    description: Read only, or apply.
    type: str
    choices: [read, applied]
    default: read
  profile:
    description: The profile (a name or a file on the host), planned on
      the host's facts. One of O(profile) and O(plan) is required.
    type: str
  plan:
    description: A plan as C(kvmtune plan -f json) prints one, applied as
      it is (the plan a rollout applied before).
    type: dict
  root:
    description: The host's tree.
    type: path
    default: /
  nova_conf:
    description: The nova.conf nova-compute reads, under O(root). Left
      alone when it is not there.
    type: path
    default: /etc/nova/nova.conf
  command:
    description: The kvmtune command on the host.
    type: list
    elements: str
    default: [kvmtune]
  config_files:
    description: kvmtune.conf files to read (C(kvmtune --config-file)).
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    description: Runs the same commands with C(--dry-run) and reports
      what would change.
    support: full
  diff_mode:
    description: Returns nova.conf's unified diff.
    support: full
"""

EXAMPLES = r"""
- name: What the profile would change on the host
  kvmtune.fleet.host:
    profile: pinned-hugepages
  register: preview

- name: Apply it (check mode predicts nova.conf's change too)
  kvmtune.fleet.host:
    state: applied
    profile: pinned-hugepages
  register: applied
"""

RETURN = r"""
pending:
  description: Something would change, or a boot-time change is pending.
  type: bool
  returned: always
reboot_required:
  description: A boot-time change is written (or would be) and not booted.
  type: bool
  returned: always
reasons:
  description: Why a reboot is required, by reason (cmdline, hugepages,
    module), only the reasons with something pending.
  type: dict
  returned: always
plan:
  description: The plan applied (or that would be), as C(kvmtune plan -f
    json) prints one.
  type: dict
  returned: always
facts:
  description: The host's facts (C(kvmtune host inspect -f json)).
  type: dict
  returned: always
boot:
  description: C(kvmtune boot apply -f json)'s answer.
  type: dict
  returned: always
nova_conf:
  description: nova.conf's part; C(present), C(changed), C(diff) (the
    unified diff of what is, or would be, written).
  type: dict
  returned: always
"""

import json  # noqa: E402
import os  # noqa: E402
from typing import Any  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def _run(module: Any, argv: list[str], stdin: str | None = None) -> str:
    rc, out, err = module.run_command(argv, data=stdin, binary_data=False)
    if rc != 0:
        lines = [line for line in (err or out or '').splitlines()
                 if line.strip()]
        module.fail_json(msg=lines[-1] if lines else f'{argv[0]} failed',
                         rc=rc, stdout=out, stderr=err, cmd=argv)
    return str(out)


def _json(module: Any, argv: list[str],
          stdin: str | None = None) -> Any:
    out = _run(module, argv, stdin)
    try:
        return json.loads(out)
    except ValueError:
        module.fail_json(msg=f'not JSON from {" ".join(argv[:4])}',
                         stdout=out)
    return None


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', choices=['read', 'applied'],
                       default='read'),
            profile=dict(type='str'),
            plan=dict(type='dict'),
            root=dict(type='path', default='/'),
            nova_conf=dict(type='path', default='/etc/nova/nova.conf'),
            command=dict(type='list', elements='str', default=['kvmtune']),
            config_files=dict(type='list', elements='path', default=[]),
        ),
        required_one_of=[('profile', 'plan')],
        mutually_exclusive=[('profile', 'plan')],
        supports_check_mode=True,
    )
    params = module.params
    dry = params['state'] == 'read' or module.check_mode
    base = list(params['command']) + [
        f'--config-file={name}' for name in params['config_files']]
    if params['plan']:
        what, stdin = ['--plan', '-'], json.dumps(params['plan'])
    else:
        what, stdin = ['--profile', params['profile']], None
    dry_run = ['--dry-run'] if dry else []
    root = params['root']
    conf = os.path.join(root, params['nova_conf'].lstrip('/'))

    facts = _json(module, base + ['host', 'inspect', '--root', root,
                                  '-f', 'json'])
    nova = {'present': os.path.isfile(conf), 'path': params['nova_conf'],
            'changed': False, 'diff': ''}
    if nova['present']:
        out = _run(module, base + ['nova-conf', 'apply'] + what + [
            '--root', root, '--config', conf, '--service', 'compute']
            + dry_run, stdin)
        lines = out.splitlines()
        nova['diff'] = '\n'.join(
            line for line in lines
            if line.startswith(('---', '+++', '@@', '+', '-', ' ')))
        nova['changed'] = any(
            (line.startswith('+') and not line.startswith('+++'))
            or (line.startswith('-') and not line.startswith('---'))
            for line in lines) if dry else any(
            line.startswith('wrote ') for line in lines)
    boot = _json(module, base + ['boot', 'apply'] + what + [
        '--root', root, '-f', 'json'] + dry_run, stdin)
    written = [f for f in boot.get('files') or ()
               if f.get('status') in ('wrote', 'would write')]
    reasons = {key: value
               for key, value in (boot.get('reasons') or {}).items() if value}
    # the boot loader's commands are listed whether they ran or not
    boot_changed = bool(written) or any(
        command.get('ran') for command in boot.get('commands') or ())
    pending = bool(boot_changed or reasons or nova['changed'])
    result = dict(
        changed=params['state'] == 'applied' and (
            boot_changed or nova['changed']),
        pending=pending,
        reboot_required=bool(boot.get('reboot_required')) or bool(reasons),
        reasons=reasons, plan=boot.get('plan') or {}, facts=facts,
        boot=boot, nova_conf=nova)
    if module._diff and nova['diff']:
        result['diff'] = [{'before_header': conf, 'after_header': conf,
                           'prepared': nova['diff'] + '\n'}]
    module.exit_json(**result)


if __name__ == '__main__':
    main()
