"""The cloud holds what kvmtune set up: tuned flavors and host traits."""

from tempest import config
from tempest.lib import decorators

from kvmtune.tempest_plugin.tests import base

CONF = config.CONF


class TunedFlavorsTest(base.KvmtuneAdminTest):
    """Each configured tuned flavor carries its profile's plan."""

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.kvmtune.flavors:
            raise cls.skipException(
                'no tuned flavor to check: [kvmtune] flavors is empty '
                '(run kvmtune flavor apply, or the DevStack plugin)')

    @decorators.idempotent_id('8d9abcbd-c212-4d69-bbef-4270c41f399d')
    def test_tuned_flavor_extra_specs_match_plan(self) -> None:
        for profile, name in sorted(CONF.kvmtune.flavors.items()):
            with self.subTest(profile=profile, flavor=name):
                plan = base.profile_plan(profile)
                _, specs = self.tuned_flavor(profile, name)
                wanted = dict(plan.extra_specs)
                have = {k: specs.get(k) for k in wanted}
                self.assertEqual(wanted, have,
                                 f'flavor {name}: extra specs differ from '
                                 f'the plan of profile {profile}')

    @decorators.idempotent_id('61a4bb78-022d-49f1-aa19-20920da84d40')
    def test_tuned_flavor_has_no_stale_owned_keys(self) -> None:
        from kvmtune.openstack import flavors as tuned

        for profile, name in sorted(CONF.kvmtune.flavors.items()):
            with self.subTest(profile=profile, flavor=name):
                plan = base.profile_plan(profile)
                _, specs = self.tuned_flavor(profile, name)
                stale = sorted(
                    k for k in specs
                    if tuned.is_owned(k, plan.owned_extra_specs)
                    and k not in plan.extra_specs)
                self.assertEqual([], stale,
                                 f'flavor {name}: keys owned by profile '
                                 f'{profile} that its plan does not set')


class HostTraitsTest(base.KvmtuneAdminTest):
    """The compute nodes carry the kvmtune traits configured."""

    @classmethod
    def skip_checks(cls) -> None:
        super().skip_checks()
        if not CONF.kvmtune.traits_tagged:
            raise cls.skipException(
                'compute nodes are not tagged with kvmtune traits '
                '([kvmtune] traits_tagged = False)')

    @decorators.idempotent_id('3ba52dd4-fa5b-4782-92f4-d4bcc4f290a5')
    def test_configured_traits_on_compute_nodes(self) -> None:
        on_hosts = set()
        for uuid in self.compute_providers().values():
            on_hosts |= self.kvmtune_traits(uuid)
        self.assertEqual(sorted(CONF.kvmtune.host_traits), sorted(on_hosts),
                         'kvmtune traits on the compute nodes differ from '
                         '[kvmtune] host_traits')
