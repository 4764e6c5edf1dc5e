"""A cloud that answers capacity's GETs from a recording of the test
cloud (tests/fixtures/capacity/, saved by tests/functional/
test_capacity.py), and counts the calls; ``hosts=N`` replicates the
recorded compute node N times (the fleet benchmark)."""

import copy
import json
import os

from kvmtune.errors import CloudError
from tests import paths

RECORDINGS = os.path.join(paths.FIXTURES, 'capacity')


def load(name):
    with open(os.path.join(RECORDINGS, name)) as f:
        return json.load(f)


class Replay:
    name = 'replay'

    def __init__(self, recording, hosts=1, fail=None):
        self.answers = dict(recording)
        self.calls = 0
        self.fail = fail or {}
        if hosts > 1:
            self._replicate(hosts)

    def _replicate(self, count):
        body = self.answers['compute /os-hypervisors/detail']
        node = body['hypervisors'][0]
        uuid = node['id']
        nodes = []
        for i in range(count):
            copied = copy.deepcopy(node)
            copied['id'] = f'{uuid[:-8]}{i:08d}'
            copied['hypervisor_hostname'] = f'compute-{i:04d}'
            copied['service']['host'] = f'compute-{i:04d}'
            nodes.append(copied)
            for what in ('inventories', 'usages', 'traits'):
                self.answers[f'placement /resource_providers/{copied["id"]}'
                             f'/{what}'] = self.answers[
                    f'placement /resource_providers/{uuid}/{what}']
        self.answers['compute /os-hypervisors/detail'] = {
            'hypervisors': nodes}

    def _answer(self, service, path):
        self.calls += 1
        key = f'{service} {path}'
        if key in self.fail:
            raise self.fail[key]
        if key not in self.answers:
            if '/servers/detail' in path:
                return {'servers': []}
            raise CloudError(f'HTTP 404: {path}', source='cloud replay')
        return copy.deepcopy(self.answers[key])

    def compute(self, method, path, body=None):
        assert method == 'GET', (method, path)
        return self._answer('compute', path)

    def placement(self, method, path, body=None):
        assert method == 'GET', (method, path)
        return self._answer('placement', path)
