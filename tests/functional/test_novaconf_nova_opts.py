"""nova.conf values checked by a real Nova (nova 34.0.0 in a virtualenv).

Nova is the Python in ``$KVMTUNE_NOVA_PYTHON``, else the test cloud's
Python (``tests.paths.NOVA_PYTHON``). tools/run-functional installs the
cloud (``kvmtune cloud install``) before this module runs, so in CI
(``KVMTUNE_FUNCTIONAL=1``, or strict mode's ``CI=true``) a missing Nova is
a failure; a ``$KVMTUNE_NOVA_PYTHON`` that cannot import Nova always is
(the variable says Nova is there). Only a developer's run with neither
skips.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning.novaconf import nova_check
from kvmtune.tuning.novaconf import update
from kvmtune.tuning.novaconf import validate
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from tests import paths

REPO = pathlib.Path(paths.REPO)
HOSTS = pathlib.Path(paths.HOSTS)
DEVSTACK_CONF = pathlib.Path(paths.FIXTURES, 'novaconf', 'devstack.conf')
CLOUD_PYTHON = paths.NOVA_PYTHON
NOVA_TIMEOUT = 300
# Check many change sets with one Nova start (importing Nova takes seconds).
CHECK_MANY = ('import json, runpy, sys; '
              'check = runpy.run_path(sys.argv[1])["check"]; '
              'print(json.dumps([check(c) for c in json.load(sys.stdin)]))')
# Nova parses the file the way nova-compute does and reports what it read.
NOVA_READS = (
    'import json, sys, warnings; warnings.simplefilter("ignore"); '
    'import nova.conf; conf = nova.conf.CONF; '
    'conf(["--config-file", sys.argv[1]], project="nova"); '
    'print(json.dumps({"cpu_shared_set": conf.compute.cpu_shared_set, '
    '"cpu_dedicated_set": conf.compute.cpu_dedicated_set, '
    '"reserved_huge_pages": conf.reserved_huge_pages, '
    '"reserved_host_memory_mb": conf.reserved_host_memory_mb, '
    '"my_ip": conf.my_ip, "connection": conf.database.connection, '
    '"cpu_mode": conf.libvirt.cpu_mode}))')


@pytest.fixture(scope='module')
def nova_python():
    python = os.environ.get(validate.ENV_PYTHON)
    if not python and os.path.exists(CLOUD_PYTHON):
        python = CLOUD_PYTHON
    reason = None
    if not python:
        reason = (f'no Nova: set {validate.ENV_PYTHON} or build the test '
                  f'cloud ({CLOUD_PYTHON})')
    else:
        try:
            if validate.run_checker(python, {})['nova'] is None:
                reason = f'{python} cannot import nova'
        except InputError as exc:
            reason = exc.line()
    if reason and os.environ.get(validate.ENV_PYTHON):
        pytest.fail(f'{validate.ENV_PYTHON} is set but {reason}',
                    pytrace=False)
    if reason and os.environ.get('KVMTUNE_FUNCTIONAL') == '1':
        pytest.fail(f'KVMTUNE_FUNCTIONAL=1 but {reason}', pytrace=False)
    if reason:
        pytest.skip(reason)
    return python


def run_nova(python, code, *args, stdin=''):
    done = subprocess.run([python, '-c', code, *args], input=stdin,
                          capture_output=True, text=True,
                          timeout=NOVA_TIMEOUT, cwd='/')
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def all_plans():
    dirs = profiles.search_dirs()
    # The constructed shapes and every real machine capture (hosts/real).
    trees = [p for p in HOSTS.iterdir() if (p / 'proc').is_dir()]
    trees += [p for p in (HOSTS / 'real').iterdir() if (p / 'proc').is_dir()]
    for host in sorted(trees):
        facts = host_facts.resolve(root=str(host))
        for name in sorted(profiles.available(dirs)):
            profile = profiles.load(name, dirs)
            yield f'{name} on {host.name}', plans.build_plan(profile, facts)


def test_every_shipped_profile_passes_nova(nova_python):
    named = list(all_plans())
    assert len(named) >= 3 * 7
    answers = run_nova(nova_python, CHECK_MANY, nova_check.__file__,
                       stdin=json.dumps([p.nova_conf for _, p in named]))
    assert {a['nova'] for a in answers} == {'34.0.0'}
    rejected = {name: a['problems'] for (name, _), a in zip(named, answers)
                if a['problems']}
    assert rejected == {}
    # Every group kvmtune writes is one Nova defines.
    assert [n for a in answers for n in a['notices']] == []


def test_nova_reasons_for_values_it_rejects(nova_python):
    answer = validate.run_checker(nova_python, {
        'libvirt': {'cpu_mode': 'bogus'},
        'compute': {'cpu_dedicated_set': '4-2', 'cpu_shared_set': ['0']},
        'DEFAULT': {'reserved_host_memory_mb': 'lots',
                    'reserved_huge_pages': ['node:0,size:zz,count:1'],
                    'debug': 'True', 'transport_url': 'rabbit://h/'},
        'filter_scheduler': {'enabled_filter': 'ComputeFilter'},
        'mdev_nvidia-35': {'device_addresses': '0000:84:00.0'},
    })
    reasons = {(p['section'], p['option']): p['reason']
               for p in answer['problems']}
    assert reasons == {
        ('libvirt', 'cpu_mode'): "Nova rejects 'bogus': Valid values are "
        "[host-model, host-passthrough, custom, none], but found 'bogus'",
        ('compute', 'cpu_dedicated_set'):
            "Nova rejects it: Invalid range expression '4-2'",
        ('compute', 'cpu_shared_set'):
            'Nova reads one value for this option, not a list',
        ('DEFAULT', 'reserved_host_memory_mb'):
            "Nova rejects 'lots': invalid literal for int() with base 10: "
            "'lots'",
        ('DEFAULT', 'reserved_huge_pages'): (
            "Nova rejects it: 'node:0,size:zz,count:1': The format of the "
            "option 'reserved_huge_pages' is invalid. (found "
            "'[{'node': '0', 'size': 'zz', 'count': '1'}]') Please refer to "
            "the nova config-reference."),
        ('filter_scheduler', 'enabled_filter'): 'Nova has no such option',
    }
    fixes = {p['option']: p['fix'] for p in answer['problems']}
    assert fixes['enabled_filter'].startswith('did you mean enabled_filters')
    # oslo.log's debug and oslo.messaging's transport_url are known too;
    # a dynamic mdev group is not Nova's to check.
    assert answer['notices'] == [
        '[mdev_nvidia-35] is not a group Nova defines; device_addresses '
        'was not checked against Nova']


def test_in_process_check_when_kvmtunes_python_has_nova(nova_python):
    # kvmtune imported by the Python that has Nova: no subprocess.
    code = ('import json, sys; from kvmtune.tuning.novaconf import validate; '
            'print(json.dumps(validate.check_with_nova('
            '{"libvirt": {"cpu_mode": "bogus"}})))')
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(validate.ENV_PYTHON, None)
    done = subprocess.run([nova_python, '-c', code], capture_output=True,
                          text=True, timeout=NOVA_TIMEOUT, env=env, cwd='/')
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert answer['via'] == nova_python
    assert answer['nova'] == '34.0.0'
    assert [p['option'] for p in answer['problems']] == ['cpu_mode']


def test_value_nova_rejects_writes_nothing(nova_python, tmp_path):
    path = tmp_path / 'nova.conf'
    shutil.copyfile(DEVSTACK_CONF, path)
    before = path.read_bytes(), os.stat(path).st_mtime_ns
    with pytest.raises(InputError,
                       match="Nova rejects 'host-pasthrough'") as info:
        update.apply(str(path), {'libvirt': {'cpu_mode': 'host-pasthrough'}},
                     nova_python=nova_python)
    assert info.value.line() == (
        f"{path}: [libvirt] cpu_mode: Nova rejects 'host-pasthrough': Valid "
        "values are [host-model, host-passthrough, custom, none], but found "
        "'host-pasthrough' (fix: give a value [libvirt] cpu_mode accepts "
        f"(see {nova_check.REFERENCE}))")
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
    assert os.listdir(tmp_path) == ['nova.conf']


def test_cli_checks_with_nova_and_nova_reads_what_was_written(nova_python,
                                                              tmp_path):
    host = HOSTS / 'intel-2s-smt-ept-1g'
    path = tmp_path / 'nova.conf'
    shutil.copyfile(DEVSTACK_CONF, path)
    env = dict(os.environ, **{validate.ENV_PYTHON: nova_python})
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'nova-conf', 'apply',
         '--profile', 'pinned-hugepages-ept', '--config', str(path),
         '--root', str(host), '--service', 'all'],
        capture_output=True, text=True, env=env, timeout=NOVA_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == 'checked against Nova 34.0.0\n'
    assert 'S3cret' not in done.stdout

    read = run_nova(nova_python, NOVA_READS, str(path))
    wanted = plans.build_plan(
        profiles.load('pinned-hugepages-ept', profiles.search_dirs()),
        host_facts.resolve(root=str(host))).nova_conf
    assert read['cpu_shared_set'] == wanted['compute']['cpu_shared_set']
    assert read['cpu_dedicated_set'] == \
        wanted['compute']['cpu_dedicated_set']
    assert read['reserved_host_memory_mb'] == \
        int(wanted['DEFAULT']['reserved_host_memory_mb'])
    assert read['reserved_huge_pages'] == [
        dict(item.split(':') for item in value.split(','))
        for value in wanted['DEFAULT']['reserved_huge_pages']]
    # What kvmtune did not touch reads as before.
    assert read['cpu_mode'] == 'host-passthrough'
    assert read['my_ip'] == '10.0.0.11'
    assert read['connection'] == ('mysql+pymysql://root:db-S3cret@10.0.0.10'
                                  '/nova_cell1?charset=utf8')
