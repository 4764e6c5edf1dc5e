"""The main job's compute decisions, on the fixture hosts.

Local test cloud: which profile, which huge pages (size, count, through
which sysfs pool) and which library calls (nova.conf, compute restart,
host tag), with the pages really written into a copy of the host's sysfs
tree. Operator's cloud (--os-cloud): where the compute's facts come from,
whether the job tags, what it tells. Only the library calls that reach a
cloud or nova.conf are stand-ins.
"""

import contextlib
import json
import os
import shutil

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune import facts
from kvmtune.mainjob import cloud
from kvmtune.mainjob import compute
from kvmtune.mainjob import hugepages
from kvmtune.mainjob import job
from kvmtune.mainjob import rallycloud
from kvmtune.mainjob import sweep
from kvmtune.mainjob import testcloud
from kvmtune.tuning import plan as plans
from kvmtune.tuning import traits
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
NOVA_CONF = '/var/lib/kvmtune-cloud/etc/nova/nova-compute.conf'
POOL = os.path.join('sys', 'kernel', 'mm', 'hugepages', 'hugepages-{}kB',
                    'nr_hugepages')
KB_2M, KB_1G = 2048, 1024 * 1024


@pytest.fixture
def host(tmp_path):
    """A writable copy of a fixture host's tree and its facts."""
    def copy(name):
        root = tmp_path / name
        shutil.copytree(os.path.join(HOSTS, name), root, symlinks=True)
        return str(root), facts.gather(str(root))
    return copy


def pool(root, kb):
    with open(os.path.join(root, POOL.format(kb))) as f:
        return int(f.read())


class Commands:
    """Records the library calls the job makes to nova.conf and the
    cloud (no subprocess is started: subprocess.Popen is forbidden), and
    answers PCPU."""

    def __init__(self, monkeypatch, pcpu=2):
        import subprocess

        self.ran = []

        def no_subprocess(argv, *args, **kwargs):
            raise AssertionError(f'runs {argv}: the job calls the library')
        monkeypatch.setattr(subprocess, 'Popen', no_subprocess)
        monkeypatch.setattr(compute, 'pcpu_total', lambda conn: pcpu)
        monkeypatch.setattr(
            compute, 'apply_nova_conf',
            lambda profile, facts, path, python=None, conf=None:
            self.ran.append(('nova-conf apply', profile, path, python)))
        self.restart = lambda: self.ran.append(('restart-compute',))
        monkeypatch.setattr(testcloud, 'restart_compute', self.restart)
        monkeypatch.setattr(
            compute, 'tag_host',
            lambda name, facts, node=None: self.ran.append(
                ('host tag', name, node)) or ('vm', ['T']))


def setup_for(host_facts, max_vms=3, ram_mb=256, profile=None,
              nova_python=None):
    setup = compute.local_setup(host_facts, NOVA_CONF, max_vms, ram_mb,
                                profile)
    setup.nova_python = nova_python
    return setup


def commands(profile, nova_python=None):
    return [('nova-conf apply', profile, NOVA_CONF, nova_python),
            ('restart-compute',), ('host tag', 'kvmtune-admin', None)]


def tune(setup, root):
    # the restart the job passes: the test cloud's (Commands records it)
    return compute.tune_local_compute(
        None, setup, 'kvmtune-admin', root,
        restart=lambda: testcloud.restart_compute())


# -- local compute: the EPT hosts -------------------------------------------

@pytest.mark.parametrize('name, nodes', [('intel-2s-smt-ept-1g', 2),
                                         ('amd-epyc-npt', 4)])
def test_ept_host_small_guests_take_2m_pages(host, monkeypatch, name,
                                             nodes):
    root, found = host(name)
    setup = setup_for(found)
    assert setup.profile == 'pinned-hugepages-ept'
    # hw:mem_page_size=large; 256 MB is no whole number of 1 GB pages
    assert setup.pages.size_kb == KB_2M
    assert 'large' in setup.pages.why and '1 GB' in setup.pages.why
    # 3 x 128 pages, 1 per NUMA node Nova keeps, 128 MB of slack
    assert setup.pages.count == 3 * 128 + nodes + 64
    assert setup.pinned
    before_1g = pool(root, KB_1G)
    ran = Commands(monkeypatch)
    assert tune(setup, root) == 2       # 2 PCPU, 1 vCPU per guest
    assert pool(root, KB_2M) == max(setup.pages.count,
                                    found['memory']['hugepages'][0]['total'])
    assert pool(root, KB_1G) == before_1g
    assert ran.ran == commands('pinned-hugepages-ept')


