"""Guests on the tuned host: pinned + hugepages, trait placement, fio."""

import base64
import time
from typing import Any

from tempest.common import waiters
from tempest import config
from tempest import exceptions
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from kvmtune.tempest_plugin.tests import base
from kvmtune.tuning import extra_specs

CONF = config.CONF


class PinnedHugepagesGuestTest(base.KvmtuneAdminTest):
    """A tuned flavor with dedicated vCPUs and large pages boots."""

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.kvmtune.flavors:
            raise cls.skipException(
                'no tuned flavor configured ([kvmtune] flavors is empty)')

    def _pinned_hugepages_flavor(self) -> Any:
        """A configured pinned + large-page flavor some host can take."""
        on_hosts = set()
        for uuid in self.compute_providers().values():
            on_hosts |= self.provider_traits(uuid)
        missing = set()
        for profile, name in sorted(CONF.kvmtune.flavors.items()):
            flavor, specs = self.tuned_flavor(profile, name)
            if not (specs.get('hw:cpu_policy') == 'dedicated'
                    and specs.get('hw:mem_page_size')):
                continue
            required = extra_specs.required_traits(specs)
            if required <= on_hosts:
                return flavor
            missing |= required - on_hosts
        if missing:
            raise self.skipException(
                f'no compute node has {", ".join(sorted(missing))}, which '
                'the pinned + large-page flavors require')
        raise self.skipException(
            'no configured tuned flavor pins vCPUs and uses large pages '
            '([kvmtune] flavors: add a pinned-hugepages-ept flavor)')

    @decorators.idempotent_id('4842b42d-3f1e-4a99-a16c-d15640cc17e4')
    def test_pinned_hugepages_flavor_boots_active(self) -> None:
        flavor = self._pinned_hugepages_flavor()
        pcpus = {host: inv['PCPU']['total']
                 for host, uuid in self.compute_providers().items()
                 for inv in [self.provider_inventories(uuid)]
                 if 'PCPU' in inv}
        if not any(total >= flavor['vcpus'] for total in pcpus.values()):
            raise self.skipException(
                f'compute has no PCPU inventory for {flavor["vcpus"]} '
                'dedicated vCPUs (set [compute] cpu_dedicated_set in '
                'nova.conf, kvmtune nova-conf apply)')
        server = self.boot(flavor['id'])
        # Dedicated vCPUs are PCPU in Placement: the server must hold them.
        allocations = self.placement_client.list_allocations(
            server['id'])['allocations']
        resources: dict[str, int] = {}
        for provider in allocations.values():
            for rc, amount in provider['resources'].items():
                resources[rc] = resources.get(rc, 0) + amount
        self.assertEqual(flavor['vcpus'], resources.get('PCPU'),
                         f'server allocations {resources}: expected '
                         f'{flavor["vcpus"]} PCPU')
        self.assertNotIn('VCPU', resources)


class TraitPlacementTest(base.KvmtuneAdminTest):
    """A flavor requiring a kvmtune trait lands only on a tagged host."""

    def _tagged(self) -> dict[str, set[str]]:
        tagged: dict[str, set[str]] = {}
        for host, uuid in self.compute_providers().items():
            for trait in self.kvmtune_traits(uuid):
                tagged.setdefault(trait, set()).add(host)
        return tagged

    def _trait_flavor(self, trait: str) -> Any:
        size = self.admin_flavors_client.show_flavor(
            CONF.compute.flavor_ref)['flavor']
        flavor = self.create_flavor(ram=size['ram'], vcpus=size['vcpus'],
                                    disk=size['disk'])
        self.admin_flavors_client.set_flavor_extra_spec(
            flavor['id'], **{f'trait:{trait}': 'required'})
        return flavor

    @decorators.idempotent_id('e2dc07db-2fee-41d9-8538-a765375591d7')
    def test_trait_flavor_lands_on_tagged_host(self) -> None:
        tagged = self._tagged()
        if not tagged:
            raise self.skipException(
                'no compute node has a CUSTOM_KVMTUNE_* trait (kvmtune '
                'host tag found none of EPT, nested, 1G pages, vhost-net)')
        trait = sorted(tagged)[0]
        server = self.boot(self._trait_flavor(trait)['id'])
        details = self.admin_servers_client.show_server(
            server['id'])['server']
        self.assertIn(details['OS-EXT-SRV-ATTR:hypervisor_hostname'],
                      tagged[trait],
                      f'server with trait:{trait}=required is not on a '
                      'host carrying it')

    @decorators.idempotent_id('30b937bb-e422-4236-a369-1aa77ecc2d90')
    def test_trait_flavor_refused_without_tagged_host(self) -> None:
        from kvmtune.tuning import traits as kvmtune_traits

        absent = sorted(set(kvmtune_traits.KVMTUNE_TRAITS)
                        - set(self._tagged()))
        if not absent:
            raise self.skipException(
                'every kvmtune trait is on some compute node; no untagged '
                'capability to request')
        trait = absent[0]
        server = self.boot(self._trait_flavor(trait)['id'],
                           wait_until=None)
        self.assertRaises(exceptions.BuildErrorException,
                          waiters.wait_for_server_status,
                          self.servers_client, server['id'], 'ACTIVE')
        fault = self.admin_servers_client.show_server(
            server['id'])['server'].get('fault', {})
        self.assertIn('No valid host', fault.get('message', ''),
                      f'server requiring {trait} failed for another '
                      f'reason: {fault}')


