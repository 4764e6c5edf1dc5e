"""The DevStack plugin's phases against the test cloud, then undone.

DevStack itself is not installable from the package registries; the plugin
runs under tests/devstack_shim (the DevStack functions it calls, checked
against DevStack's documentation in tests/unit/devstack/test_shim.py).
Each phase is sourced as stack.sh does: ``source plugin.sh stack PHASE``.

nova.conf is a copy of the compute's file (the running compute is shared
with other tests); flavors and traits are the real cloud's. vm.nr_hugepages
is the real kernel knob; modprobe and sysctl files go to temporary
directories.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.devstack_shim.run import Stack, venv_over
from tests.functional.conftest import ADMIN, REPO, find_flavor

PROFILES = ['pinned-hugepages-ept', 'nested-host']
HUGEPAGES = 16
NOVA_PYTHON = '/opt/kvmtune-cloud/venv/bin/python3'


def plan(profile):
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'plan', '--profile', profile,
         '--format', 'json'], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def expected_traits():
    from kvmtune import facts
    from kvmtune import traits

    return set(traits.from_facts(facts.gather()))


def kvmtune_traits(admin):
    from kvmtune.traits import KVMTUNE_TRAITS

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
    for name in ('modprobe.d', 'sysctl.d'):
        (tmp_path / name).mkdir()
    env = {
        'PATH': f'{venv}/bin:{os.environ["PATH"]}',
        'HOME': os.environ.get('HOME', '/root'),
        'OS_CLIENT_CONFIG_FILE': os.environ['OS_CLIENT_CONFIG_FILE'],
        'SHIM_PYTHON': sys.executable, 'PYTHON': str(python),
        'DEST': str(tmp_path), 'KVMTUNE_DIR': str(REPO),
        'ENABLED_SERVICES': 'n-cpu,tempest',
        'NOVA_CONF': str(nova_conf), 'TEMPEST_CONFIG': str(tempest_conf),
        'KVMTUNE_PROFILES': ' '.join(PROFILES),
        'KVMTUNE_BASE_FLAVOR': base_flavor.name,
        'KVMTUNE_OS_CLOUD': ADMIN,
        'KVMTUNE_ENABLE_NESTED': 'True',
        'KVMTUNE_MODPROBE_DIR': str(tmp_path / 'modprobe.d'),
        'KVMTUNE_ALLOCATE_HUGEPAGES': 'True',
        'KVMTUNE_HUGEPAGES_2M': str(HUGEPAGES),
        'KVMTUNE_SYSCTL_DIR': str(tmp_path / 'sysctl.d'),
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
    nr_hugepages = pathlib.Path('/proc/sys/vm/nr_hugepages')
    original_pages = nr_hugepages.read_text()
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
        from kvmtune.devstack import inifile
        for built in plans.values():
            for section, options in built['nova_conf'].items():
                for option, value in options.items():
                    values = value if isinstance(value, list) else [value]
                    assert inifile.get(str(nova_conf), section, option) == \
                        values, (section, option)
        assert (state / 'changes.json').exists()
        assert int(nr_hugepages.read_text()) == HUGEPAGES
        sysctl = tmp_path / 'sysctl.d' / '90-kvmtune-hugepages.conf'
        assert f'vm.nr_hugepages = {HUGEPAGES}' in sysctl.read_text()
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
        from kvmtune.devstack import inifile as ini
        flavors = ini.get(str(tempest_conf), 'kvmtune', 'flavors')
        assert flavors == [','.join(f'{p}:{base_flavor.name}.{p}'
                                    for p in sorted(PROFILES))]
        assert ini.get(str(tempest_conf), 'kvmtune', 'traits_tagged') == \
            ['True']
        assert ini.get(str(tempest_conf), 'kvmtune', 'host_traits') == \
            [','.join(sorted(expected_traits()))]
        assert ini.get(str(tempest_conf), 'compute',
                       'max_microversion') == ['latest']

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
    # DevStack has inidelete but no section delete: the header stays.
    assert tempest_conf.read_text() == original_tempest + '\n[kvmtune]\n'
    assert nr_hugepages.read_text() == original_pages
    assert os.listdir(tmp_path / 'modprobe.d') == []
    assert os.listdir(tmp_path / 'sysctl.d') == []
    assert not (state / 'changes.json').exists()
