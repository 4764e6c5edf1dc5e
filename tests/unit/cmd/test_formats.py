"""-f json and -f yaml mean the same on every reading command that needs
no cloud (doc/design.md 9.3): the output parses, and an old spelling still
works with a deprecation line. Commands that read a cloud (verify
--os-cloud, capacity, flavor diff) have their -f json tested against the
test cloud and recorded answers (tests/functional, tests/unit/cmd)."""

import json
import os
import re

import pytest
import yaml

from kvmtune import cli
from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
RESULTS = os.path.join(paths.FIXTURES, 'outputs',
                       'rally-disk-sweep-1-at-tcg.json')
READING = {
    'report': ['report', RESULTS],
    'host inspect': ['host', 'inspect', '--root', HOST],
    'plan': ['plan', '--profile', 'cpu-pinning', '--root', HOST],
    'profile list': ['profile', 'list'],
    'profile show': ['profile', 'show', 'cpu-pinning'],
    'verify': ['verify', '--profile', 'cpu-pinning', '--root', HOST,
               '--layer', 'host'],
}


def test_every_reading_command_without_a_cloud_is_listed():
    # a new reading command must join READING (or say why not above)
    reading = {' '.join(words) for words, module, *_ in cli.COMMANDS
               if module in ('host_inspect', 'plan', 'profile_list',
                             'profile_show', 'verify', 'report')}
    assert reading == set(READING)


@pytest.mark.parametrize('name', sorted(READING))
@pytest.mark.parametrize('fmt, load', [('json', json.loads),
                                       ('yaml', yaml.safe_load)])
def test_json_and_yaml_parse(name, fmt, load, capsys):
    rc = cli.main(READING[name] + ['-f', fmt])
    out = capsys.readouterr().out
    assert rc in (0, 1), out        # verify: 1 when the capture drifts
    assert load(out), out


@pytest.mark.parametrize('argv', [['profile', 'list', '--format', 'text'],
                                  ['plan', '--profile', 'cpu-pinning',
                                   '--root', HOST, '--format', 'text']])
def test_an_old_spelling_works_and_says_so(argv, capsys):
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip()
    assert err.startswith('kvmtune: deprecated: --format text is now -f '
                          'table'), err


def test_value_and_columns_on_a_table(capsys):
    assert cli.main(['profile', 'list', '-f', 'value', '-c', 'name']) == 0
    names = capsys.readouterr().out.split()
    assert 'cpu-pinning' in names and 'baseline' in names


# Every command that reads and prints takes -f json.
READING_COMMANDS = {'host inspect', 'plan', 'profile list', 'profile show',
                    # --check's plan (tests/unit/cmd/test_rollout.py)
                    'rollout',
                    'verify', 'capacity', 'flavor diff', 'cloud status',
                    'rally env', 'bench nested', 'report',
                    # writes, and prints what it did as a document
                    # (tests/unit/cmd/test_boot_apply.py parses its JSON)
                    'boot apply',
                    # a step of a rollout: what it did, as a document
                    'rollout-step',
                    # the canary gate's records in a state file
                    'rollout-report'}


