"""The vhost_net tuner: the rx queue size and multiqueue it sets, and the
fix it names for each way /dev/vhost-net can be missing."""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.tuners import base
from kvmtune.tuning.tuners import vhost_net


@pytest.mark.parametrize('module,fix', [
    ('absent', 'install this kernel'),
    ('loaded', vhost_net.VHOST_NET_MKNOD),
    (None, 'modprobe vhost_net'),
])
def test_vhost_net_missing_fails_with_fix(module, fix):
    host = {'vhost_net': {'device': False, 'module': module}}
    (check,) = vhost_net.VhostNet({}, host).checks()
    assert check.status == base.FAIL
    assert check.fix.startswith(fix)


def test_vhost_net_declarations():
    tuner = vhost_net.VhostNet({'rx_queue_size': 512},
                               {'vhost_net': {'device': True}})
    assert tuner.nova_conf() == {('libvirt', 'rx_queue_size'): '512'}
    assert tuner.extra_specs() == {'hw:vif_multiqueue_enabled': 'true'}
    assert tuner.checks()[0].status == base.PASS
    assert any('tx_queue_size' in note for note in tuner.notes())


def test_defaults_and_multiqueue_off():
    tuner = vhost_net.VhostNet({}, {'vhost_net': {'device': True}})
    assert tuner.nova_conf() == {('libvirt', 'rx_queue_size'): '1024'}
    assert tuner.extra_specs() == {'hw:vif_multiqueue_enabled': 'true'}
    off = vhost_net.VhostNet({'multiqueue': False},
                             {'vhost_net': {'device': True}})
    assert off.extra_specs() == {'hw:vif_multiqueue_enabled': 'false'}


@pytest.mark.parametrize('size', [256, 512, 1024])
def test_queue_sizes_libvirt_takes(size):
    assert vhost_net.VhostNet.parse_params({'rx_queue_size': size}) == {
        'rx_queue_size': size, 'multiqueue': True}


@pytest.mark.parametrize('size, words', [
    (300, '300 is not valid'), (2048, '2048 is not valid'),
    (True, 'True is a boolean')])
def test_queue_sizes_refused(size, words):
    with pytest.raises(InputError, match=words):
        vhost_net.VhostNet.parse_params({'rx_queue_size': size})
