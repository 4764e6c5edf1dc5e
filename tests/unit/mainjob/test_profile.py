"""The main job's tuned profile, chosen from the host's facts."""

import os

import pytest

from kvmtune import facts
from kvmtune.mainjob import compute
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
PROFILE_DIR = os.path.join(paths.REPO, 'kvmtune', 'data', 'profiles')


def host_facts(name):
    return facts.gather(os.path.join(HOSTS, name))


@pytest.mark.parametrize('host, profile', [
    ('intel-2s-smt-ept-1g', 'pinned-hugepages-ept'),
    ('amd-epyc-npt', 'pinned-hugepages-ept'),
    ('pvm-guest-2cpu', 'pinned-hugepages'),
])
def test_tuned_profile_follows_ept(host, profile):
    chosen, why = compute.tuned_profile(host_facts(host))
    assert chosen == profile
    assert os.path.exists(os.path.join(PROFILE_DIR, profile + '.yaml'))


def test_why_names_the_missing_ept():
    _, why = compute.tuned_profile(host_facts('pvm-guest-2cpu'))
    assert 'no EPT/NPT' in why and 'CUSTOM_KVMTUNE_EPT' in why
    assert '\n' not in why


def test_why_names_ept():
    _, why = compute.tuned_profile(host_facts('intel-2s-smt-ept-1g'))
    assert 'has EPT/NPT' in why


def test_named_profile_wins(tmp_path):
    setup = compute.local_setup(host_facts('pvm-guest-2cpu'), None, 1, 256,
                                'cpu-pinning')
    assert (setup.profile, setup.why) == ('cpu-pinning',
                                          'named by --tuned-profile')
    assert setup.pinned and setup.pages is None
