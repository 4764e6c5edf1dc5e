"""flavor apply, diff and remove print an extra-spec change alike.

The cloud is a stand-in answering Nova's flavor calls; the plan is the
real one for the Intel EPT fixture host.
"""

import os

import pytest

from kvmtune import cli
from kvmtune.cmd import flavor_output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.openstack import connection
from kvmtune.openstack import flavors
from tests import paths

HOST = os.path.join(paths.FIXTURES, 'hosts', 'intel-2s-smt-ept-1g')
PROFILE = 'pinned-hugepages-ept'
# What the profile's plan wants on that host, as `flavor apply` prints it.
WANTED = ['  + hw:cpu_policy=dedicated',
          '  + hw:cpu_thread_policy=prefer',
          '  + hw:emulator_threads_policy=share',
          '  + hw:mem_page_size=large',
          '  + trait:CUSTOM_KVMTUNE_EPT=required']


class FakeCloud:
    """GET /flavors/detail answers with the flavors given; writes are
    recorded."""

    name = 'test'

    def __init__(self, listing):
        self.listing = listing
        self.writes = []

        class Requests:
            def summary(self):
                return 'requests not counted'
        self.requests = Requests()

    def compute(self, method, path, body=None):
        if method == 'GET':
            return {'flavors': self.listing}
        self.writes.append((method, path))
        if method == 'POST' and path == '/flavors':
            return {'flavor': dict(body['flavor'], id='new-1')}
        return None


def flavor(name, specs, description=None):
    return {'name': name, 'id': name + '-id', 'ram': 256, 'vcpus': 1,
            'disk': 1, 'OS-FLV-EXT-DATA:ephemeral': 1, 'swap': 0,
            'rxtx_factor': 1.0, 'os-flavor-access:is_public': True,
            'description': description, 'extra_specs': specs}


@pytest.fixture
def cloud(monkeypatch):
    made = FakeCloud([])
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: made))
    return made


def indented(out):
    return [line for line in out.splitlines() if line.startswith('  ')]


def test_print_diff_lines(capsys):
    diff = flavors.SpecDiff(added={'hw:cpu_policy': 'dedicated'},
                            changed={'hw:mem_page_size': ('small', 'large')},
                            removed={'hw:numa_nodes': '2'})
    flavor_output.print_diff(diff)
    assert capsys.readouterr().out == (
        '  + hw:cpu_policy=dedicated\n'
        '  ~ hw:mem_page_size: small -> large\n'
        '  - hw:numa_nodes (was 2)\n')


def test_print_diff_empty(capsys):
    flavor_output.print_diff(flavors.SpecDiff({}, {}, {}))
    assert capsys.readouterr().out == ''


def test_apply_prints_the_new_flavor_diff(cloud, capsys):
    cloud.listing = [flavor('m1.bench', {})]
    rc = cli.main(['flavor', 'apply', '--os-cloud', 'test', '--profile',
                   PROFILE, '--from', 'm1.bench', '--root', HOST])
    out = capsys.readouterr().out
    assert rc == 0
    assert indented(out) == WANTED
    assert f'flavor m1.bench.{PROFILE}: created' in out
    assert ('POST', '/flavors') in cloud.writes


def test_diff_prints_the_same_lines(cloud, capsys):
    cloud.listing = [flavor('f', {'hw:cpu_policy': 'shared',
                                  'hw:numa_nodes': '2',
                                  'quota:cpu_shares': '10'})]
    rc = cli.main(['flavor', 'diff', '--os-cloud', 'test', '--profile',
                   PROFILE, '--name', 'f', '--root', HOST])
    out = capsys.readouterr().out
    assert rc == EXIT_DIFFERS
    assert indented(out) == [
        '  + hw:cpu_thread_policy=prefer',
        '  + hw:emulator_threads_policy=share',
        '  + hw:mem_page_size=large',
        '  + trait:CUSTOM_KVMTUNE_EPT=required',
        '  ~ hw:cpu_policy: shared -> dedicated']
    assert cloud.writes == []


def test_remove_prints_the_removed_keys(cloud, capsys):
    cloud.listing = [flavor('f', {'hw:cpu_policy': 'dedicated',
                                  'hw:mem_page_size': 'large',
                                  'quota:cpu_shares': '10'})]
    rc = cli.main(['flavor', 'remove', '--os-cloud', 'test', '--profile',
                   PROFILE, '--name', 'f', '--root', HOST, '--dry-run'])
    out = capsys.readouterr().out
    assert rc == 0
    assert indented(out) == ['  - hw:cpu_policy (was dedicated)',
                             '  - hw:mem_page_size (was large)']
    assert cloud.writes == []
