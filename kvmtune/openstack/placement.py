"""kvmtune's traits on a compute node's resource provider in Placement.

Nova names a compute node's root provider after the hypervisor and, from
compute API 2.53, gives the hypervisor the provider's UUID as its id, so
the provider is found through Nova's hypervisor list. Setting traits is a
PUT of the whole set guarded by the provider generation: kvmtune reads the
set, swaps only its own traits (``kvmtune.tuning.traits.KVMTUNE_TRAITS``) and
re-reads on a generation conflict, a bounded number of times.
"""

from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
from typing import Any
import urllib.parse

from kvmtune.errors import CloudError
from kvmtune.errors import InputError

CONFLICT_RETRIES = 5


@dataclasses.dataclass(frozen=True)
class TraitChange:
    """The trait set a provider must get; added/removed are sorted."""

    current: frozenset[str]
    new: frozenset[str]

    @property
    def added(self) -> list[str]:
        return sorted(self.new - self.current)

    @property
    def removed(self) -> list[str]:
        return sorted(self.current - self.new)

    @property
    def empty(self) -> bool:
        return self.new == self.current

    def lines(self) -> list[str]:
        return ([f'+ {t}' for t in self.added] +
                [f'- {t}' for t in self.removed])


def trait_change(current: Iterable[str], wanted: Iterable[str],
                 managed: Iterable[str]) -> TraitChange:
    """Replace the managed traits of current by wanted, keep the rest."""
    have = frozenset(current)
    unknown = set(wanted) - set(managed)
    if unknown:
        raise ValueError(f'not kvmtune traits: {sorted(unknown)}')
    return TraitChange(have, (have - frozenset(managed)) |
                       frozenset(wanted))


def pick_compute_node(nodes: Sequence[tuple[str, str]], wanted_name: str,
                      explicit: bool
                      ) -> tuple[tuple[str, str], str | None]:
    """The (hostname, uuid) to tag among Nova's compute nodes.

    :param nodes: [(hypervisor_hostname, provider uuid)]
    :param wanted_name: --hypervisor, else this host's (or facts') name
    :param explicit: whether the operator named the hypervisor
    :returns: ((hostname, uuid), note) where note says how it was chosen
    """
    for node in nodes:
        if node[0] == wanted_name:
            return node, None
    known = ', '.join(sorted(n[0] for n in nodes)) or 'none'
    if not explicit and len(nodes) == 1:
        return nodes[0], (f'no compute node is named {wanted_name!r}; '
                          f'using the only one, {nodes[0][0]!r}')
    raise InputError(f'no compute node named {wanted_name!r} '
                     f'(compute nodes: {known})', key='--hypervisor',
                     fix='give --hypervisor with one of the names listed')


class Placement:
    """The Nova and Placement calls ``host tag`` makes."""

    def __init__(self, cloud: Any) -> None:
        self.cloud = cloud

    def compute_nodes(self) -> list[tuple[str, str]]:
        """[(hypervisor_hostname, resource provider uuid)] from Nova."""
        body = self.cloud.compute('GET', '/os-hypervisors')
        return [(h['hypervisor_hostname'], h['id'])
                for h in body['hypervisors']]

    def provider_traits(self, uuid: str) -> tuple[frozenset[str], int]:
        """(set of traits, provider generation)."""
        body = self.cloud.placement('GET',
                                    f'/resource_providers/{uuid}/traits')
        return frozenset(body['traits']), body['resource_provider_generation']

    def missing_traits(self, names: Sequence[str]) -> list[str]:
        """The names among names that Placement does not know yet."""
        if not names:
            return []
        query = urllib.parse.urlencode({'name': 'in:' + ','.join(
            sorted(names))})
        body = self.cloud.placement('GET', f'/traits?{query}')
        return sorted(set(names) - set(body['traits']))

    def create_trait(self, name: str) -> None:
        self.cloud.placement('PUT', f'/traits/{name}')

    def put_provider_traits(self, uuid: str, traits: Iterable[str],
                            generation: int) -> None:
        self.cloud.placement(
            'PUT', f'/resource_providers/{uuid}/traits',
            {'traits': sorted(traits),
             'resource_provider_generation': generation})

    # every pass returns or raises: the last one re-raises the conflict
    def set_traits(  # type: ignore[return]
            self, uuid: str, wanted: Iterable[str], managed: Iterable[str],
            dry_run: bool = False) -> TraitChange:
        """Give the provider exactly wanted among managed; keep the rest.

        :returns: the TraitChange that was (or, dry run, would be) made
        """
        for attempt in range(CONFLICT_RETRIES + 1):
            current, generation = self.provider_traits(uuid)
            change = trait_change(current, wanted, managed)
            if change.empty or dry_run:
                return change
            for name in self.missing_traits(change.added):
                self.create_trait(name)
            try:
                self.put_provider_traits(uuid, change.new, generation)
                return change
            except CloudError as exc:
                # Someone (often nova-compute's periodic update) changed
                # the provider since the read; read it again and retry.
                conflict = getattr(exc, 'http_status', None) == 409
                if not conflict or attempt == CONFLICT_RETRIES:
                    raise
