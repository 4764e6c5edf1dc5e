"""kvmtune.devstack.resources: the DevStack plugin's extra phase (tuned
flavors, host traits, the benchmark image) records what it changed, and
unstack undoes exactly that. Against the stand-in cloud of
tests/unit/conftest.py, with a captured Intel host's facts as this
host's (the real cloud: tests/functional/test_devstack_plugin.py)."""

import os

import pytest

from kvmtune.devstack import changes as changes_mod
from kvmtune.devstack import resources
from kvmtune import facts as host_facts
from kvmtune import image as bench_image
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')   # compute-intel-1
FOREIGN = {'COMPUTE_NODE', 'HW_CPU_X86_VMX'}


@pytest.fixture
def intel(monkeypatch):
    facts = host_facts.gather(INTEL)
    monkeypatch.setattr(host_facts, 'resolve', lambda **kwargs: facts)


@pytest.fixture
def cloud(nova, intel):
    nova.add_flavor('m1.small', ram=512, vcpus=1, disk=1)
    nova.add_node('compute-intel-1', 'u-1', FOREIGN)
    return nova


@pytest.fixture
def changes(tmp_path):
    return changes_mod.Changes(str(tmp_path / 'state'))


@pytest.fixture
def image_dir(tmp_path):
    path = tmp_path / 'images'
    path.mkdir()
    (path / bench_image.RAW).write_bytes(b'raw disk')
    return str(path)


def extra(changes, image_dir, **kwargs):
    args = dict(profiles=['cpu-pinning', 'net-tuned'],
                base_flavor='m1.small', tag_host=True, build_image=False,
                image_dir=image_dir, image_name='kvmtune-bench')
    args.update(kwargs)
    return resources.extra(changes, 'unit', **args)


def test_extra_then_unstack_leaves_the_cloud_as_it_was(
        cloud, changes, image_dir, capsys):
    found = extra(changes, image_dir)
    assert found == {
        'flavors': {'cpu-pinning': 'm1.small.cpu-pinning',
                    'net-tuned': 'm1.small.net-tuned'},
        'host_traits': ['CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_HUGEPAGES_1G',
                        'CUSTOM_KVMTUNE_NESTED', 'CUSTOM_KVMTUNE_VHOST_NET'],
        'traits_tagged': True, 'benchmark_image': 'kvmtune-bench'}
    made = cloud.by_name('m1.small.net-tuned')
    assert made['extra_specs'] == {'hw:vif_multiqueue_enabled': 'true'}
    assert [i.name for i in cloud.images.values()] == ['kvmtune-bench']
    recorded = changes_mod.Changes(os.path.dirname(changes.path))
    assert [(f['name'], f['created']) for f in recorded.data['flavors']] == [
        ('m1.small.cpu-pinning', True), ('m1.small.net-tuned', True)]
    assert recorded.data['traits'] == [{
        'provider': 'u-1', 'hostname': 'compute-intel-1',
        'added': found['host_traits'], 'removed': []}]

    # a second run records nothing new and uploads nothing
    cloud.writes.clear()
    extra(changes, image_dir)
    assert [w for w in cloud.writes if w[0] != 'GET'] == []
    assert len(changes.data['flavors']) == 2

    resources.unstack(changes, 'unit')
    assert sorted(f['name'] for f in cloud.flavors.values()) == ['m1.small']
    assert cloud.provider_traits['u-1'] == FOREIGN
    assert cloud.images == {}
    assert not os.path.exists(changes.path)
    out = capsys.readouterr().out
    assert 'kvmtune: flavor m1.small.net-tuned deleted' in out
    assert 'kvmtune: image kvmtune-bench deleted' in out


def test_an_existing_flavor_gets_its_earlier_specs_back(
        cloud, changes, image_dir):
    cloud.add_flavor('m1.small.cpu-pinning', {'hw:cpu_policy': 'shared',
                                              'quota:cpu_shares': '10'})
    extra(changes, image_dir, profiles=['cpu-pinning'], tag_host=False)
    tuned = cloud.by_name('m1.small.cpu-pinning')
    assert tuned['extra_specs']['hw:cpu_policy'] == 'dedicated'
    assert changes.data['flavors'][0]['created'] is False
    resources.unstack(changes, 'unit')
    assert cloud.by_name('m1.small.cpu-pinning')['extra_specs'] == {
        'hw:cpu_policy': 'shared', 'quota:cpu_shares': '10'}


def test_without_an_image_file_nothing_is_uploaded(cloud, changes,
                                                   tmp_path, capsys):
    found = extra(changes, str(tmp_path), profiles=[], tag_host=False)
    assert found['benchmark_image'] is None
    assert cloud.images == {}
    assert 'no benchmark image at' in capsys.readouterr().out


def test_an_image_already_in_glance_is_not_ours(cloud, changes, image_dir):
    cloud.conn.image.create_image(
        'kvmtune-bench', os.path.join(image_dir, bench_image.RAW))
    found = extra(changes, image_dir, profiles=[], tag_host=False)
    assert found['benchmark_image'] == 'kvmtune-bench'
    assert 'images' not in changes.data
    assert len(cloud.images) == 1


def test_a_compute_only_node_tags_and_makes_nothing_else(cloud, changes,
                                                         image_dir):
    found = extra(changes, image_dir, compute_only=True)
    assert found['flavors'] == {} and found['benchmark_image'] is None
    assert 'CUSTOM_KVMTUNE_EPT' in found['host_traits']
    assert sorted(changes.data) == ['schema', 'traits']


def test_what_someone_else_removed_is_already_gone(cloud, changes,
                                                   image_dir, capsys):
    extra(changes, image_dir, profiles=['net-tuned'])
    flavor = cloud.by_name('m1.small.net-tuned')
    del cloud.flavors[flavor['id']]
    cloud.images.clear()
    resources.unstack(changes, 'unit')
    out = capsys.readouterr().out
    assert 'flavor m1.small.net-tuned is already gone' in out
    assert 'image kvmtune-bench is already gone' in out
    assert cloud.provider_traits['u-1'] == FOREIGN


def test_nothing_recorded_nothing_to_do(changes, capsys):
    # no cloud at all: unstack does not even connect
    resources.unstack(changes, 'never-reached')
    assert capsys.readouterr().out == (
        'kvmtune: no flavor, trait or image of the plugin to remove\n')
