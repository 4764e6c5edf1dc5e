"""kvmtune.rollout.remote: hosts asked over Ansible (the answer of a real
host is compared with the tree read here in test_check.py)."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune import jsonout
from kvmtune.rollout import inventory
from kvmtune.rollout import remote
from tests import paths
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible

# what kvmtune host inspect -f json prints for a real machine's capture
FACTS = jsonout.dumps(host_facts.gather(os.path.join(
    paths.HOSTS, 'real', '20em64t-hybrid-1p6c2t+2ca4co1t')))


def _line(boot=(0, '{"files": []}', ''), facts=(0, FACTS, ''), nova=None):
    return 'CHANGED | rc=0 | (stdout) ' + json.dumps(
        {'boot': list(boot), 'facts': list(facts),
         'nova': None if nova is None else list(nova)})


def test_an_answer_with_a_nova_conf_diff():
    diff = ('--- a\n+++ b\n@@ -1 +1,3 @@\n [DEFAULT]\n+[compute]\n'
            '+cpu_dedicated_set = 2-19\n')
    found = remote.parse('c1', _line(nova=(0, diff + 'dry run\n', '')))
    assert found.staged == {'files': []}
    assert found.facts == json.loads(FACTS)
    assert found.nova_conf == ['[compute]', 'cpu_dedicated_set = 2-19']
    assert remote.parse('c1', _line()).nova_conf is None


@pytest.mark.parametrize('line, expected', [
    (None, 'inventory host c1: unreachable or failed over Ansible: boom'),
    ('UNREACHABLE!: ssh: connect to host refused',
     'inventory host c1: unreachable or failed over Ansible: UNREACHABLE!'),
    (_line(boot=(2, '', 'kvmtune: error: /: unknown boot loader (fix: x)')),
     'inventory host c1: /: unknown boot loader (fix: x)'),
    ('CHANGED | rc=0 | (stdout) not json',
     'inventory host c1: its answer was not understood'),
    (_line(facts=(0, '{"schema": 1}', '')),
     'inventory host c1: kvmtune host inspect: '),
])
def test_a_host_that_does_not_answer_is_named(line, expected):
    with pytest.raises(InputError) as err:
        remote.parse('c1', line, stderr='boom')
    assert err.value.line().startswith(expected)
    assert '\n' not in err.value.line()


def test_no_host_no_ansible():
    assert remote.ask([], 'inv', 'cpu-pinning') == {}


@needs_ansible
def test_an_unreachable_host_over_ssh(tmp_path, ansible_on_path):  # noqa
    inv = tmp_path / 'hosts.ini'
    inv.write_text('[computes]\nfar ansible_host=127.35.0.250 '
                   'ansible_port=1 ansible_connection=ssh\n')
    with pytest.raises(InputError) as err:
        remote.ask(inventory.load(str(inv)), str(inv), 'cpu-pinning')
    assert err.value.line().startswith(
        'inventory host far: unreachable or failed over Ansible: '
        'UNREACHABLE!')
