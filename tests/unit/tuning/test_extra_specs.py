"""kvmtune's extra-spec rules against Nova 34's own validators.

Every case below, and every extra spec kvmtune plans for every shipped
profile on every captured host (tests/fixtures/hosts, real machines
included), is also given to Nova's extra-spec validators
(nova/api/validation/extra_specs/validators.py: ``load_validators`` then
``validate``, what nova-api runs on a flavor's extra specs from
microversion 2.86) in Nova's own Python (tests.paths.NOVA_PYTHON, the
test cloud's virtualenv). kvmtune's copy of the rules (kvmtune/
extra_specs.py) must agree with Nova on each, except where kvmtune refuses
a key Nova allows but kvmtune never sets (KVMTUNE_ONLY).
"""

import json
import os
import subprocess

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning import extra_specs
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from tests import paths
from tests.unit.tuning.export import consumers

# Runs in Nova's Python: (name, value) pairs on stdin; Nova's version and,
# per pair, None (accepted) or Nova's ValidationError message.
NOVA_VALIDATES = r'''
import json, sys, warnings
warnings.simplefilter('ignore')
from nova import exception
from nova import version
from nova.api.validation.extra_specs import validators
validators.load_validators()
out = []
for name, value in json.load(sys.stdin):
    try:
        validators.validate(name, value)
        out.append(None)
    except exception.ValidationError as exc:
        out.append(str(exc))
print(json.dumps({'nova': version.version_string(), 'answers': out}))
'''

VALID = [
    ('hw:cpu_policy', 'dedicated'),
    ('hw:cpu_policy', 'mixed'),
    ('hw:cpu_thread_policy', 'isolate'),
    ('hw:emulator_threads_policy', 'share'),
    ('hw:mem_page_size', 'large'),
    ('hw:mem_page_size', 'small'),
    ('hw:mem_page_size', 'any'),
    ('hw:mem_page_size', '1GB'),
    ('hw:mem_page_size', '2MB'),
    ('hw:mem_page_size', '2048'),
    ('hw:mem_page_size', '1GiB'),
    ('hw:numa_nodes', '2'),
    ('hw:numa_cpus.0', '0-1,^1'),
    ('hw:numa_mem.1', '1024'),
    ('hw:vif_multiqueue_enabled', 'true'),
    ('hw:vif_multiqueue_enabled', 'No'),
    ('trait:CUSTOM_KVMTUNE_EPT', 'required'),
    ('trait:CUSTOM_KVMTUNE_NESTED', 'forbidden'),
    ('trait1:CUSTOM_X', 'required'),
    ('trait:HW_CPU_X86_VMX', 'required'),
    ('trait_grp-1:HW_CPU_X86_SVM', 'required'),
    ('resources:VCPU', '2'),
    ('resources:CUSTOM_KVMTUNE_SLOT', '1'),
]

INVALID = [
    ('hw:cpu_policy', 'pinned', 'dedicated, shared, mixed'),
    ('hw:cpu_thread_policy', 'avoid', 'prefer, isolate, require'),
    ('hw:emulator_threads_policy', 'shared', 'isolate'),
    ('hw:mem_page_size', '3Q', 'small, large, any'),
    ('hw:mem_page_size', 'huge', 'small, large, any'),
    ('hw:numa_nodes', '0', 'an integer >= 1'),
    ('hw:numa_nodes', 'two', 'an integer >= 1'),
    ('hw:numa_mem.0', '0', 'an integer >= 1'),
    ('hw:numa_cpus.0', 'a-b', 'a guest CPU list'),
    ('hw:vif_multiqueue_enabled', 'maybe', 'true or false'),
    ('trait:CUSTOM_KVMTUNE_EPT', 'yes', 'required, forbidden'),
    ('trait:CUSTOM_lower', 'required', '[A-Z0-9_]+'),
    ('trait:CUSTOM_', 'required', '[A-Z0-9_]+'),
    ('trait:HW_CPU_X86_EPT', 'required', 'CUSTOM_'),
    ('resources:WIDGETS', '1', 'CUSTOM_'),
    ('resources:VCPU', 'x', 'an integer'),
    ('hw:cpu_pinning', 'dedicated', "'hw' namespace"),
]

# Nova accepts these, kvmtune refuses them: keys it never sets.
KVMTUNE_ONLY = [
    ('quota:cpu_shares', '10', 'not an extra spec kvmtune sets'),
]