def test_intel_gb_guests_use_the_1g_pool_it_has(host, monkeypatch):
    root, found = host('intel-2s-smt-ept-1g')
    setup = setup_for(found, max_vms=3, ram_mb=1024)
    assert (setup.pages.size_kb, setup.pages.count) == (KB_1G, 3 + 2 + 1)
    assert pool(root, KB_1G) == 32
    ran = Commands(monkeypatch)
    tune(setup, root)
    assert pool(root, KB_1G) == 32      # enough already: never lowered
    assert pool(root, KB_2M) == 0
    assert ran.ran == commands('pinned-hugepages-ept')


def test_amd_gb_guests_grow_the_1g_pool(host, monkeypatch):
    root, found = host('amd-epyc-npt')
    setup = setup_for(found, max_vms=2, ram_mb=2048)
    assert (setup.pages.size_kb, setup.pages.count) == (KB_1G, 4 + 4 + 1)
    Commands(monkeypatch)
    tune(setup, root)
    assert pool(root, KB_1G) == 9


def test_kernel_short_of_1g_pages_names_the_boot_arguments(
        host, monkeypatch):
    root, found = host('amd-epyc-npt')
    setup = setup_for(found, max_vms=2, ram_mb=2048)
    ran = Commands(monkeypatch)
    # The kernel finds 1 contiguous GB and no more.
    monkeypatch.setattr(hugepages, '_write_int',
                        lambda path, value: open(path, 'w').write('1'))
    with pytest.raises(KvmtuneError,
                       match='the kernel gave 1 of 9 1 GB pages') as err:
        tune(setup, root)
    line = err.value.line()
    assert 'the kernel gave 1 of 9 1 GB pages' in line
    # The plan's kernel arguments for a 1 GB pool on this host
    args = 'default_hugepagesz=1G hugepagesz=1G hugepages=249'
    assert args in line and 'GRUB_CMDLINE_LINUX' in line
    assert setup.pages.kernel_args == args.split()
    assert '\n' not in line
    assert ran.ran == []                 # nothing after the pages


def test_missing_pool_is_one_line_with_the_boot_arguments(host,
                                                          monkeypatch):
    root, found = host('intel-2s-smt-ept-1g')
    setup = setup_for(found, max_vms=1, ram_mb=1024)
    shutil.rmtree(os.path.join(root, os.path.dirname(POOL.format(KB_1G))))
    ran = Commands(monkeypatch)
    with pytest.raises(KvmtuneError,
                       match='no 1 GB page pool in this kernel') as err:
        tune(setup, root)
    line = err.value.line()
    assert line.startswith(os.path.join(root, POOL.format(KB_1G)))
    assert 'no 1 GB page pool' in line
    assert 'hugepagesz=1G' in line and '\n' not in line
    assert ran.ran == []


@pytest.mark.parametrize('name', ['intel-2s-smt-ept-1g', 'amd-epyc-npt'])
def test_ept_flavor_trait_is_the_one_host_tag_sets(name):
    found = facts.gather(os.path.join(HOSTS, name))
    profile = compute.load_profile('pinned-hugepages-ept')
    plan = plans.build_plan(profile, found)
    assert plan.extra_specs['trait:' + traits.EPT] == 'required'
    assert compute.required_traits(plan) == {traits.EPT}
    assert traits.EPT in traits.from_facts(found)


# -- local compute: this host (PVM guest, no EPT) ---------------------------

def test_this_host_takes_pinned_hugepages_with_2m_pages(host, monkeypatch):
    root, found = host('pvm-guest-2cpu')
    setup = setup_for(found, max_vms=1, nova_python='/cloud/bin/python')
    assert setup.profile == 'pinned-hugepages'
    assert 'no EPT/NPT' in setup.why
    assert setup.pages.size_kb == KB_2M
    assert setup.pages.why == 'hw:mem_page_size=2MB'
    assert setup.pages.count == 128 + 1 + 64
    ran = Commands(monkeypatch, pcpu=1)
    assert tune(setup, root) == 1       # one pinned guest fits
    assert setup.pcpu == 1
    assert pool(root, KB_2M) == 193
    assert pool(root, KB_1G) == 0
    assert ran.ran == commands('pinned-hugepages', '/cloud/bin/python')


