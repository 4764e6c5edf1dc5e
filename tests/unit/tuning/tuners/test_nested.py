"""The nested tuner's plan per virt type, and Nova's own start-up check
(``LibvirtDriver._check_cpu_compatibility``, nova/virt/libvirt/driver.py,
run by ``init_host``) on the nova.conf ``nova-conf apply`` writes from it.

Nova runs in its own Python (tests.paths.NOVA_PYTHON) against a real
libvirt opened in-process (``qemu:///embed``, no daemon), so the CPU model
names are libvirt's own for this machine's architecture.
"""

import dataclasses
import subprocess

import pytest

from kvmtune import facts as host_facts
from kvmtune.tuning.novaconf import update
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from kvmtune.tuning.tuners import base
from kvmtune.tuning.tuners import nested
from tests import paths
from tests.unit.tuning.export.consumers import needs_nova
from tests.unit.tuning.export.consumers import NOVA_PYTHON

PVM = f'{paths.HOSTS}/pvm-guest-2cpu'
AMD = f'{paths.HOSTS}/amd-epyc-npt'
INTEL = f'{paths.HOSTS}/intel-2s-smt-ept-1g'

# Nova's check, as init_host runs it, on the config file given; prints
# "ok" or the exception's class and message.
_NOVA = r'''
import sys, tempfile
import libvirt
libvirt.virEventRegisterDefaultImpl()
import nova.conf
from nova import exception
from nova.virt.libvirt import driver, host
CONF = nova.conf.CONF
CONF(['--config-file', sys.argv[1]], project='nova')
root = tempfile.mkdtemp()
uri = 'qemu:///embed?root=' + root
drv = driver.LibvirtDriver.__new__(driver.LibvirtDriver)
drv.cpu_models_mapping = {}
drv._host = host.Host(uri)
drv._host._wrapped_conn = libvirt.open(uri)
try:
    drv._check_cpu_compatibility()
    print('ok', CONF.libvirt.virt_type, CONF.libvirt.cpu_mode,
          ','.join(CONF.libvirt.cpu_models),
          ','.join(CONF.libvirt.cpu_model_extra_flags))
except (exception.Invalid, exception.InvalidCPUInfo) as exc:
    print('refused', type(exc).__name__, str(exc).replace('\n', ' '))
'''


def plan_for(root, **params):
    profile = profiles.load('nested-host', profiles.search_dirs())
    if params:
        refs = [dataclasses.replace(ref, params=dict(ref.params or {},
                                                     **params))
                if ref.name == 'nested' else ref
                for ref in profile.tuner_refs]
        profile = dataclasses.replace(profile, tuner_refs=refs)
    return plans.build_plan(profile, host_facts.gather(root))


def nova_check(tmp_path, plan, virt_type):
    """Nova's verdict on the nova.conf nova-conf apply writes for plan."""
    path = tmp_path / 'nova.conf'
    path.write_text(f'[libvirt]\nvirt_type = {virt_type}\n')
    update.apply_plan(plan, str(path), 'compute', nova_python=NOVA_PYTHON)
    done = subprocess.run([NOVA_PYTHON, '-c', _NOVA, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_tcg_host_gets_a_custom_amd_model_with_svm():
    plan = plan_for(PVM)   # PVM: no vmx/svm, virt_type qemu here
    assert plan.nova_conf['libvirt'] == {
        'cpu_mode': 'custom', 'cpu_models': 'EPYC',
        'cpu_model_extra_flags': 'svm,npt',
        'disk_cachemodes': 'file=none,block=none'}
    assert plan.modprobe == {}
    assert plan.extra_specs == {'trait:CUSTOM_KVMTUNE_NESTED': 'required'}
    (check,) = [c for c in plan.checks if c.name == 'nested-enabled']
    assert check.status == base.PASS
    assert 'emulated' in check.message and 'svm' in check.message


def test_kvm_hosts_pass_the_cpu_through_and_turn_nested_on():
    amd = plan_for(AMD)
    assert amd.nova_conf['libvirt']['cpu_mode'] == 'host-passthrough'
    assert 'cpu_models' not in amd.nova_conf['libvirt']
    assert amd.modprobe == {
        plans.MODPROBE_PATH: 'options kvm_amd nested=1\n'}
    intel = plan_for(INTEL, cpu_mode='host-model')
    assert intel.nova_conf['libvirt']['cpu_model_extra_flags'] == 'vmx'
    assert intel.modprobe == {
        plans.MODPROBE_PATH: 'options kvm_intel nested=1\n'}


def test_virt_type_param_overrides_the_host():
    forced = plan_for(AMD, virt_type='qemu')
    assert forced.nova_conf['libvirt']['cpu_mode'] == 'custom'
    assert forced.modprobe == {}


@pytest.mark.parametrize('usable,expected', [
    (True, 'kvm'), (None, 'kvm'), (False, 'qemu')])
def test_auto_follows_the_kvm_probe(usable, expected):
    facts = host_facts.gather(AMD)
    facts['virt']['kvm_usable'] = usable
    assert nested.Nested({}, facts).virt_type() == expected


@pytest.mark.slow
@needs_nova
def test_nova_accepts_the_tcg_config(tmp_path):
    said = nova_check(tmp_path, plan_for(PVM), 'qemu')
    assert said == 'ok qemu custom EPYC svm,npt'


@pytest.mark.slow
@needs_nova
def test_nova_accepts_the_kvm_config_of_a_capture(tmp_path):
    said = nova_check(tmp_path, plan_for(AMD), 'kvm')
    assert said == 'ok kvm host-passthrough'


@pytest.mark.slow
@needs_nova
def test_nova_refuses_a_model_libvirt_does_not_know(tmp_path):
    # The check above is Nova's real one: an unknown model fails it.
    said = nova_check(tmp_path, plan_for(PVM, cpu_model='NoSuchCPU'),
                      'qemu')
    assert said.startswith('refused InvalidCPUInfo')
    assert 'NoSuchCPU' in said
