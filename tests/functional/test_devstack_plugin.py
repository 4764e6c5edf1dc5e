"""The DevStack plugin's phases against the test cloud, then undone.

The plugin runs under tests/devstack_shim (the DevStack functions it
calls, checked against DevStack's documentation in
tests/unit/devstack/test_shim.py); under the real DevStack scripts it runs
in tests/functional/test_devstack_real.py. Each phase is sourced as
stack.sh does: ``source plugin.sh stack PHASE``; unstack and clean run
without PYTHON, as unstack.sh and clean.sh do.

nova.conf is a copy of the compute's file (the running compute is shared
with other tests); flavors and traits are the real cloud's. The huge page
pool is the real kernel's (node 0, 2 MB); modprobe files go to a
temporary directory.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning import pages
from tests.devstack_shim.run import Stack
from tests.devstack_shim.run import venv_over
from tests.functional.conftest import ADMIN
from tests.functional.conftest import find_flavor
from tests.functional.conftest import REPO
from tests import paths

PROFILES = ['pinned-hugepages-ept', 'nested-host']
HUGEPAGES = 16  # more 2 MB pages on node 0 than it had
NOVA_PYTHON = paths.NOVA_PYTHON


def plan(profile):
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'plan', '--profile', profile,
         '--format', 'json'], capture_output=True, text=True)
    # 1: planned, with FAIL checks on this host (no EPT under TCG)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def expected_traits():
    from kvmtune import facts
    from kvmtune.tuning import traits

    return set(traits.from_facts(facts.gather()))


def kvmtune_traits(admin):
    from kvmtune.tuning.traits import KVMTUNE_TRAITS

    found = {}
    for hypervisor in admin.compute.hypervisors():
        body = admin.placement.get(
            f'/resource_providers/{hypervisor.id}/traits',
            microversion='1.6').json()
        found[hypervisor.id] = set(body['traits']) & KVMTUNE_TRAITS
    return found


@pytest.fixture
def stack(tmp_path, test_cloud, base_flavor):
    venv = tmp_path / 'venv'
    python = venv_over(venv)
    nova_conf = tmp_path / 'nova.conf'
    shutil.copy(test_cloud.nova_conf, nova_conf)
    tempest_conf = tmp_path / 'tempest.conf'
    tempest_conf.write_text('[DEFAULT]\nlog_dir = /tmp\n\n'
                            '[compute]\nmax_microversion = latest\n')
    (tmp_path / 'modprobe.d').mkdir()
    pool = pages.read_count(0, 2048)
    env = {
        'PATH': f'{venv}/bin:{os.environ["PATH"]}',
        'HOME': os.environ.get('HOME', '/root'),
        'OS_CLIENT_CONFIG_FILE': os.environ['OS_CLIENT_CONFIG_FILE'],
        'SHIM_PYTHON': sys.executable, 'PYTHON': str(python),
        # how unstack.sh and clean.sh find it (no PYTHON there)
        'GLOBAL_VENV': 'True', 'DEVSTACK_VENV': str(venv),
        'DEST': str(tmp_path), 'KVMTUNE_DIR': str(REPO),
        # a single node: n-api makes it the controller (flavors, image,
        # tempest.conf are made there)
        'ENABLED_SERVICES': 'n-api,n-cpu,tempest',
        'NOVA_CONF': str(nova_conf), 'TEMPEST_CONFIG': str(tempest_conf),
        'KVMTUNE_PROFILES': ' '.join(PROFILES),
        'KVMTUNE_BASE_FLAVOR': base_flavor.name,
        'KVMTUNE_OS_CLOUD': ADMIN,
        'KVMTUNE_ENABLE_NESTED': 'True',
        'KVMTUNE_MODPROBE_DIR': str(tmp_path / 'modprobe.d'),
        'KVMTUNE_ALLOCATE_HUGEPAGES': 'True',
        'KVMTUNE_HUGEPAGES': f'0:2M:{pool + HUGEPAGES}',
        'KVMTUNE_IMAGE_DIR': str(tmp_path / 'no-images'),
    }
    if os.path.exists(NOVA_PYTHON):
        # nova-conf apply checks values with Nova's own option types.
        env['KVMTUNE_NOVA_PYTHON'] = NOVA_PYTHON
    stack = Stack(env)
    stack.python = python
    yield stack


def test_phases_leave_documented_state_and_undo_it(stack, tmp_path, admin,
                                                   base_flavor):
    nova_conf = pathlib.Path(stack.env['NOVA_CONF'])
    tempest_conf = pathlib.Path(stack.env['TEMPEST_CONFIG'])
    state = tmp_path / 'data' / 'kvmtune'
    original_nova = nova_conf.read_text()
    original_tempest = tempest_conf.read_text()
    original_pages = pages.read_count(0, 2048)
    traits_before = kvmtune_traits(admin)
    plans = {name: plan(name) for name in PROFILES}

    out = stack('stack', 'install')
    assert 'Installing kvmtune' in out
    # setup_develop: the venv now runs kvmtune from this tree.
    where = subprocess.run(
        [str(stack.python), '-c', 'import kvmtune; print(kvmtune.__file__)'],
        capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(REPO))

    try:
        stack('stack', 'post-config')
        ini = inifile.IniFile(nova_conf.read_text())
        for built in plans.values():
            for section, options in built['nova_conf'].items():
                for option, value in options.items():
                    values = value if isinstance(value, list) else [value]
                    if (section, option) == ('filter_scheduler',
                                             'enabled_filters'):
                        # extended, not owned: the compute's stay first
                        assert 'NUMATopologyFilter' in \
                            ini.get(section, option).split(',')
                        continue
                    assert ini.get_all(section, option) == values, \
                        (section, option)
        # cpu_models only where a plan names one (nested-host on a TCG
        # host: an emulated SVM CPU model), never one left from before
        models = [b['nova_conf'].get('libvirt', {}).get('cpu_models')
                  for b in plans.values()]
        assert ini.get_all('libvirt', 'cpu_models') == \
            [m for m in models if m]
        assert (state / 'changes.json').exists()
        assert pages.read_count(0, 2048) == original_pages + HUGEPAGES
        # Only the files the plans ask for (none on a host without VMX).
        wanted_modprobe = {os.path.basename(p) for b in plans.values()
                           for p in b['modprobe']}
        assert set(os.listdir(tmp_path / 'modprobe.d')) == wanted_modprobe

        stack('stack', 'extra')
        for name, built in plans.items():
            flavor = find_flavor(admin, f'{base_flavor.name}.{name}')
            assert flavor is not None, name
            specs = admin.compute.fetch_flavor_extra_specs(flavor).extra_specs
            assert {k: specs.get(k) for k in built['extra_specs']} == \
                built['extra_specs']
        traits_after = kvmtune_traits(admin)
        assert set().union(*traits_after.values()) == expected_traits()

        stack('stack', 'test-config')
        ini = inifile.IniFile(tempest_conf.read_text())
        assert ini.get('kvmtune', 'flavors') == ','.join(
            f'{p}:{base_flavor.name}.{p}' for p in sorted(PROFILES))
        assert ini.get('kvmtune', 'traits_tagged') == 'True'
        assert ini.get('kvmtune', 'host_traits') == \
            ','.join(sorted(expected_traits()))
        assert ini.get('compute', 'max_microversion') == 'latest'

        # A second run of every phase changes nothing more.
        for phase in ('post-config', 'extra', 'test-config'):
            stack('stack', phase)
        assert tempest_conf.read_text().count('[kvmtune]') == 1
    finally:
        try:
            stack('unstack')
        finally:
            stack('clean')

    for name in plans:
        assert find_flavor(admin, f'{base_flavor.name}.{name}') is None
    assert kvmtune_traits(admin) == traits_before
    assert nova_conf.read_text() == original_nova
    assert tempest_conf.read_text() == original_tempest
    assert pages.read_count(0, 2048) == original_pages
    assert os.listdir(tmp_path / 'modprobe.d') == []
    assert not (state / 'changes.json').exists()
