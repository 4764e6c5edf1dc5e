"""kvmtune.rollout.inventory: hosts and their variables as Ansible's own
parser (ansible-inventory) reads them."""

import glob
import os

import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import inventory
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible


def _write(tmp_path, text, name='hosts.ini'):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@needs_ansible
def test_hosts_in_order_with_group_vars(tmp_path, ansible_on_path):  # noqa
    path = _write(tmp_path, '[computes]\n'
                  'c2 kvmtune_root=/srv/c2 ansible_connection=local\n'
                  'c1\n\n[controllers]\nctl\n\n[computes:vars]\n'
                  'kvmtune_nova_conf=/etc/kolla/nova-compute/nova.conf\n')
    hosts = inventory.load(path, 'computes')
    assert [h.name for h in hosts] == ['c2', 'c1']
    c2, c1 = hosts
    assert (c2.root, c2.connection, c2.local) == ('/srv/c2', 'local', True)
    assert (c1.root, c1.connection, c1.local) == ('/', None, False)
    # the group's variable, applied by Ansible's parser
    assert c1.nova_conf == '/etc/kolla/nova-compute/nova.conf'
    assert c2.in_root(c2.nova_conf) == \
        '/srv/c2/etc/kolla/nova-compute/nova.conf'
    assert [h.name for h in inventory.load(path)] == ['c2', 'c1', 'ctl']


@needs_ansible
def test_a_yaml_inventory_reads_the_same(tmp_path, ansible_on_path):  # noqa
    path = _write(tmp_path, 'all:\n  children:\n    computes:\n      hosts:\n'
                  '        a:\n          kvmtune_root: /t/a\n        b: {}\n',
                  name='hosts.yml')
    assert [(h.name, h.root) for h in inventory.load(path)] == \
        [('a', '/t/a'), ('b', '/')]


@needs_ansible
@pytest.mark.parametrize('text, pattern, expected', [
    ('[a\nx y=\n', 'all', 'Ansible cannot read it'),
    ('[computes]\nh1\n', 'nosuchgroup', "no host matches 'nosuchgroup'"),
])
def test_bad_inventory_is_one_line(tmp_path, ansible_on_path, text,  # noqa
                                   pattern, expected):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        inventory.load(path, pattern)
    assert expected in err.value.line()
    assert '\n' not in err.value.line()


@needs_ansible
def test_meanwhile_runs_while_ansible_lists(tmp_path, ansible_on_path):  # noqa
    path = _write(tmp_path, '[computes]\nc1\nc2\n')
    called = []
    assert inventory.load(path, meanwhile=lambda: called.append(1)) == \
        inventory.load(path)
    assert called == [1]

    def fails():
        raise ValueError('its own error')

    # the caller's error, not the inventory's; ansible-inventory is not
    # left behind (no child of this process remains)
    with pytest.raises(ValueError, match='its own error'):
        inventory.load(path, meanwhile=fails)
    assert _children() == []


def _children():
    """The processes whose parent is this one (zombies too)."""
    found = []
    for stat in glob.glob('/proc/[0-9]*/stat'):
        try:
            with open(stat) as f:
                fields = f.read().rpartition(')')[2].split()
        except OSError:
            continue        # it ended meanwhile
        if int(fields[1]) == os.getpid():
            found.append(stat)
    return found


def test_missing_inventory(tmp_path):
    with pytest.raises(InputError, match='no such inventory'):
        inventory.load(str(tmp_path / 'none.ini'))


def test_no_ansible_names_the_fleet_extra(monkeypatch, tmp_path):
    empty = tmp_path / 'bin'
    empty.mkdir()
    monkeypatch.setenv('PATH', str(empty))
    monkeypatch.setattr(inventory.sys, 'executable',
                        str(empty / 'python3'))
    with pytest.raises(InputError) as err:
        inventory.load(_write(tmp_path, '[computes]\nh1\n'))
    line = err.value.line()
    assert 'ansible-inventory is not installed' in line
    assert "pip install '.[fleet]'" in line and 'kvmtune[fleet]' in line


def test_parse_walks_children_once():
    text = ('{"_meta": {"hostvars": {"b": {"kvmtune_root": "/b"}}}, '
            '"all": {"children": ["ungrouped", "g1", "g2"]}, '
            '"g1": {"hosts": ["b", "a"], "children": ["g2"]}, '
            '"g2": {"hosts": ["a", "c"]}, "ungrouped": {}}')
    hosts = inventory.parse(text, 'x')
    assert [h.name for h in hosts] == ['b', 'a', 'c']
    assert hosts[0].root == '/b' and hosts[1].vars == {}
    with pytest.raises(InputError, match='no JSON'):
        inventory.parse('[WARNING]', 'x')