def test_this_host_refuses_the_ept_profile(host):
    _, found = host('pvm-guest-2cpu')
    with pytest.raises(KvmtuneError,
                       match='profile pinned-hugepages-ept requires '
                             'CUSTOM_KVMTUNE_EPT') as err:
        setup_for(found, profile='pinned-hugepages-ept')
    assert traits.EPT in err.value.line()
    assert 'NoValidHost' in err.value.line()


def test_profile_without_hugepages_reserves_none(host, monkeypatch):
    root, found = host('pvm-guest-2cpu')
    setup = setup_for(found, profile='cpu-pinning')
    assert setup.pages is None
    ran = Commands(monkeypatch)
    tune(setup, root)
    assert pool(root, KB_2M) == 0
    assert ran.ran == commands('cpu-pinning')


# -- an operator's cloud -----------------------------------------------------

def remote(this, nodes, compute_facts=None, profile=None):
    return compute.remote_setup('op', this, set(nodes), 3, 256,
                                compute_facts, profile)


def test_remote_with_compute_facts_tags_that_compute(tmp_path):
    intel = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    path = tmp_path / 'compute.json'
    path.write_text(json.dumps(intel))
    this = facts.gather(os.path.join(HOSTS, 'pvm-guest-2cpu'))
    setup = remote(this, ['compute-intel-1'], str(path))
    assert setup.profile == 'pinned-hugepages-ept'
    assert 'compute compute-intel-1 has EPT/NPT' in setup.why
    assert setup.node == 'compute-intel-1'
    assert setup.facts['hostname'] == intel['hostname']
    lines = compute.operator_steps(setup, 'op', 3, 256)
    assert any('nova-conf apply --profile pinned-hugepages-ept' in s
               for s in lines)
    assert any(s.startswith('  450 free 2 MB pages for 3 x 256 MB guests')
               for s in lines)


@pytest.mark.parametrize('node', ['vm', 'vm.example.org'])
def test_remote_this_host_is_a_compute(node):
    this = facts.gather(os.path.join(HOSTS, 'pvm-guest-2cpu'))
    setup = remote(this, [node, 'other'])
    assert setup.facts is this
    assert setup.profile == 'pinned-hugepages'
    assert setup.source == f'this host: it is compute node {node} of the ' \
        'cloud'
    assert setup.node == node


def test_remote_facts_file_of_an_unlisted_compute(tmp_path):
    path = tmp_path / 'compute.json'
    path.write_text(json.dumps(facts.gather(os.path.join(
        HOSTS, 'amd-epyc-npt'))))
    this = facts.gather(os.path.join(HOSTS, 'pvm-guest-2cpu'))
    setup = remote(this, ['n1', 'n2'], str(path))
    # host tag then looks for compute-amd-1 itself and names the nodes
    assert setup.node is None and setup.facts is not None


def test_remote_without_facts_does_not_tag():
    this = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    setup = remote(this, ['compute-7'])
    # this host has EPT, but it is not the cloud's compute
    assert setup.profile == 'pinned-hugepages'
    assert setup.facts is None and setup.node is None
    assert compute.tag_remote(setup, 'op') == []
    assert 'compute-7' in setup.source and '--compute-facts' in \
        setup.source
    lines = compute.operator_steps(setup, 'op', 3, 256)
    assert lines[-1].startswith('  kvmtune host tag --os-cloud op')
    assert lines[-2] == ('  the huge pages and kernel arguments the plan '
                         'names')


class FakeConn:
    """An openstacksdk connection listing one compute node."""

    def __init__(self, node):
        class Hypervisor:
            name = node

        class Compute:
            def hypervisors(self):
                return [Hypervisor()]
        self.compute = Compute()
        self.config = None


class FakeCloud:
    """kvmtune.openstack.connection.Cloud as the job uses it."""

    def __init__(self, conn):
        self.conn = conn

    def named(self):
        return contextlib.nullcontext()


class FakeRally:
    def __init__(self, state_dir):
        self.dir = state_dir
        self.conf = f'{state_dir}/rally.conf'
        self.sla_failures = []

    def use_cloud(self, name, spec):
        return {'environment': 'created', 'replaced': None,
                'database': 'sqlite:///x'}

    # the job's own thread around use_cloud above
    use_cloud_beside = sweep.Rally.use_cloud_beside

    def sweep(self, task, args, out_json, out_html, progress=None):
        FakeRally.task, FakeRally.args = task, args
        return 'task-1', True


