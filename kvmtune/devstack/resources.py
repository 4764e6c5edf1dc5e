"""extra and unstack: tuned flavors, host traits, the benchmark image.

``extra`` calls the library functions behind kvmtune's commands
(flavor apply, host tag, image build) and records, from what the cloud
says before and after, what they changed. ``unstack`` runs while the
cloud is still up (DevStack calls plugins first) and undoes exactly that:
flavors the plugin created are deleted, a flavor that existed gets its
earlier kvmtune-owned keys back, traits go back to what the provider had,
the uploaded image is deleted.
"""

from collections.abc import Iterable
import os
import socket
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune import image as bench_image

if TYPE_CHECKING:
    from kvmtune.devstack.changes import Changes


def _connect(os_cloud: str) -> Any:
    from kvmtune.openstack.connection import Cloud

    return Cloud.connect(os_cloud)


def _flavors(cloud: Any) -> Any:
    """A fresh Flavors: it caches its listing, and ours must be current."""
    from kvmtune.openstack.flavors import Flavors

    return Flavors(cloud)


def _placement(cloud: Any) -> Any:
    from kvmtune.openstack.placement import Placement

    return Placement(cloud)


def _kvmtune_traits(traits: Iterable[str]) -> list[str]:
    """The traits among traits that kvmtune host tag manages."""
    from kvmtune.tuning.traits import KVMTUNE_TRAITS

    return sorted(set(traits) & KVMTUNE_TRAITS)


def extra(changes: 'Changes', os_cloud: str, profiles: Iterable[str],
          base_flavor: str, tag_host: bool, build_image: bool,
          image_dir: str, image_name: str,
          compute_only: bool = False) -> dict[str, Any]:
    from kvmtune.openstack.flavors import tuned_name
    from kvmtune.tuning import plan as plans

    profiles = [] if compute_only else list(profiles)
    if profiles:
        # Every profile's plan on this host, through the front door,
        # before the first request: one that withheld values stops the
        # phase before any flavor is made (apply_profile plans each again
        # as it makes it).
        plans.for_host(profiles)
    cloud = _connect(os_cloud)
    found: dict[str, Any] = {
             'flavors': {}, 'host_traits': [], 'traits_tagged': tag_host,
             'benchmark_image': None}
    for profile in profiles:
        name = tuned_name(base_flavor, profile)
        before = _flavors(cloud).find(name)
        from kvmtune.openstack import flavors as tuned

        tuned.apply_profile(os_cloud, profile, base=base_flavor,
                            out=lambda line: print(f'kvmtune: {line}'))
        after = _flavors(cloud).get(name)
        if changes.find('flavors', id=after['id']) is None:
            changes.entries('flavors').append({
                'profile': profile, 'name': name, 'id': after['id'],
                'created': before is None,
                'before_specs': (before or {}).get('extra_specs') or {}})
            changes.save()
        found['flavors'][profile] = name
    if tag_host:
        _tag_host(changes, cloud, os_cloud)
    api = _placement(cloud)
    found['host_traits'] = sorted({
        t for _, uuid in api.compute_nodes()
        for t in _kvmtune_traits(api.provider_traits(uuid)[0])})
    if compute_only:
        return found
    if _upload_image(changes, cloud, build_image, image_dir, image_name):
        found['benchmark_image'] = image_name
    return found


def _tag_host(changes: 'Changes', cloud: Any, os_cloud: str) -> None:
    api = _placement(cloud)
    before = {uuid: api.provider_traits(uuid)[0]
              for _, uuid in api.compute_nodes()}
    _set_host_traits(api)
    for hostname, uuid in api.compute_nodes():
        now = api.provider_traits(uuid)[0]
        added = _kvmtune_traits(now - before.get(uuid, frozenset()))
        removed = _kvmtune_traits(before.get(uuid, frozenset()) - now)
        if not (added or removed):
            continue
        entry = changes.find('traits', provider=uuid)
        if entry is None:
            entry = {'provider': uuid, 'hostname': hostname,
                     'added': [], 'removed': []}
            changes.entries('traits').append(entry)
        # Net effect since the first run: re-adding what we removed cancels.
        entry['added'] = sorted((set(entry['added']) | set(added))
                                - set(removed))
        entry['removed'] = sorted((set(entry['removed']) | set(removed))
                                  - set(added))
        changes.save()