def _subparser(parser, words):
    import argparse

    for word in words:
        (action,) = [a for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[word]
    return parser


def test_the_command_table_walk_finds_f_json_on_every_reading_command():
    parser = cli.build_parser()
    has_f = set()
    names = [' '.join(words) for words, *_ in cli.COMMANDS]
    names += [f'cloud {word}' for word in ('status', 'env', 'up', 'down')]
    for name in names:
        sub = _subparser(parser, name.split())
        f = sub._option_string_actions.get('-f')
        if f is not None and 'json' in (f.choices or ()):
            has_f.add(name)
    assert has_f == READING_COMMANDS


def test_every_written_file_is_named_with_o():
    # one spelling for a file or directory a command writes (9.3): each
    # command with --output also takes -o, and none writes with --json
    parser = cli.build_parser()
    for words, *_ in cli.COMMANDS:
        options = _subparser(parser, words)._option_string_actions
        if '--output' in options:
            assert options['-o'] is options['--output'], words
        assert '--json' not in options or \
            options['--json'].help == '==SUPPRESS==', words


# -- strict JSON on inputs made to overflow ---------------------------------

def strict_json(text):
    """RFC 8259 JSON, as jq and JSON.parse read it: NaN, Infinity and
    -Infinity are refused (Python's json.loads takes them by default)."""
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(text, parse_constant=refuse)


def _overflow_inputs(name, tmp_path, capsys, monkeypatch):
    """argv of ``name`` on input made to overflow (files under tmp_path)."""
    big = 10 ** 63
    if name in ('host inspect', 'plan', 'verify'):
        facts = json.loads(_run(capsys, ['host', 'inspect', '--root', HOST,
                                         '-f', 'json']))
        facts['memory']['total_mb'] = big
        for pool in facts['memory']['hugepages']:
            pool.update(total=big, free=big)
        for node in facts['numa']['nodes']:
            node['memory_mb'] = big
            for pool in node['hugepages']:
                pool.update(total=big, free=big)
        path = tmp_path / 'facts.json'
        path.write_text(json.dumps(facts))
        return {'host inspect': ['host', 'inspect', '--facts', path],
                'plan': ['plan', '--profile', 'pinned-hugepages-ept',
                         '--facts', path],
                'verify': ['verify', '--profile', 'pinned-hugepages-ept',
                           '--facts', path, '--layer', 'host']}[name]
    if name == 'report':
        doc = json.loads(open(LOCAL).read())
        for row in doc['rows']:         # two guests of 1.7e308 bytes/s
            row['result']['bw_bytes_s'] = 1.7e308
        path = tmp_path / 'local.json'
        path.write_text(json.dumps(doc))
        return ['report', path]
    if name == 'rollout-report':
        # samples and figures at the edge of a float, judged and not
        from tests import canarystate

        doc = {'measurements': canarystate.measurements(
            hosts={'c1': ('c9', 1.1, 1.1, 0.02)})}
        for record in doc['measurements']['hosts']['c1']['metrics'].values():
            for side in record['samples'].values():
                for values in side.values():
                    for sample in values:
                        sample['value'] = 1.7e308
            record.update(estimate=1.7e308, interval=[1.7e308, 1.7e308])
        path = tmp_path / 'rollout.json'
        path.write_text(json.dumps(doc))
        return ['rollout-report', path]
    if name == 'capacity':
        from kvmtune.openstack import connection
        from tests.unit.capacity.replay import load
        from tests.unit.capacity.replay import Replay

        recording = load('testcloud-libvirt-pinned.json')
        for key, answer in recording.items():
            if key.endswith('/inventories'):
                for inventory in answer['inventories'].values():
                    inventory.update(total=big, allocation_ratio=1.7e308)
        replay = Replay(recording)
        monkeypatch.setattr(connection.Cloud, 'connect',
                            classmethod(lambda cls, cloud: replay))
        return ['capacity', '--os-cloud', 'replay', '--flavor',
                'kvmtune-ft-base-94120b']
    if name == 'boot apply':
        # a captured host (and its boot files) whose memory is that large
        from tests import hosttrees

        root = hosttrees.make(tmp_path / 'h', 'rhel-7')
        meminfo = root / 'proc' / 'meminfo'
        meminfo.write_text(re.sub(r'(?m)^(MemTotal|HugePages_Total|'
                                  r'HugePages_Free):( *)\d+',
                                  rf'\1:\g<2>{big}', meminfo.read_text()))
        return ['boot', 'apply', '--profile', 'pinned-hugepages',
                '--root', root]
    if name in ('profile list', 'profile show'):
        # the only figures a profile holds are its parameters
        profiles = tmp_path / 'profiles'
        profiles.mkdir()
        (profiles / 'big.yaml').write_text(
            'name: big\ndescription: d\nsource: s\ntuners:\n'
            '- name: hugepages\n  params: {memory_percent: 1.7e308}\n')
        conf = tmp_path / 'kvmtune.conf'
        conf.write_text(f'[profiles]\npaths = {profiles}\n')
        return {'profile list': ['--config-file', conf, 'profile', 'list'],
                'profile show': ['profile', 'show',
                                 profiles / 'big.yaml']}[name]
    raise AssertionError(name)


def _run(capsys, argv):
    assert cli.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


LOCAL = os.path.join(paths.FIXTURES, 'outputs',
                     'bench-local-2vm-fio-randread-4k-tcg-schema1.json')
# Reading commands whose input is a live cloud or guests this tier cannot
# make overflow: they print through output.emit, the one strict encoder
# (kvmtune.jsonout), tested on its own in tests/unit/test_jsonout.py.
LIVE_ONLY = {'flavor diff': 'reads the flavor from a live Nova',
             'rollout': 'reads its hosts through ansible-inventory (its '
                        'JSON compared with jsonout in test_rollout.py)',
             'cloud status': 'reads the test cloud',
             'rally env': 'reads Rally\'s database of a live cloud',
             'bench nested': 'measures guests it boots',
             'rollout-step': 'reads and moves the servers of a live Nova'}


def test_every_reading_command_is_fed_an_overflow_or_says_why_not():
    assert set(OVERFLOW) | set(LIVE_ONLY) == READING_COMMANDS
    assert not set(OVERFLOW) & set(LIVE_ONLY)


OVERFLOW = ('report', 'verify', 'capacity', 'plan', 'host inspect',
            'profile list', 'profile show', 'boot apply', 'rollout-report')


@pytest.mark.parametrize('name', OVERFLOW)
def test_json_on_overflowing_input_is_strict_or_one_line_exit_2(
        name, tmp_path, capsys, monkeypatch):
    argv = _overflow_inputs(name, tmp_path, capsys, monkeypatch)
    capsys.readouterr()
    rc = cli.main([str(a) for a in argv] + ['-f', 'json'])
    out, err = capsys.readouterr()
    if rc == 2:
        assert out == '' and err.count('\n') == 1, err
        assert err.startswith('kvmtune: error: ') and '(fix: ' in err, err
        assert 'internal error' not in err, err
        return
    assert rc in (0, 1), err            # verify: 1 when the host drifts
    assert strict_json(out), out