def test_main_os_cloud_changes_nothing_here(monkeypatch, tmp_path, capsys):
    this = facts.gather()
    ran = Commands(monkeypatch)

    def forbidden(*args, **kwargs):
        raise AssertionError('touches this host or starts a cloud')
    for module, name in ((testcloud, 'testcloud_up'), (testcloud, 'nova_conf'),
                         (testcloud, 'restart_compute'),
                         (compute, 'tune_local_compute'),
                         (compute, 'apply_nova_conf'),
                         (hugepages, 'reserve_hugepages'),
                         (hugepages, '_write_int')):
        monkeypatch.setattr(module, name, forbidden)
    from kvmtune.image import build
    from kvmtune.openstack import flavors
    made = []
    monkeypatch.setattr(build, 'build', lambda *a, **k: made.append(
        'image') or {'sizes': {}, 'changed': False})
    monkeypatch.setattr(flavors, 'apply_profile', lambda cloud_name,
                        profile, base, facts_file, config_files: made.append(
                            (cloud_name, profile, base)) or
                        f'{base}.{profile}')
    monkeypatch.setattr(cloud, 'upload_image', lambda conn: 'image')
    monkeypatch.setattr(cloud, 'base_flavor', lambda conn: 'flavor')
    monkeypatch.setattr(rallycloud, 'rally_spec', lambda config: {})
    monkeypatch.setattr(sweep, 'Rally', FakeRally)
    monkeypatch.setattr(job, '_report_step', lambda out, base, state: (
        'table\n', {'png': 'p.png', 'html': 'r.html'}))
    monkeypatch.setattr(cloud, 'connect',
                        lambda name: FakeCloud(FakeConn(this['hostname'])))
    rc = job.run(job.Settings(os_cloud='op', max_vms=1, runtime=5,
                              state_dir=str(tmp_path)))
    assert rc == 0, capsys.readouterr().out
    profile = compute.tuned_profile(this)[0]
    assert made == ['image', ('op', 'baseline', 'm1.bench'),
                    ('op', profile, 'm1.bench')]
    # tagged from this host's facts, the compute of that name
    assert ran.ran == [('host tag', 'op', this['hostname'])]
    assert FakeRally.task == sweep.task_path('disk-scaling')
    assert FakeRally.args['runtime'] == 5
    assert FakeRally.args['emulated'] is False
    # each flavor's result record rides in the task arguments;
    # the bare host is not the cloud's compute: no baseline, said so
    assert sorted(FakeRally.args['records']) == sorted(
        f'm1.bench.{p}' for p in ('baseline', profile))
    assert FakeRally.args['records']['m1.bench.baseline']['profile'] == \
        'baseline'
    assert 'baseline' not in FakeRally.args
    out = capsys.readouterr().out
    assert 'main-job: on each compute host of cloud op' in out
    assert 'bare-host baseline: not measured' in out
    saved = json.loads((tmp_path / 'disk-scaling-args.json').read_text())
    assert saved == json.loads(json.dumps(FakeRally.args))
    # the re-run line sets the cloud up again, gives plain
    # rally the cloud's environment, then runs the sweep
    assert (f'main-job: re-run the sweep by hand: kvmtune main-job '
            f'--os-cloud op --max-vms 1 --runtime 5 --state-dir {tmp_path} '
            '--setup-only && kvmtune rally env --os-cloud op && rally task '
            'start "$(kvmtune rally task-path disk-scaling)" '
            f'--task-args-file {tmp_path}/disk-scaling-args.json\n') in out
    assert out.splitlines()[-1] == 'main-job: SLA: met'


def test_a_withheld_plan_stops_the_job_before_it_changes_anything():
    # A real capture whose /proc/meminfo has no MemTotal: the hugepages
    # tuner withholds the pool size; the main job plans through
    # kvmtune.tuning.plan.for_host and so refuses it at once.
    from kvmtune.errors import InputError

    found = facts.gather(os.path.join(HOSTS, 'real', 'x86_64-epyc_7451'))
    with pytest.raises(InputError, match='withheld.*memory size is unknown'):
        compute.local_setup(found, NOVA_CONF, 1, 256,
                            profile_name='hugepages')
