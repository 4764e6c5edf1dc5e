"""kvmtune.tuning.novaconf.capture: which nova.conf files a capture takes,
and that none of their secrets come with them."""

import os

import oslo_config.cfg as cfg
import pytest

from kvmtune.tuning.novaconf import capture

CONF = """\
[DEFAULT]
transport_url = rabbit://nova:RabbitPass1@ctl:5672/
my_ip = 10.0.0.5
# connection = mysql+pymysql://nova:OldDbPass2@db/nova
# a comment that stays
[database]
connection = mysql+pymysql://nova:DbPass3@db/nova
[keystone_authtoken]
password = KsPass4
  continued
username = nova
[vnc]
novncproxy_base_url = http://ctl:6080/vnc_auto.html
[compute]
cpu_shared_set = 0-1
cpu_dedicated_set = 2-19
[libvirt]
virt_type = kvm
"""
PASSWORDS = ('RabbitPass1', 'OldDbPass2', 'DbPass3', 'KsPass4', 'continued')


def test_secret_options_are_removed_and_named():
    clean, removed = capture.scrub(CONF)
    assert removed == ['[DEFAULT] transport_url', '[database] connection',
                       '[keystone_authtoken] password']
    assert not any(p in clean for p in PASSWORDS)
    assert '# [database] connection: removed by kvmtune host capture ' \
        '(a secret)\n' in clean
    for kept in ('my_ip = 10.0.0.5', '# a comment that stays',
                 'username = nova', 'cpu_dedicated_set = 2-19',
                 'novncproxy_base_url = http://ctl:6080/vnc_auto.html'):
        assert kept in clean


def test_nova_secret_options_go_whatever_their_name():
    text = '[libvirt]\nrbd_user = cinder\nvirt_type = kvm\n'
    assert capture.scrub(text)[0] == text           # a name, not a secret
    clean, removed = capture.scrub(text, {('libvirt', 'rbd_user')})
    assert removed == ['[libvirt] rbd_user'] and 'cinder' not in clean


def test_a_value_shaped_like_a_secret_goes_whatever_its_name(tmp_path):
    text = '[DEFAULT]\nsome_url = https://admin:Hunter2Pass@ctl/\n'
    clean, removed = capture.scrub(text)
    assert removed == ['[DEFAULT] some_url'] and 'Hunter2Pass' not in clean


def test_oslo_config_reads_the_scrubbed_file_as_the_host_s(tmp_path):
    """What stays is what nova-compute reads (oslo.config's own parser)."""
    clean, _ = capture.scrub(CONF)
    path = tmp_path / 'nova.conf'
    path.write_text(clean)
    conf = cfg.ConfigOpts()
    conf.register_opts([cfg.StrOpt('cpu_shared_set'),
                        cfg.StrOpt('cpu_dedicated_set')], group='compute')
    conf.register_opts([cfg.StrOpt('password')],
                       group='keystone_authtoken')
    conf(args=[], default_config_files=[str(path)])
    assert conf.compute.cpu_shared_set == '0-1'
    assert conf.compute.cpu_dedicated_set == '2-19'
    assert conf.keystone_authtoken.password is None


def _tree(tmp_path):
    root = tmp_path / 'root'
    (root / 'etc' / 'nova' / 'nova.conf.d').mkdir(parents=True)
    (root / 'etc' / 'nova' / 'nova.conf').write_text(CONF)
    (root / 'etc' / 'nova' / 'nova.conf.d' / '50-kvmtune.conf').write_text(
        '[compute]\ncpu_shared_set = 0\n')
    (root / 'etc' / 'nova' / 'nova.conf.d' / 'README').write_text('x')
    return root


def test_oslo_config_s_default_files_without_a_running_service(tmp_path):
    root = _tree(tmp_path)
    assert capture.paths(str(root)) == [
        '/etc/nova/nova.conf', '/etc/nova/nova.conf.d/50-kvmtune.conf']
    copied, refused = capture.read(str(root))
    assert refused == {}
    assert set(copied) == {'/etc/nova/nova.conf',
                           '/etc/nova/nova.conf.d/50-kvmtune.conf'}
    assert b'DbPass3' not in copied['/etc/nova/nova.conf']


def test_the_files_the_running_nova_compute_names(tmp_path):
    root = _tree(tmp_path)
    kolla = root / 'etc' / 'kolla' / 'nova-compute'
    kolla.mkdir(parents=True)
    (kolla / 'nova.conf').write_text('[compute]\ncpu_shared_set = 3\n')
    proc = root / 'proc' / '4242'
    proc.mkdir(parents=True)
    (proc / 'cmdline').write_bytes(
        b'/usr/bin/python3\0/usr/bin/nova-compute\0--config-file\0'
        b'/etc/kolla/nova-compute/nova.conf\0--config-file\0'
        b'/dev/stdin\0')
    # its --config-files (none under /dev), and the default directory
    # oslo.config still reads without --config-dir; not the default
    # nova.conf, which a --config-file turns off
    assert capture.paths(str(root)) == [
        '/etc/nova/nova.conf.d/50-kvmtune.conf',
        '/etc/kolla/nova-compute/nova.conf']


def test_a_fifo_or_a_link_out_of_the_tree_is_not_copied(tmp_path):
    root = _tree(tmp_path)
    os.mkfifo(root / 'etc' / 'nova' / 'nova.conf.d' / 'fifo.conf')
    outside = tmp_path / 'outside.conf'
    outside.write_text('[DEFAULT]\nmy_ip = 1.2.3.4\n')
    os.symlink(outside, root / 'etc' / 'nova' / 'nova.conf.d' / 'out.conf')
    copied, refused = capture.read(str(root))
    assert set(refused) == {'/etc/nova/nova.conf.d/fifo.conf',
                            '/etc/nova/nova.conf.d/out.conf'}
    assert '/etc/nova/nova.conf' in copied


def test_too_large_or_unparsable_is_not_copied(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    (root / 'etc' / 'nova' / 'nova.conf.d' / 'bad.conf').write_text(
        'no section here = 1\n')
    monkeypatch.setattr(capture, 'MAX_BYTES', 64)
    copied, refused = capture.read(str(root))
    assert set(refused) == {'/etc/nova/nova.conf',
                            '/etc/nova/nova.conf.d/bad.conf'}
    assert list(copied) == ['/etc/nova/nova.conf.d/50-kvmtune.conf']


@pytest.mark.parametrize('found', [set(), {('database', 'connection')}])
def test_nova_secrets_is_a_set(found, monkeypatch):
    monkeypatch.setattr(capture.validate, 'check_with_nova',
                        lambda changes: {'secrets': sorted(found)})
    assert capture.nova_secrets() == found
