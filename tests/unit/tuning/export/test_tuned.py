"""tuned target, proven by tuned's own profile loader (Debian's tuned).

tuned's Loader loads the stock cpu-partitioning profile with its variables
include pointed at the exported file (the include is an absolute path,
/etc/tuned/cpu-partitioning-variables.conf, the one line changed in a copy
of the stock profiles); tuned's own variable expansion must give the
planned dedicated CPUs as isolated_cores and put them in the bootloader
unit's nohz_full/rcu_nocbs command line. tuned also asserts that the
isolated cores are CPUs online on the machine that loads it, so the export
is made from the facts of a 2-CPU host (tests/fixtures/hosts/pvm-guest-2cpu):
any machine with two CPUs can load it.
"""

import json
import os
import shutil
import subprocess

import pytest

from kvmtune import cli
from tests.paths import HOSTS
from tests.unit.tuning.export import consumers

_LOAD = r'''
import json, sys
sys.path.insert(0, sys.argv[2])
from tuned.profiles import Loader, Locator, Factory, Merger, variables
import tuned.utils.global_config as gc
loader = Loader(Locator([sys.argv[1]]), Factory(), Merger(),
                gc.GlobalConfig(), variables.Variables())
profile = loader.load(['cpu-partitioning'])
v = loader._variables
boot = profile.units['bootloader'].options
print(json.dumps({
    'isolated_cores': v.expand('${isolated_cores}'),
    'expanded': v.expand('${isolated_cores_expanded}'),
    'cmdline': v.expand(boot.get('cmdline_cpu_part', '')),
}))
'''


SMALL = os.path.join(HOSTS, 'pvm-guest-2cpu')


@consumers.needs_tuned
@pytest.mark.skipif(os.cpu_count() < 2, reason='tuned wants the isolated '
                    'CPU (1) online; this machine has one CPU')
def test_tuned_reads_the_variables(tmp_path):
    out = tmp_path / 'out'
    consumers.export('tuned', out, profile='cpu-pinning', host=None,
                     root=SMALL)
    variables = out / 'etc/tuned/cpu-partitioning-variables.conf'
    profiles = tmp_path / 'profiles'
    shutil.copytree('/usr/lib/tuned', profiles, symlinks=True)
    conf = profiles / 'cpu-partitioning' / 'tuned.conf'
    text = conf.read_text()
    assert 'include=/etc/tuned/cpu-partitioning-variables.conf' in text
    conf.write_text(text.replace(
        'include=/etc/tuned/cpu-partitioning-variables.conf',
        f'include={variables}'))
    done = subprocess.run(
        ['/usr/bin/python3', '-c', _LOAD, str(profiles),
         consumers.TUNED_PATH], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    plan, _ = consumers.plan('cpu-pinning', root=SMALL)
    cores = plan.nova_conf['compute']['cpu_dedicated_set']
    assert cores == '1'
    assert got['isolated_cores'] == cores
    # tuned's cpulist_unpack of it: every dedicated CPU, none of the shared.
    from kvmtune.facts.cpulist import parse_cpu_spec
    assert [int(c) for c in got['expanded'].split(',')] == sorted(
        parse_cpu_spec(cores))
    assert f'nohz_full={cores}' in got['cmdline']
    assert f'rcu_nocbs={cores}' in got['cmdline']


def test_kernel_args_swap_isolcpus_for_tuned_isolation(tmp_path):
    out = tmp_path / 'out'
    consumers.export('tuned', out)
    grub = (out / 'etc/default/grub.d/50-kvmtune.cfg').read_text()
    assert 'isolcpus=' not in grub
    assert 'nohz_full=1-19,21-39,41-59,61-79' in grub
    assert 'rcu_nocbs=1-19,21-39,41-59,61-79' in grub
    assert 'hugepagesz=1G' in grub


def test_profile_without_isolation_is_refused(tmp_path, capsys):
    out = tmp_path / 'out'
    assert cli.main(['export', '--profile', 'net-tuned', '--target',
                     'tuned', '--root', consumers.HOST_DIR, '--output',
                     str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'isolates no CPUs' in err
    assert not out.exists()
