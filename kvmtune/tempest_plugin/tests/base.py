"""Shared pieces of kvmtune's Tempest tests.

The tests compare the cloud with what kvmtune itself computes (the plan
for a profile on the compute host), so they import kvmtune's library.
"""

from typing import Any

from tempest.api.compute import base
from tempest import config

CONF = config.CONF


def profile_plan(profile: str) -> Any:
    """kvmtune's FlavorPlan (extra_specs, owned_extra_specs) for profile."""
    from kvmtune.openstack import planning

    return planning.plan_for(profile, facts_file=CONF.kvmtune.facts_file)


class KvmtuneAdminTest(base.BaseV2ComputeAdminTest):
    """Compute admin test with Placement access.

    Servers are booted with networks='none' (microversion 2.37): the
    benchmark guest talks only through its config drive and console. At
    2.53 hypervisor ids are the compute nodes' resource provider uuids.
    """

    min_microversion = '2.53'
    placement_min_microversion = '1.6'

    @classmethod
    def setup_clients(cls) -> None:
        super().setup_clients()
        cls.providers_client = cls.os_admin.resource_providers_client
        cls.placement_client = cls.os_admin.placement_client
        cls.hypervisors_client = cls.os_admin.hypervisor_client

    @classmethod
    def compute_providers(cls) -> dict[str, str]:
        """{hypervisor hostname: resource provider uuid}, from Nova."""
        hypervisors = cls.hypervisors_client.list_hypervisors()
        return {h['hypervisor_hostname']: h['id']
                for h in hypervisors['hypervisors']}

    @classmethod
    def provider_traits(cls, uuid: str) -> set[str]:
        body = cls.providers_client.list_resource_provider_traits(uuid)
        return set(body['traits'])

    @classmethod
    def kvmtune_traits(cls, uuid: str) -> set[str]:
        """The provider's traits that kvmtune host tag manages."""
        from kvmtune.tuning.traits import KVMTUNE_TRAITS

        return cls.provider_traits(uuid) & KVMTUNE_TRAITS

    @classmethod
    def provider_inventories(cls, uuid: str) -> dict[str, Any]:
        body = cls.providers_client.list_resource_provider_inventories(uuid)
        return body['inventories']

    def tuned_flavor(self, profile: str,
                     name: str) -> tuple[dict[str, Any], dict[str, str]]:
        """The flavor and its extra specs; fails when it is missing."""
        flavors = self.admin_flavors_client.list_flavors(
            detail=True, is_public='None')['flavors']
        found = [f for f in flavors if f['name'] == name]
        self.assertEqual(1, len(found),
                         f'profile {profile}: expected one flavor named '
                         f'{name}, found {len(found)}')
        specs = self.admin_flavors_client.list_flavor_extra_specs(
            found[0]['id'])['extra_specs']
        return found[0], specs

    def boot(self, flavor_id: str, image_id: str | None = None,
             wait_until: str | None = 'ACTIVE', **kwargs: Any) -> Any:
        """A server without networks; deleted at the end of the test.

        clients=self.os_admin boots as admin (an image only admin sees).
        """
        return self.create_test_server(
            flavor=flavor_id, image_id=image_id or CONF.compute.image_ref,
            networks='none', wait_until=wait_until, **kwargs)
