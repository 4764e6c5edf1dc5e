"""kvmtune.openstack.planning: the flavor side of a profile's plan, what
flavor apply, diff and remove and the Tempest plugin ask for."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.openstack import planning
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
PVM = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')
# a real capture without MemTotal: the hugepages tuner withholds its pool
NO_MEMTOTAL = os.path.join(paths.HOSTS, 'real', 'x86_64-epyc_7451')


def test_the_flavor_plan_of_a_profile_on_a_captured_host():
    plan = planning.plan_for('pinned-hugepages-ept', root=INTEL)
    assert plan.profile == 'pinned-hugepages-ept'
    assert plan.extra_specs == {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer',
        'hw:emulator_threads_policy': 'share', 'hw:mem_page_size': 'large',
        'trait:CUSTOM_KVMTUNE_EPT': 'required'}
    # every key the profile's tuners own, wanted or not
    assert set(plan.extra_specs) <= set(plan.owned_extra_specs)
    assert isinstance(plan.owned_extra_specs, tuple)
    with pytest.raises(AttributeError):
        plan.profile = 'other'      # frozen


def test_values_are_strings_as_nova_stores_them():
    plan = planning.plan_for('net-tuned', root=INTEL)
    assert plan.extra_specs == {'hw:vif_multiqueue_enabled': 'true'}
    assert all(isinstance(v, str) for v in plan.extra_specs.values())


def test_a_facts_file_gives_the_same_plan(tmp_path):
    facts = tmp_path / 'intel.json'
    facts.write_text(json.dumps(host_facts.gather(INTEL)))
    assert planning.plan_for('cpu-pinning', facts_file=str(facts)) == \
        planning.plan_for('cpu-pinning', root=INTEL)


def test_the_host_decides_the_specs():
    # no EPT on the PVM guest: the ept tuner still requires its trait,
    # and the plan says so through its checks, not by dropping the key
    on_pvm = planning.plan_for('pinned-hugepages-ept', root=PVM)
    assert on_pvm.extra_specs['trait:CUSTOM_KVMTUNE_EPT'] == 'required'
    assert planning.plan_for('baseline', root=INTEL).extra_specs == {}


def test_a_profile_file_and_config_dirs(tmp_path):
    profile = tmp_path / 'mine.yaml'
    profile.write_text('description: mine\nsource: doc/sources.md [S4]\n'
                       'tuners:\n  - vhost_net\n')
    assert planning.plan_for(str(profile), root=INTEL).profile == 'mine'
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text(f'[DEFAULT]\nprofile_dirs = {tmp_path}\n')
    assert planning.plan_for('mine', root=INTEL,
                             config_files=[str(conf)]).extra_specs == {
        'hw:vif_multiqueue_enabled': 'true'}


def test_a_withheld_plan_is_refused_before_any_request():
    with pytest.raises(InputError, match='withheld'):
        planning.plan_for('hugepages', root=NO_MEMTOTAL)


def test_an_unknown_profile_is_one_line():
    with pytest.raises(InputError, match="unknown profile 'nope'"):
        planning.plan_for('nope', root=INTEL)