def _set_host_traits(api: Any) -> None:
    """What ``kvmtune host tag`` does: this host's kvmtune traits on its
    compute node's resource provider."""
    from kvmtune import facts as host_facts
    from kvmtune.openstack import placement
    from kvmtune.tuning import traits

    facts = host_facts.resolve()
    name = facts.get('hostname') or socket.gethostname()
    (hostname, uuid), note = placement.pick_compute_node(
        api.compute_nodes(), name, explicit=False)
    if note:
        print(f'kvmtune: {note}')
    change = api.set_traits(uuid, traits.from_facts(facts),
                            traits.KVMTUNE_TRAITS)
    for line in change.lines():
        print(f'kvmtune: compute node {hostname}: {line}')


def _upload_image(changes: 'Changes', cloud: Any, build_image: bool,
                  image_dir: str, image_name: str) -> bool:
    path = os.path.join(image_dir, bench_image.RAW)
    if build_image and not os.path.exists(path):
        from kvmtune.image import build

        build.build(image_dir, static_fio=True,
                    log=lambda line: print(f'kvmtune: {line}'))
    if not os.path.exists(path):
        print(f'kvmtune: no benchmark image at {path}; not uploaded (set '
              'KVMTUNE_BUILD_IMAGE=True to build it)')
        return False
    conn = cloud.conn
    existing = list(conn.image.images(name=image_name))
    if existing:
        print(f'kvmtune: image {image_name} is already in Glance '
              f'({existing[0].id}), not uploaded again')
        return True
    try:
        image = conn.image.create_image(
            name=image_name, filename=path, disk_format='raw',
            container_format='bare', visibility='public', wait=True)
    except Exception as exc:
        raise CloudError(f'image upload failed: {exc}',
                         source=f'cloud {cloud.name}', key=image_name)
    changes.entries('images').append({'id': image.id, 'name': image_name,
                                      'file': path})
    changes.save()
    print(f'kvmtune: uploaded {path} as image {image_name} ({image.id})')
    return True


def unstack(changes: 'Changes', os_cloud: str) -> None:
    if not any(changes.data.get(k) for k in ('flavors', 'traits', 'images')):
        print('kvmtune: no flavor, trait or image of the plugin to remove')
        return
    cloud = _connect(os_cloud)
    for entry in list(changes.entries('flavors')):
        _undo_flavor(_flavors(cloud), entry)
        changes.drop('flavors', entry)
        changes.save()
    api = _placement(cloud)
    for entry in list(changes.entries('traits')):
        _undo_traits(api, entry)
        changes.drop('traits', entry)
        changes.save()
    for entry in list(changes.entries('images')):
        if cloud.conn.image.find_image(entry['id']) is None:
            print(f'kvmtune: image {entry["name"]} is already gone')
        else:
            cloud.conn.image.delete_image(entry['id'])
            print(f'kvmtune: image {entry["name"]} deleted')
        changes.drop('images', entry)
        changes.save()


def _undo_flavor(flavors: Any, entry: dict[str, Any]) -> None:
    from kvmtune.openstack.flavors import diff_extra_specs

    current = flavors.find(entry['name'])
    if current is None or current['id'] != entry['id']:
        print(f'kvmtune: flavor {entry["name"]} is already gone')
    elif entry['created']:
        flavors.delete(entry['id'])
        print(f'kvmtune: flavor {entry["name"]} deleted')
    else:
        # Back to the earlier specs for the keys kvmtune touched only.
        now = current.get('extra_specs') or {}
        touched = [k for k in set(now) | set(entry['before_specs'])
                   if now.get(k) != entry['before_specs'].get(k)]
        diff = diff_extra_specs(now, entry['before_specs'], touched)
        flavors.change(entry['id'], diff)
        print(f'kvmtune: flavor {entry["name"]}: extra specs back to '
              'their earlier values')


def _undo_traits(api: Any, entry: dict[str, Any]) -> None:
    uuid = entry['provider']
    try:
        current, generation = api.provider_traits(uuid)
    except CloudError as exc:
        if getattr(exc, 'http_status', None) != 404:
            raise
        print(f'kvmtune: compute node {entry["hostname"]} ({uuid}) is '
              'already gone')
        return
    wanted = (set(current) - set(entry['added'])) | set(entry['removed'])
    if wanted != set(current):
        api.put_provider_traits(uuid, wanted, generation)
    print(f'kvmtune: compute node {entry["hostname"]}: traits '
          f'{", ".join(entry["added"]) or "none"} removed'
          + (f', {", ".join(entry["removed"])} restored'
             if entry['removed'] else ''))
