"""kvmtune.rollout.remote: hosts asked over Ansible (the answer of a real
host is compared with the tree read here in test_check.py)."""

import base64
import json
import os
import subprocess
import sys

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune import jsonout
from kvmtune.rollout import inventory
from kvmtune.rollout import remote
from tests import hosttrees
from tests import paths
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import kvmtune_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible

# what kvmtune host inspect -f json prints for a real machine's capture
FACTS = jsonout.dumps(host_facts.gather(os.path.join(
    paths.HOSTS, 'real', '20em64t-hybrid-1p6c2t+2ca4co1t')))


def _line(boot=(0, '{"files": []}', ''), facts=(0, FACTS, ''), nova=None,
          conf=None, path='/etc/nova/nova.conf'):
    return 'CHANGED | rc=0 | (stdout) ' + json.dumps(
        {'boot': list(boot), 'facts': list(facts),
         'nova': None if nova is None else list(nova),
         'conf': None if conf is None else base64.b64encode(conf).decode(),
         'path': path})


def test_an_answer_with_a_nova_conf_diff():
    diff = ('--- a\n+++ b\n@@ -1 +1,3 @@\n [DEFAULT]\n+[compute]\n'
            '+cpu_dedicated_set = 2-19\n')
    found = remote.parse('c1', _line(nova=(0, diff + 'dry run\n', '')))
    assert found.staged == {'files': []}
    assert found.facts == json.loads(FACTS)
    assert found.nova_conf == ['[compute]', 'cpu_dedicated_set = 2-19']
    assert remote.parse('c1', _line()).nova_conf is None
    # the file's bytes, decoded here by nova-conf apply's reader
    found = remote.parse('c1', _line(nova=(0, diff, ''),
                                     conf=b'[DEFAULT]\n# caf\xc3\xa9\n'))
    assert found.conf_text == '[DEFAULT]\n# caf\u00e9\n'


@pytest.mark.parametrize('conf, said', [
    (b'[DEFAULT]\n# caf\xe9\n',
     'not UTF-8 text (byte 15) (fix: save nova.conf as UTF-8)'),
    (b'\xef\xbb\xbf[DEFAULT]\n',
     'line 1: starts with a UTF-8 byte order mark, which oslo.config reads '
     'as part of the first line (fix: save nova.conf without the BOM)'),
])
def test_a_nova_conf_nova_would_not_read_is_one_line(conf, said):
    """Bytes the host sent that nova-conf apply's reader refuses (the
    file changed after nova-conf apply read it, say): the host, the file
    and the reader's own problem and fix."""
    with pytest.raises(InputError) as err:
        remote.parse('c1', _line(nova=(0, '', ''), conf=conf))
    assert err.value.line() == \
        f'inventory host c1: /etc/nova/nova.conf: {said}'


@pytest.mark.parametrize('line, expected', [
    (None, 'inventory host c1: unreachable or failed over Ansible: boom'),
    ('UNREACHABLE!: ssh: connect to host refused',
     'inventory host c1: unreachable or failed over Ansible: UNREACHABLE!'),
    (_line(boot=(2, '', 'kvmtune: error: /: unknown boot loader (fix: x)')),
     'inventory host c1: /: unknown boot loader (fix: x)'),
    (_line(boot=(1, '', 'Traceback ...\nKeyError: boot')),
     'inventory host c1: KeyError: boot (fix: see kvmtune on that host)'),
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
    assert err.value.line().count('(fix: ') <= 1     # one fix, its own


def test_no_host_no_ansible():
    assert remote.ask([], 'inv', 'cpu-pinning') == {}


@needs_ansible
def test_an_unreachable_host_over_ssh(tmp_path, ansible_on_path):  # noqa
    inv = tmp_path / 'hosts.ini'
    inv.write_text('[computes]\nfar ansible_host=127.35.0.250 '
                   'ansible_port=1 ansible_connection=ssh\n')
    answers = remote.ask(inventory.load(str(inv)), str(inv), 'cpu-pinning')
    assert isinstance(answers['far'], InputError)
    assert answers['far'].line().startswith(
        'inventory host far: unreachable or failed over Ansible: '
        'UNREACHABLE!')


def test_the_script_on_a_host_whose_nova_conf_is_not_utf8(
        tmp_path, kvmtune_on_path):  # noqa: F811
    """What runs on each host (remote.SCRIPT), run here with this
    checkout's kvmtune on PATH: a nova.conf that is not UTF-8 is the one
    line of nova-conf apply's reader, naming the host, never the
    script's traceback (it once read the file with a plain open())."""
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    conf = root / 'etc' / 'nova' / 'nova.conf'
    conf.parent.mkdir(parents=True)
    conf.write_bytes(b'[DEFAULT]\n# caf\xe9\n')
    done = subprocess.run(
        [sys.executable, '-c', remote.SCRIPT, 'cpu-pinning', str(root),
         str(conf)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and 'Traceback' not in done.stderr, \
        done.stderr
    with pytest.raises(InputError) as err:
        remote.parse('c1', f'CHANGED | rc=0 | (stdout) {done.stdout}')
    assert err.value.line() == (
        f'inventory host c1: {conf}: not UTF-8 text (byte 15) (fix: save '
        'nova.conf as UTF-8)')