def nova_validates(pairs):
    """Nova's answer for each (name, value): None or its message."""
    done = subprocess.run(
        [consumers.NOVA_PYTHON, '-c', NOVA_VALIDATES],
        input=json.dumps(pairs), capture_output=True, text=True,
        timeout=300, cwd='/')
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer['nova'].startswith('34.'), answer['nova']
    assert len(answer['answers']) == len(pairs)
    return dict(zip(map(tuple, pairs), answer['answers']))


@pytest.fixture(scope='module')
def nova():
    """Nova's verdict on every case of this module, in one Nova run."""
    pairs = ([[n, v] for n, v in VALID] +
             [[n, v] for n, v, _ in INVALID + KVMTUNE_ONLY])
    return nova_validates(pairs)


@consumers.needs_nova
@pytest.mark.parametrize('name,value', VALID)
def test_valid_for_kvmtune_and_nova(nova, name, value):
    extra_specs.validate(name, value, source='p.yaml')
    assert nova[name, value] is None


@consumers.needs_nova
@pytest.mark.parametrize('name,value,hint', INVALID)
def test_invalid_for_kvmtune_and_nova(nova, name, value, hint):
    with pytest.raises(InputError, match=f'^p.yaml: {name}: ') as err:
        extra_specs.validate(name, value, source='p.yaml')
    line = err.value.line()
    assert line.startswith(f'p.yaml: {name}: ')
    assert hint in line
    assert '\n' not in line
    assert nova[name, value] is not None, (name, value)
    assert nova[name, value].startswith('Validation failed; ')


@consumers.needs_nova
@pytest.mark.parametrize('name,value,hint', KVMTUNE_ONLY)
def test_nova_allows_but_kvmtune_never_sets(nova, name, value, hint):
    with pytest.raises(InputError, match=hint):
        extra_specs.validate(name, value, source='p.yaml')
    assert nova[name, value] is None


def planned_extra_specs():
    """{(profile, host): extra specs} of every shipped profile on every
    captured host: the constructed shapes and the real machines."""
    dirs = profiles.search_dirs()
    names = sorted(profiles.available(dirs))
    hosts = [os.path.join(paths.HOSTS, d) for d in os.listdir(paths.HOSTS)]
    real = os.path.join(paths.HOSTS, 'real')
    hosts += [os.path.join(real, d) for d in os.listdir(real)]
    hosts = sorted(h for h in hosts if os.path.isdir(os.path.join(h, 'proc')))
    found = {}
    for host in hosts:
        facts = host_facts.resolve(root=host)
        for name in names:
            plan = plans.build_plan(profiles.load(name, dirs), facts)
            found[name, os.path.relpath(host, paths.HOSTS)] = \
                plan.extra_specs
    return found


@pytest.mark.slow
@consumers.needs_nova
def test_nova_accepts_every_planned_extra_spec():
    found = planned_extra_specs()
    real = {host for _, host in found if host.startswith('real/')}
    assert len(real) >= 15, sorted(real)
    pairs = sorted({(k, v) for specs in found.values()
                    for k, v in specs.items()})
    # the profiles plan the specs Nova checks hardest: pinning, pages,
    # NUMA, traits
    assert {'hw:cpu_policy', 'hw:mem_page_size'} <= {k for k, _ in pairs}
    assert any(k.startswith('trait:') for k, _ in pairs)
    verdicts = nova_validates([list(p) for p in pairs])
    rejected = {f'{profile} on {host}': {
        k: verdicts[k, v] for k, v in specs.items() if verdicts[k, v]}
        for (profile, host), specs in found.items()}
    assert {where: r for where, r in rejected.items() if r} == {}
    print(f'\nNova accepts all {len(pairs)} distinct extra specs planned '
          f'for {len(found)} (profile, host) pairs, {len(real)} real hosts')


def test_profile_key_is_named_when_given():
    with pytest.raises(InputError, match="'3M3' is not valid") as err:
        extra_specs.validate('hw:mem_page_size', '3M3', source='x.yaml',
                             key='hugepages.params.page_size')
    assert err.value.key == 'hugepages.params.page_size'
    assert 'hw:mem_page_size' in err.value.line()


def test_names_with_groups_follow_nova_pattern():
    spec = extra_specs.CUSTOM_TRAIT
    assert spec.problem('required') is None
    assert extra_specs.find('trait' + 'g' * 65 + ':CUSTOM_A')[0] is None


def test_required_traits_are_the_flavors_own_required_ones():
    specs = {'trait:CUSTOM_KVMTUNE_EPT': 'required',
             'trait:HW_CPU_X86_SVM': 'forbidden',
             'trait1:CUSTOM_GROUPED': 'required',
             'hw:cpu_policy': 'dedicated'}
    assert extra_specs.required_traits(specs) == {'CUSTOM_KVMTUNE_EPT'}
