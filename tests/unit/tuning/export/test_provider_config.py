"""provider-config target, proven by Nova's own loader.

nova.compute.provider_config.get_provider_configs() is what nova-compute
runs on [compute] provider_config_location at start; it validates the
schema (identification, CUSTOM_ traits only) and returns the providers.
"""

import subprocess

from kvmtune.tuning import traits
from tests.unit.tuning.export import consumers


@consumers.needs_nova
def test_nova_loads_the_traits(tmp_path):
    out = tmp_path / 'out'
    consumers.export('provider-config', out)
    loaded = consumers.nova_provider_configs(
        out / 'etc/nova/provider_config')
    _, facts = consumers.plan()
    wanted = sorted(traits.from_facts(facts))
    assert wanted                      # the fixture host has some
    assert loaded == {'$COMPUTE_NODE': wanted}


@consumers.needs_nova
def test_nova_rejects_what_it_must_reject(tmp_path):
    # The loader is strict: a file kvmtune did not get right would fail.
    bad = tmp_path / 'bad'
    bad.mkdir()
    (bad / 'x.yaml').write_text(
        "meta: {schema_version: '1.0'}\nproviders:\n"
        "- identification: {uuid: $COMPUTE_NODE}\n"
        "  traits: {additional: [HW_CPU_X86_VMX]}\n")
    done = subprocess.run(
        [consumers.NOVA_PYTHON, '-c',
         'import sys; from nova.compute import provider_config as p; '
         'p.get_provider_configs(sys.argv[1])', str(bad)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and 'only custom traits' in done.stderr


def test_host_files_come_along(tmp_path):
    out = tmp_path / 'out'
    consumers.export('provider-config', out)
    assert (out / 'etc/modprobe.d/kvm.conf').read_text().endswith(
        'options kvm_intel ept=1\n')
    assert 'isolcpus=' in (out / 'etc/default/grub.d/50-kvmtune.cfg'
                           ).read_text()
