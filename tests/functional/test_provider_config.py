"""kvmtune export --target provider-config against the test cloud's Nova.

The exported provider config is given to the running nova-compute through
``[compute] provider_config_location`` in its own nova.conf; after a
compute restart Nova itself has put kvmtune's traits on the compute node's
resource provider. kvmtune sends no request at all (no Placement write):
the traits come from nova-compute.
"""

import time

import pytest

from kvmtune import facts as host_facts
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning import traits
from tests.functional.conftest import INTEL_HOST
from tests.functional.conftest import kvmtune
from tests.functional.conftest import provider_traits
from tests.functional.conftest import put_provider_traits

pytestmark = pytest.mark.compute('fake')


@pytest.fixture
def compute_conf(test_cloud, restore_traits):
    """The compute's own nova.conf, restored (and nova-compute restarted)
    afterwards; restore_traits then puts the provider's traits back."""
    path = test_cloud.nova_conf
    with open(path) as handle:
        before = handle.read()
    yield path
    with open(path, 'w') as handle:
        handle.write(before)
    test_cloud.restart_compute()


def test_nova_compute_puts_the_exported_traits_on_its_node(
        admin, test_cloud, compute_node, compute_conf, http_requests,
        tmp_path):
    _, uuid = compute_node
    wanted = traits.from_facts(host_facts.resolve(root=str(INTEL_HOST)))
    assert wanted
    # Start from a node without kvmtune's traits.
    before, _ = provider_traits(admin, uuid)
    put_provider_traits(admin, uuid, before - traits.KVMTUNE_TRAITS)
    assert not provider_traits(admin, uuid)[0] & traits.KVMTUNE_TRAITS

    http_requests.clear()
    out = tmp_path / 'out'
    done = kvmtune('export', '--profile', 'pinned-hugepages-ept',
                   '--target', 'provider-config', '--root', INTEL_HOST,
                   '--output', out)
    assert done.rc == 0, done.err
    assert http_requests.sent == []          # kvmtune asked no one
    directory = out / 'etc' / 'nova' / 'provider_config'
    assert (directory / 'kvmtune.yaml').is_file()

    with open(compute_conf) as handle:
        ini = inifile.IniFile(handle.read())
    ini.set('compute', 'provider_config_location', str(directory))
    with open(compute_conf, 'w') as handle:
        handle.write(ini.text)
    started = time.monotonic()
    test_cloud.restart_compute()

    found = set()
    for _ in range(60):
        found, _ = provider_traits(admin, uuid)
        if wanted <= found:
            break
        time.sleep(1)
    assert wanted <= found, sorted(found)
    assert found & traits.KVMTUNE_TRAITS == wanted
    print(f'\nnova-compute put {sorted(wanted)} on provider {uuid} '
          f'{time.monotonic() - started:.1f} s after the restart began')