class BenchmarkGuestTest(base.KvmtuneAdminTest):
    """The benchmark guest runs fio and returns it on the console."""

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.kvmtune.benchmark_image:
            raise cls.skipException(
                'no benchmark image ([kvmtune] benchmark_image unset; '
                'build it with kvmtune image build)')

    def _image(self) -> Any:
        images = self.admin_image_client.list_images(
            params={'name': CONF.kvmtune.benchmark_image})['images']
        if not images:
            raise self.skipException(
                f'benchmark image {CONF.kvmtune.benchmark_image} is not '
                'in Glance')
        return images[0]

    def _check_driver_runs_guests(self) -> None:
        hypervisors = self.hypervisors_client.list_hypervisors(
            detail=True)['hypervisors']
        types = {h.get('hypervisor_type') for h in hypervisors}
        if types <= {'fake'}:
            raise self.skipException(
                'the compute driver cannot run guests (hypervisor type '
                'fake): no console output to read')

    @decorators.idempotent_id('962cb83e-84cd-426d-9f41-3a48f934d41f')
    def test_benchmark_guest_returns_fio_result(self) -> None:
        from kvmtune import workloads
        from kvmtune.workloads import console
        from kvmtune.workloads import guestjob as jobs
        from kvmtune.workloads import parsers

        self._check_driver_runs_guests()
        image = self._image()
        workload = workloads.get(CONF.kvmtune.benchmark_workload)
        # A dedicated ephemeral disk: fio never touches the boot disk.
        job = jobs.build(workload, target='/dev/vdb',
                         runtime=CONF.kvmtune.benchmark_runtime)
        flavor = self.create_flavor(
            ram=256, vcpus=1, disk=1, ephemeral=1,
            name=data_utils.rand_name('kvmtune-bench'))
        # As admin: the image may be visible to admin only.
        server = self.boot(
            flavor['id'], image_id=image['id'], config_drive=True,
            clients=self.os_admin,
            user_data=base64.b64encode(jobs.encode(job).encode()).decode())
        deadline = time.time() + CONF.kvmtune.benchmark_timeout
        text = ''
        while time.time() < deadline:
            try:
                text = self.admin_servers_client.get_console_output(
                    server['id'])['output'] or ''
            except lib_exc.NotFound:
                # No console log yet, right after the guest started.
                text = ''
            if console.status(text, server['id']):
                break
            time.sleep(5)
        reported = console.status(text, server['id'])
        self.assertIsNotNone(reported, 'the guest reported no status in '
                             f'{CONF.kvmtune.benchmark_timeout} s; console '
                             'tail:\n' + text[-2000:])
        self.assertEqual('ok', reported[0], f'guest status: {reported}')
        payloads = console.extract(text, server['id'])
        self.assertEqual([(workload.name, 'fio')],
                         [(p['workload'], p['tool']) for p in payloads])
        result = parsers.parse('fio', payloads[0]['raw'],
                               workload=workload.name)
        self.assertEqual('fio', result['tool'])
        self.assertGreater(result['iops'], 0)
        self.assertGreater(result['bw_bytes_s'], 0)
