"""``kvmtune flavor diff``'s output formats, against a flavor listing as
Nova 34 answers GET /flavors/detail at 2.86 (the shape
kvmtune.openstack.flavors reads; the command itself is run against the test
cloud in tests/functional/test_flavors.py)."""

import json
import os

import pytest
import yaml

from kvmtune import cli
from kvmtune.openstack import connection
from kvmtune.openstack import planning
from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')


class FakeCloud:
    name = 'fake'

    def __init__(self, specs):
        self.specs = specs

    def compute(self, method, path, body=None):
        assert (method, path) == ('GET', '/flavors/detail?is_public=none')
        return {'flavors': [{'id': '1', 'name': 'tuned', 'vcpus': 2,
                             'ram': 2048, 'disk': 10,
                             'extra_specs': self.specs}]}


@pytest.fixture
def wanted():
    return planning.plan_for('cpu-pinning', root=HOST).extra_specs


@pytest.mark.parametrize('fmt, load', [('json', json.loads),
                                       ('yaml', yaml.safe_load)])
def test_a_matching_flavor_as_data(fmt, load, wanted, monkeypatch, capsys):
    monkeypatch.setattr(connection.Cloud, 'connect',
                        lambda name: FakeCloud(dict(wanted)))
    assert cli.main(['flavor', 'diff', '--os-cloud', 'c', '--profile',
                     'cpu-pinning', '--root', HOST, '--name', 'tuned',
                     '-f', fmt]) == 0
    doc = load(capsys.readouterr().out)
    assert doc == {'flavor': 'tuned', 'profile': 'cpu-pinning',
                   'status': 'matches', 'incomplete': [],
                   'diff': {'added': {}, 'changed': {}, 'removed': {}}}


def test_a_flavor_that_differs_exits_1(wanted, monkeypatch, capsys):
    specs = dict(wanted)
    key = sorted(specs)[0]
    del specs[key]
    monkeypatch.setattr(connection.Cloud, 'connect',
                        lambda name: FakeCloud(specs))
    assert cli.main(['flavor', 'diff', '--os-cloud', 'c', '--profile',
                     'cpu-pinning', '--root', HOST, '--name', 'tuned',
                     '-f', 'json']) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc['status'] == 'differs'
    assert doc['diff']['added'] == {key: str(wanted[key])}
