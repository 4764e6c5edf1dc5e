"""A stand-in OpenStack cloud for the unit tests of what talks to one
(the flavor and host commands, the DevStack plugin's extra/unstack).

``nova`` answers the Nova flavor and hypervisor calls and the Placement
trait calls kvmtune makes, kept in memory in the shapes Nova 34 (2.86)
and Placement (1.6) answer, and the few Glance calls of openstacksdk's
``conn.image`` the DevStack plugin makes; it records every write. It is
pure call logic: the real calls run against the test cloud in
tests/functional/ (test_flavors.py, test_traits.py,
test_devstack_plugin.py).
"""

import types

import pytest

from kvmtune.openstack import connection


class FakeCloud:
    name = 'unit'

    def __init__(self):
        self.flavors = {}
        self.hypervisors = []
        self.traits = {'COMPUTE_NODE', 'HW_CPU_X86_VMX'}
        self.provider_traits = {}
        self.generation = {}
        self.writes = []
        self.images = {}
        self.conn = types.SimpleNamespace(image=Glance(self))

        class Requests:
            def summary(self):
                return 'requests counted'
        self.requests = Requests()

    def add_flavor(self, name, specs=None, description=None, **sizes):
        flavor = {'id': f'{name}-id', 'name': name, 'ram': 512, 'vcpus': 1,
                  'disk': 1, 'OS-FLV-EXT-DATA:ephemeral': 0, 'swap': 0,
                  'rxtx_factor': 1.0, 'os-flavor-access:is_public': True,
                  'description': description,
                  'extra_specs': dict(specs or {})}
        flavor.update(sizes)
        self.flavors[flavor['id']] = flavor
        return flavor

    def by_name(self, name):
        found = [f for f in self.flavors.values() if f['name'] == name]
        return found[0] if found else None

    def add_node(self, hostname, uuid, traits=()):
        self.hypervisors.append({'hypervisor_hostname': hostname,
                                 'id': uuid})
        self.provider_traits[uuid] = set(traits)
        self.traits |= set(traits)
        self.generation[uuid] = 1

    def compute(self, method, path, body=None):
        if method != 'GET':
            self.writes.append((method, path, body))
        if path.startswith('/flavors/detail'):
            return {'flavors': [dict(f, extra_specs=dict(f['extra_specs']))
                                for f in self.flavors.values()]}
        if path == '/os-hypervisors':
            return {'hypervisors': list(self.hypervisors)}
        parts = path.strip('/').split('/')
        if method == 'POST' and parts == ['flavors']:
            made = dict(body['flavor'], id=f'new-{len(self.flavors)}',
                        extra_specs={})
            self.flavors[made['id']] = made
            return {'flavor': made}
        flavor = self.flavors[parts[1]]
        if method == 'DELETE' and len(parts) == 2:
            del self.flavors[parts[1]]
        elif parts[2:] == ['os-extra_specs']:
            flavor['extra_specs'].update(body['extra_specs'])
        elif parts[2:3] == ['os-extra_specs']:
            del flavor['extra_specs'][parts[3]]
        return {}

    def placement(self, method, path, body=None):
        if method != 'GET':
            self.writes.append((method, path, body))
        parts = path.split('?')[0].strip('/').split('/')
        if parts == ['traits']:
            asked = path.split('in%3A', 1)[1].replace('%2C', ',')
            return {'traits': sorted(set(asked.split(',')) & self.traits)}
        if parts[0] == 'traits':
            self.traits.add(parts[1])
            return None
        uuid = parts[1]
        if method == 'PUT':
            assert body['resource_provider_generation'] == \
                self.generation[uuid]
            assert set(body['traits']) <= self.traits
            self.provider_traits[uuid] = set(body['traits'])
            self.generation[uuid] += 1
            return None
        return {'traits': sorted(self.provider_traits[uuid]),
                'resource_provider_generation': self.generation[uuid]}


class Glance:
    """openstacksdk's conn.image, the calls the DevStack plugin makes."""

    def __init__(self, cloud):
        self.cloud = cloud

    def images(self, name):
        return [i for i in self.cloud.images.values() if i.name == name]

    def create_image(self, name, filename, **kwargs):
        with open(filename, 'rb') as f:
            size = len(f.read())
        image = types.SimpleNamespace(id=f'img-{len(self.cloud.images)}',
                                      name=name, size=size, **kwargs)
        self.cloud.images[image.id] = image
        self.cloud.writes.append(('POST', '/images', name))
        return image

    def find_image(self, image_id):
        return self.cloud.images.get(image_id)

    def delete_image(self, image_id):
        del self.cloud.images[image_id]
        self.cloud.writes.append(('DELETE', f'/images/{image_id}', None))


@pytest.fixture
def nova(monkeypatch):
    cloud = FakeCloud()
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: cloud))
    return cloud
