"""The real consumers of kvmtune's exports, run as subprocesses.

- Nova (oslo.config with Nova's registered options, Nova's provider config
  loader): the test cloud's virtualenv, $KVMTUNE_NOVA_PYTHON to override;
- ansible-core with kolla-ansible's merge_configs: /opt/kvmtune-consumers/
  venv; OpenStack-Ansible's config_template (PyPI's 2.1.1 does not load
  under ansible-core 2.19, which kolla-ansible needs): ansible-core 2.18 in
  /opt/kvmtune-consumers/osa-venv (tools/bootstrap makes both;
  $KVMTUNE_CONSUMERS_VENV / $KVMTUNE_OSA_VENV to override);
- tuned: Debian's package, its Python modules in /usr/lib/python3.

A test whose consumer is missing is skipped, saying which one and how to
install it.
"""

import glob
import json
import os
import subprocess

import pytest

from kvmtune import cli
from tests import paths
from tests.paths import HOSTS

HOST_DIR = os.path.join(HOSTS, 'intel-2s-smt-ept-1g')
HOST = 'compute-intel-1'       # the fixture's /proc/sys/kernel/hostname
PROFILE = 'pinned-hugepages-ept'

NOVA_PYTHON = paths.NOVA_PYTHON
CONSUMERS = os.environ.get('KVMTUNE_CONSUMERS_VENV',
                           '/opt/kvmtune-consumers/venv')
OSA_VENV = os.environ.get('KVMTUNE_OSA_VENV',
                          '/opt/kvmtune-consumers/osa-venv')
TUNED_PATH = '/usr/lib/python3/dist-packages'


def _has_nova():
    return os.access(NOVA_PYTHON, os.X_OK) and subprocess.run(
        [NOVA_PYTHON, '-c', 'import nova.conf'],
        capture_output=True).returncode == 0


needs_nova = pytest.mark.skipif(
    not _has_nova(), reason=f'no Nova at {NOVA_PYTHON} (kvmtune cloud '
    'install, or set KVMTUNE_NOVA_PYTHON)')
needs_ansible = pytest.mark.skipif(
    not os.path.exists(os.path.join(CONSUMERS, 'bin', 'ansible-playbook')),
    reason=f'no {CONSUMERS} (tools/bootstrap makes it)')
needs_osa = pytest.mark.skipif(
    not os.path.exists(os.path.join(OSA_VENV, 'bin', 'ansible-playbook')),
    reason=f'no {OSA_VENV} (tools/bootstrap makes it)')
needs_tuned = pytest.mark.skipif(
    not os.path.isdir(os.path.join(TUNED_PATH, 'tuned'))
    or not os.path.isdir('/usr/lib/tuned/cpu-partitioning'),
    reason='no tuned (apt-get install tuned; tools/bootstrap does)')


def export(target, output, *extra, profile=PROFILE, host=HOST,
           root=HOST_DIR):
    argv = ['export', '--profile', profile, '--target', target,
            '--root', root, '--output', str(output)]
    if host:
        argv += ['--host', host]
    assert cli.main(argv + list(extra)) == 0


def plan(profile=PROFILE, root=HOST_DIR):
    from kvmtune import facts as host_facts
    from kvmtune.tuning import plan as plans
    from kvmtune.tuning import profiles

    facts = host_facts.resolve(root=root)
    return plans.build_plan(
        profiles.load(profile, profiles.search_dirs()), facts), facts


# Runs in Nova's Python: load the config the way a Nova service does and
# print the options asked for, as the strings nova.conf spells them.
_NOVA_READ = r'''
import json, os, sys
import nova.conf
from oslo_config import cfg
ask = json.loads(sys.argv[1])
CONF = nova.conf.CONF
kwargs = {}
if ask['files'] is not None:
    kwargs = {'default_config_files': ask['files'],
              'default_config_dirs': ask['dirs']}
CONF(args=[], project='nova', prog=ask['prog'], **kwargs)

def spell(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return ','.join(f'{k}:{v}' for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ','.join(spell(v) for v in value)
    return str(value)

out = {'files': list(CONF.config_file), 'dirs': list(CONF.config_dir or [])}
for section, option in ask['keys']:
    group = CONF if section == 'DEFAULT' else getattr(CONF, section)
    value = getattr(group, option)
    opt = (CONF._get_opt_info(option, None if section == 'DEFAULT'
                              else section)['opt'])
    out[f'{section}.{option}'] = (
        None if value is None else
        [spell(v) for v in value] if opt.multi else spell(value))
print(json.dumps(out))
'''


def nova_reads(keys, prog='nova-compute', files=None, dirs=None,
               home=None):
    """What Nova's oslo.config gives for ``keys`` [(section, option)].

    With ``files`` None, oslo.config finds the files itself (its default
    config files and dirs, from $HOME: ~/.nova/nova.conf,
    ~/.nova/nova.conf.d/, ~/.nova/<prog>.conf.d/).
    """
    env = dict(os.environ)
    if home is not None:
        env['HOME'] = str(home)
    done = subprocess.run(
        [NOVA_PYTHON, '-c', _NOVA_READ, json.dumps(
            {'keys': keys, 'prog': prog, 'files': files, 'dirs': dirs})],
        capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def planned(conf):
    """{'section.option': value} of a plan's nova.conf part."""
    return {f'{section}.{option}': value
            for section, options in conf.items()
            for option, value in options.items()}


_PROVIDER_READ = r'''
import json, sys
from nova.compute import provider_config
found = provider_config.get_provider_configs(sys.argv[1])
print(json.dumps({key: sorted(value.get('traits', {}).get('additional', []))
                  for key, value in found.items()}))
'''


def nova_provider_configs(directory):
    """{provider: [traits]} as nova.compute.provider_config loads them."""
    done = subprocess.run([NOVA_PYTHON, '-c', _PROVIDER_READ,
                           str(directory)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def ansible_playbook(playbook, inventory, cwd, action_plugins,
                     venv=CONSUMERS):
    env = dict(os.environ)
    env.update({
        'ANSIBLE_ACTION_PLUGINS': action_plugins,
        'ANSIBLE_LIBRARY': os.path.join(venv, 'share', 'ansible',
                                        'plugins', 'modules'),
        'ANSIBLE_LOCAL_TEMP': os.path.join(str(cwd), '.ansible-tmp'),
        'ANSIBLE_HOME': os.path.join(str(cwd), '.ansible'),
        'ANSIBLE_NOCOLOR': '1',
        'ANSIBLE_RETRY_FILES_ENABLED': '0',
        'ANSIBLE_PYTHON_INTERPRETER': os.path.join(venv, 'bin',
                                                   'python'),
    })
    done = subprocess.run(
        [os.path.join(venv, 'bin', 'ansible-playbook'), '-i',
         str(inventory), str(playbook)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def kolla_share():
    found = glob.glob(os.path.join(CONSUMERS, 'share', 'kolla-ansible',
                                   'ansible'))
    return found[0]
