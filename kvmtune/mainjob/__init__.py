"""The main job: from a fresh host to a scaling report (tools/main-job).

Without --os-cloud it brings up the single-host test cloud (libvirt
compute, QEMU TCG here) and works against it; with --os-cloud C it uses
that cloud and starts nothing locally. Either way it builds and uploads
the benchmark image, makes the default and the tuned flavor with
`kvmtune flavor apply`, runs the disk scaling sweep with Rally and prints
`kvmtune report`. Rally's database and settings stay in the state
directory.

The tuned profile follows the compute's facts: pinned-hugepages-ept where
EPT/NPT is on (its flavor requires CUSTOM_KVMTUNE_EPT, the trait `kvmtune
host tag` sets from the same facts), else pinned-hugepages (no trait);
--tuned-profile overrides.

On the local test cloud, whose compute is this host, the job also tunes
the compute: huge pages of the size the tuned flavor asks for
(hw:mem_page_size; `large` is the largest page that divides the guests'
RAM) through /sys/kernel/mm/hugepages, `kvmtune nova-conf apply` (PCPU
inventory), a compute restart, and `kvmtune host tag`.

With --os-cloud nothing on this host changes (no nova.conf, no huge
pages) and no credential is printed. The computes are the operator's: the
job prints what to run on them. Their facts come from --compute-facts
FILE (`kvmtune host inspect --format json` on a compute), or from this
host when it is one of the cloud's compute nodes (same name); with them
the job picks the tuned profile, shows its plan and tags that compute
(`kvmtune host tag`, Placement traits only). Without them it does not tag
(this host's facts would describe the wrong machine) and takes
pinned-hugepages, which needs no trait. The image and the flavors stay in
the cloud afterwards: a second run reuses them, `kvmtune flavor remove
--delete` removes a tuned flavor.

Exit status: 0 when every step ran and the task met its SLA, 1 when the
task ran but an SLA failed, 2 when a step could not run.
"""
import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys

from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError

# kvmtune/mainjob/__init__.py: the repository is three levels up
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CLOUD_CTL = os.path.join(REPO, 'tests', 'functional', 'cloud', 'cloud')
TASK = os.path.join(REPO, 'rally_scenarios', 'tasks', 'disk-scaling.yaml')
IMAGE_DIR = os.environ.get('KVMTUNE_IMAGE_DIR', '/var/lib/kvmtune/images')
CLOUD_DIR = os.environ.get('KVMTUNE_CLOUD_DIR', '/var/lib/kvmtune-cloud')
STATE_DIR = os.environ.get('KVMTUNE_STATE_DIR',
                           '/var/lib/kvmtune/main-job')
BASE_PROFILE = 'baseline'
# The tuned profile by whether the host has EPT/NPT: the -ept profile's
# flavor requires CUSTOM_KVMTUNE_EPT, which an EPT-less host never gets.
TUNED_PROFILES = {True: 'pinned-hugepages-ept', False: 'pinned-hugepages'}
CLOUD_PYTHON = '/opt/kvmtune-cloud/venv/bin/python'
# One pool per page size; the kernel fills or empties it on a write.
NR_HUGEPAGES = os.path.join('sys', 'kernel', 'mm', 'hugepages',
                            'hugepages-{kb}kB', 'nr_hugepages')
SMALLEST_HUGEPAGE_KB = 2048     # x86-64: 2 MB, then 1 GB
HUGEPAGE_MARGIN_MB = 128        # beyond the guests' RAM, for QEMU's slack
PCPU_TIMEOUT = 120
IMAGE_NAME = 'kvmtune-bench'
# The base flavor: small guests, and an ephemeral disk the job benchmarks.
BASE_FLAVOR = {'name': 'm1.bench', 'vcpus': 1, 'ram': 256, 'disk': 1,
               'ephemeral': 1}
_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def say(text):
    print(f'main-job: {text}', flush=True)


def bin_path(name):
    """A console script of this venv (kvmtune, rally)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else shutil.which(name) or name


def run(argv, env=None, capture=False):
    """Run a step; its output goes to ours unless captured."""
    say('$ ' + ' '.join(argv))
    proc = subprocess.run(argv, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
        raise CloudError(f'exited {proc.returncode}',
                         source=' '.join(argv[:3]))
    return proc.stdout


def rally_spec(cloud):
    """An existing@openstack spec from an openstacksdk CloudRegion."""
    auth = cloud.config['auth']
    admin = {k: auth[k] for k in ('username', 'password', 'project_name',
                                  'user_domain_name', 'project_domain_name')
             if auth.get(k)}
    spec = {'auth_url': auth['auth_url'], 'admin': admin,
            'endpoint_type': cloud.config.get('interface') or 'public'}
    if cloud.get_region_name():
        spec['region_name'] = cloud.get_region_name()
    if cloud.config.get('verify') is False:
        spec['https_insecure'] = True
    return {'existing@openstack': spec}


def task_args(max_vms, workload, flavors, image, baseline=None,
              emulated=False, runtime=None):
    args = {'max_vms': max_vms, 'workload': workload, 'flavors': flavors,
            'image_name': image, 'emulated': emulated}
    if runtime:
        args['runtime'] = runtime
    if baseline:
        args['baseline'] = os.path.abspath(baseline)
    return args


class Rally:
    """Rally with its database and globals kept in one directory."""

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, 'rally')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.conf = os.path.join(self.dir, 'rally.conf')
        with open(self.conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///'
                    + os.path.join(self.dir, 'rally.sqlite') + '\n')
        # Rally keeps the "current" env and task under ~/.rally
        self.env = dict(os.environ, HOME=self.dir)

    def __call__(self, *args, capture=False):
        return run([bin_path('rally'), '--config-file', self.conf, *args],
                   env=self.env, capture=capture)

    def use_cloud(self, name, spec):
        self('db', 'ensure')
        envs = json.loads(self('env', 'list', '--json', capture=True)
                          or '[]')
        if any(e['name'] == name for e in envs):
            self('env', 'destroy', name, capture=True)
            self('env', 'delete', name, capture=True)
        path = os.path.join(self.dir, 'spec.json')
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            json.dump(spec, f)
        try:
            # Rally prints the spec back, password included: keep it quiet
            self('env', 'create', '--name', name, '--spec', path,
                 capture=True)
        finally:
            os.unlink(path)
        say(f'rally env {name}: created from cloud credentials (not shown)')
        self('env', 'check')

    def start_task(self, task, args):
        """Run the task, echoing Rally's output; its UUID. Rally exits
        non-zero when an iteration failed: the report still follows."""
        argv = [bin_path('rally'), '--config-file', self.conf, 'task',
                'start', task, '--task-args', json.dumps(args)]
        say('$ ' + ' '.join(argv))
        uuid = None
        with subprocess.Popen(argv, env=self.env, text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) as proc:
            for line in proc.stdout:
                print(line, end='', flush=True)
                found = _UUID.search(line) if uuid is None else None
                if found and 'Task' in line:
                    uuid = found.group(0)
        if uuid is None:
            raise CloudError(f'rally exited {proc.returncode} before it '
                             'started a task', source=task)
        return uuid

    def sweep(self, task, args, out_json, out_html):
        uuid = self.start_task(task, args)
        state = self('task', 'status', uuid, capture=True).split()[-1]
        if state not in ('finished', 'aborted'):
            raise CloudError(f'rally task {uuid} ended {state}: no sweep '
                             'ran', source=task,
                             fix=f'rally task detailed {uuid} shows why')
        self('task', 'report', uuid, '--json', '--out', out_json)
        self('task', 'report', uuid, '--html-static', '--out', out_html)
        proc = subprocess.run([bin_path('rally'), '--config-file', self.conf,
                               'task', 'sla-check', uuid], env=self.env)
        return uuid, proc.returncode == 0


def local_cloud():
    """Bring up the test cloud (libvirt compute) unless it already runs."""
    status = subprocess.run([CLOUD_CTL, 'status'], capture_output=True,
                            text=True)
    if status.returncode == 0 and 'libvirt compute' in status.stdout:
        say('test cloud already up with libvirt compute: using it')
    elif status.returncode == 0:
        raise CloudError('a test cloud without libvirt compute is up',
                         source=CLOUD_DIR,
                         fix='guests need libvirt: when nobody uses it, '
                             f'{CLOUD_CTL} down, then run again')
    else:
        run([CLOUD_CTL, 'install'])
        run([CLOUD_CTL, 'up', '--compute', 'libvirt'])
    os.environ['OS_CLIENT_CONFIG_FILE'] = os.path.join(CLOUD_DIR,
                                                       'clouds.yaml')
    return 'kvmtune-admin'


def tuned_profile(facts):
    """(profile, why) for a host's facts."""
    from kvmtune import traits

    if traits.EPT in traits.from_facts(facts):
        return TUNED_PROFILES[True], ('this host has EPT/NPT (virt.ept '
                                      f'true): {traits.EPT} can be asked for')
    return TUNED_PROFILES[False], (
        f'this host has no EPT/NPT (virt.ept '
        f'{json.dumps(facts["virt"]["ept"])}): '
        f'no compute here gets {traits.EPT}, so pinning + 2 MB pages '
        'without that trait')


def page_label(kb):
    return f'{kb // 1024 // 1024} GB' if kb >= 1024 * 1024 else \
        f'{kb // 1024} MB'


@dataclasses.dataclass
class Pages:
    """The huge pages the tuned guests need on their compute."""

    size_kb: int          # page size (a pool under /sys/kernel/mm)
    count: int            # pages for max_vms guests, Nova's reserve, slack
    why: str              # how the flavor's hw:mem_page_size led here
    kernel_args: list     # the plan's boot-time pool of this size

    @property
    def label(self):
        return page_label(self.size_kb)


def _pool_name(size_kb):
    """'1G' or '2M', the tuner's names of the x86 page pools."""
    from kvmtune.tuners import hugepages

    return {kb: name for name, kb in hugepages.PAGE_KB.items()}.get(size_kb)


def _hugepages_tuner(profile, facts, size_kb=None):
    """The profile's hugepages tuner, its pool set to size_kb if given."""
    from kvmtune.tuners import hugepages

    for ref in profile.tuner_refs:
        if ref.name == hugepages.Hugepages.name:
            params = dict(ref.params)
            if size_kb:
                params['host_page_size'] = _pool_name(size_kb)
            return ref.tuner_class(params, facts, source=profile.path)
    return None


def guest_pages(profile, facts, max_vms, ram_mb):
    """Pages of the size the profile's flavor asks for (hw:mem_page_size),
    or None when its guests take no huge pages (small, any or unset).

    Nova backs `large` with the largest host page that divides the
    guest's RAM (it tries them largest first); the candidates are the
    pool the profile's plan makes (1 GB with pdpe1gb, else 2 MB) and 2 MB.
    """
    from kvmtune import plan as plans
    from kvmtune.tuners import hugepages

    spec = plans.build_plan(profile, facts).extra_specs.get(
        'hw:mem_page_size')
    if spec is None:
        return None
    ram_kb = ram_mb * 1024
    explicit = hugepages.page_size_kb(spec)
    if explicit is not None:
        size_kb = explicit
        if _pool_name(size_kb) is None:
            raise KvmtuneError(f'no {size_kb} KiB pages on x86-64',
                               source=profile.path, key='hw:mem_page_size',
                               fix='use 2MB, 1GB or large')
        if ram_kb % size_kb:
            raise KvmtuneError(
                f'{ram_mb} MB guests are no whole number of '
                f'{page_label(size_kb)} pages, Nova cannot place them',
                source=profile.path, key='hw:mem_page_size',
                fix='use a page size that divides the guest RAM')
        why = f'hw:mem_page_size={spec}'
    elif spec == 'large':
        pool = hugepages.PAGE_KB[_hugepages_tuner(profile,
                                                  facts).pool_size()]
        fits = [kb for kb in (pool, SMALLEST_HUGEPAGE_KB) if not ram_kb % kb]
        size_kb = fits[0] if fits else SMALLEST_HUGEPAGE_KB
        why = (f'hw:mem_page_size=large: Nova takes the largest page that '
               f'divides the guest RAM; the plan\'s pool has '
               f'{page_label(pool)} pages')
        if size_kb != pool:
            why += (f', {ram_mb} MB is no whole number of them, so '
                    f'{page_label(size_kb)}')
    else:
        return None
    tuner = _hugepages_tuner(profile, facts, size_kb)
    reserved = (tuner.params['host_reserved_pages'] * len(tuner.numa_nodes())
                if tuner else 0)
    count = (max_vms * -(-ram_kb // size_kb) + reserved +
             -(-HUGEPAGE_MARGIN_MB * 1024 // size_kb))
    # The plan's boot-time pool of this size (the profile's own sizing),
    # never smaller than what the job needs.
    boot = tuner.pool_args() if tuner else [
        f'hugepagesz={_pool_name(size_kb)}', 'hugepages=0']
    boot = [f'hugepages={max(int(arg.split("=")[1]), count)}'
            if arg.startswith('hugepages=') else arg for arg in boot]
    return Pages(size_kb, count, why, boot)


def required_traits(plan):
    """Traits a plan's flavor requires (trait:X=required)."""
    return {key[len('trait:'):] for key, value in plan.extra_specs.items()
            if key.startswith('trait:') and value == 'required'}


def check_traits(profile, facts):
    """The traits the tuned flavor requires must be ones `kvmtune host
    tag` sets from the same facts, else its guests get NoValidHost."""
    from kvmtune import plan as plans
    from kvmtune import traits

    missing = required_traits(plans.build_plan(profile, facts)) - \
        traits.from_facts(facts)
    if missing:
        raise KvmtuneError(
            f'profile {profile.name} requires {", ".join(sorted(missing))}, '
            f'which kvmtune host tag does not set from the facts of '
            f'{facts.get("hostname")}: its guests would get NoValidHost',
            source=facts.get('source'), key='--tuned-profile',
            fix=f'use {TUNED_PROFILES[False]} (no trait) or a compute '
                'with EPT/NPT')


@dataclasses.dataclass
class LocalSetup:
    """What the job does to the local compute before the sweep."""

    profile: str
    why: str
    pages: Pages          # None: the tuned guests take no huge pages
    nova_conf: str        # the compute's nova.conf
    commands: list        # argv lists, run in order after the pages


def load_profile(name):
    from kvmtune import profiles

    return profiles.load(name, profiles.configured_dirs(None))


def local_setup(facts, kvmtune, cloud_name, nova_conf, max_vms, ram_mb,
                profile_name=None, nova_python=None):
    """The local compute's tuning for the tuned profile, decided from
    this host's facts; nothing runs here."""
    name, why = tuned_profile(facts)
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    profile = load_profile(name)
    check_traits(profile, facts)
    apply = [kvmtune, 'nova-conf', 'apply', '--profile', name,
             '--config', nova_conf]
    if nova_python:
        apply += ['--nova-python', nova_python]
    commands = [apply, [CLOUD_CTL, 'restart-compute'],
                [kvmtune, 'host', 'tag', '--os-cloud', cloud_name]]
    return LocalSetup(name, why, guest_pages(profile, facts, max_vms, ram_mb),
                      nova_conf, commands)


def _read_int(path):
    with open(path) as f:
        return int(f.read())


def _write_int(path, value):
    with open(path, 'w') as f:
        f.write(str(value))


def reserve_hugepages(pages, root='/'):
    """Raise the pool of pages.size_kb to pages.count (never lower it);
    the kernel may find fewer free, so read back what it gave."""
    from kvmtune.tuners import base

    path = os.path.join(root, NR_HUGEPAGES.format(kb=pages.size_kb))
    boot_fix = base.KERNEL_ARGS_FIX.format(args=' '.join(pages.kernel_args))
    if not os.path.exists(path):
        raise CloudError(f'no {pages.label} page pool in this kernel',
                         source=path, fix=boot_fix)
    before = _read_int(path)
    if before >= pages.count:
        say(f'hugepages: {before} x {pages.label} already, {pages.count} '
            'needed')
        return
    try:
        _write_int(path, pages.count)
    except OSError as exc:
        raise CloudError(f'cannot grow the {pages.label} pool: '
                         f'{exc.strerror}', source=path,
                         fix='run the job as root on the compute') from None
    got = _read_int(path)
    if got < pages.count:
        # Large pages need contiguous free memory: 1 GB ones rarely
        # exist after boot, so the pool is made at boot.
        raise CloudError(f'the kernel gave {got} of {pages.count} '
                         f'{pages.label} pages', source=path,
                         fix=('free memory and run again, or '
                              if pages.size_kb == SMALLEST_HUGEPAGE_KB
                              else '') + boot_fix)
    say(f'hugepages: {before} -> {got} x {pages.label} for the tuned guests')


def cloud_env():
    """The local test cloud's `cloud env` as a dict."""
    out = run([CLOUD_CTL, 'env'], capture=True)
    return dict(line[len('export '):].split('=', 1)
                for line in out.splitlines() if line.startswith('export '))


def pcpu_total(conn):
    """PCPU total of the cloud's one compute node in Placement."""
    hypervisors = list(conn.compute.hypervisors())
    if len(hypervisors) != 1:
        raise CloudError(f'{len(hypervisors)} compute nodes, expected the '
                         'test cloud\'s one', source=CLOUD_DIR)
    inventories = conn.placement.get(
        f'/resource_providers/{hypervisors[0].id}/inventories',
        microversion='1.6').json()['inventories']
    return inventories.get('PCPU', {}).get('total', 0)


def tune_local_compute(conn, setup, root='/'):
    """Pages, nova.conf of the profile, restart, PCPU shown, host tag."""
    import time

    # Pages first: nova-conf apply plans from this host's facts
    if setup.pages:
        say(f'hugepages: {setup.pages.label} pages ({setup.pages.why})')
        reserve_hugepages(setup.pages, root)
    apply, restart, tag = setup.commands
    run(apply)
    run(restart)
    deadline = time.monotonic() + PCPU_TIMEOUT
    while not (pcpu := pcpu_total(conn)):
        if time.monotonic() > deadline:
            raise CloudError(f'no PCPU inventory {PCPU_TIMEOUT} s after '
                             'the compute restart', source=setup.nova_conf,
                             key='compute.cpu_dedicated_set')
        time.sleep(2)
    say(f'compute: {pcpu} PCPU in Placement, {BASE_FLAVOR["vcpus"]} per '
        'pinned guest: tuned guests at once, at most '
        f'{pcpu // BASE_FLAVOR["vcpus"]} (more get NoValidHost)')
    run(tag)


# -- an operator's cloud (--os-cloud) ---------------------------------------

@dataclasses.dataclass
class RemoteSetup:
    """What the job knows and does about another cloud's computes."""

    profile: str
    why: str
    facts: dict           # facts of a compute of the cloud, or None
    facts_args: list      # how kvmtune commands name those facts
    source: str           # where those facts came from (or why none)
    commands: list        # argv lists the job runs (cloud writes, reads)


def node_named(hostname, node_names):
    """The compute node a host is: same name, or the same first label
    (libvirt may report the FQDN of a host whose name is short)."""
    if not hostname:
        return None
    for node in sorted(node_names):
        if node == hostname or node.split('.')[0] == hostname:
            return node
    return None


def compute_facts(compute_facts_file, this_facts, node_names):
    """(facts, compute node or None, where they come from) of a compute
    of the cloud; (None, None, why not) when the job has none."""
    from kvmtune import facts as host_facts

    if compute_facts_file:
        found = host_facts.load(compute_facts_file)
        return found, node_named(found.get('hostname'), node_names), (
            f'compute {found.get("hostname")} from {compute_facts_file}')
    here = this_facts.get('hostname')
    node = node_named(here, node_names)
    if node:
        return this_facts, node, (f'this host: it is compute node {node} '
                                  'of the cloud')
    return None, None, (f'this host ({here}) is none of the cloud\'s '
                        'compute nodes '
                        f'({", ".join(sorted(node_names)) or "none"}) and '
                        'no --compute-facts was given')


def remote_setup(cloud_name, this_facts, node_names, kvmtune, max_vms,
                 ram_mb, compute_facts_file=None, profile_name=None):
    """The tuned profile and the cloud-side steps for an operator's
    cloud; nothing on this host is changed."""
    found, node, source = compute_facts(compute_facts_file, this_facts,
                                        node_names)
    facts_args = ['--facts', compute_facts_file] if compute_facts_file \
        else []
    if found is not None:
        name, why = tuned_profile(found)
        why = why.replace('this host', f'compute {found.get("hostname")}')
    else:
        name, why = TUNED_PROFILES[False], (
            'no facts of the cloud\'s computes, so EPT/NPT is unknown: '
            'pinning + 2 MB pages, which requires no trait')
    if profile_name:
        name, why = profile_name, 'named by --tuned-profile'
    commands = []
    if found is not None:
        check_traits(load_profile(name), found)
        commands.append([kvmtune, 'plan', '--profile', name, *facts_args])
        # Without a node of that name host tag picks the only node, or
        # says which names there are.
        commands.append([kvmtune, 'host', 'tag', '--os-cloud', cloud_name,
                         *facts_args, *(['--hypervisor', node] if node
                                        else [])])
    return RemoteSetup(name, why, found, facts_args, source, commands)


def operator_steps(setup, cloud_name, max_vms, ram_mb):
    """Lines saying what the operator does on each compute host."""
    profile = setup.profile
    steps = [f'on each compute host of cloud {cloud_name} (not done by this '
             'job):',
             f'  kvmtune plan --profile {profile}   (what it needs there)',
             f'  kvmtune nova-conf apply --profile {profile} --config '
             '/etc/nova/nova.conf, then restart nova-compute']
    if setup.facts is not None:
        pages = guest_pages(load_profile(profile), setup.facts, max_vms,
                            ram_mb)
        if pages:
            steps.append(f'  {pages.count} free {pages.label} pages for '
                         f'{max_vms} x {ram_mb} MB guests ({pages.why}); '
                         'boot-time pool: ' + ' '.join(pages.kernel_args))
    else:
        steps.append('  the huge pages and kernel arguments the plan names')
    steps.append(f'  kvmtune host tag --os-cloud {cloud_name}   '
                 '(CUSTOM_KVMTUNE_* traits from that host\'s facts)')
    return steps


def compute_node_names(conn):
    """Hypervisor hostnames of the cloud (admin); empty when hidden."""
    try:
        return {h.name for h in conn.compute.hypervisors()}
    except Exception as exc:  # a non-admin account may not list them
        say(f'compute nodes: not listed ({type(exc).__name__}): '
            'tagging needs --compute-facts')
        return set()


def local_cloud_emulated():
    """True when the local test cloud runs guests under QEMU TCG."""
    import configparser

    conf = configparser.ConfigParser(strict=False, interpolation=None)
    # nova-compute reads nova.conf, then nova-compute.conf (later wins)
    conf.read([os.path.join(CLOUD_DIR, 'etc', 'nova', name)
               for name in ('nova.conf', 'nova-compute.conf')])
    return conf.get('libvirt', 'virt_type', fallback='kvm') == 'qemu'


def image_file():
    for name, fmt in (('kvmtune-bench.qcow2', 'qcow2'),
                      ('kvmtune-bench.raw', 'raw')):
        path = os.path.join(IMAGE_DIR, name)
        if os.path.exists(path):
            return path, fmt
    raise CloudError('no benchmark image after the build', source=IMAGE_DIR,
                     fix='run kvmtune image build and read its error')


def upload_image(conn):
    """Upload the image once; a changed file replaces the old one."""
    import hashlib

    path, fmt = image_file()
    sha = hashlib.sha512()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            sha.update(block)
    old = [i for i in conn.image.images(name=IMAGE_NAME)]
    if any(i.hash_value == sha.hexdigest() for i in old):
        say(f'image {IMAGE_NAME}: unchanged')
        return
    conn.create_image(IMAGE_NAME, filename=path, disk_format=fmt,
                      container_format='bare', visibility='public',
                      wait=True)
    for i in old:
        conn.image.delete_image(i)
    say(f'image {IMAGE_NAME}: uploaded {path}')


def base_flavor(conn):
    if conn.compute.find_flavor(BASE_FLAVOR['name']):
        say(f'flavor {BASE_FLAVOR["name"]}: exists')
        return
    conn.compute.create_flavor(is_public=True, **BASE_FLAVOR)
    say(f'flavor {BASE_FLAVOR["name"]}: created')


def parse_args(argv):
    p = argparse.ArgumentParser(prog='tools/main-job',
                                description=__doc__.split('\n\n')[0])
    p.add_argument('--os-cloud', metavar='CLOUD',
                   help='Use this cloud (clouds.yaml, admin) instead of '
                        'bringing up the local test cloud; nothing on this '
                        'host is changed.')
    p.add_argument('--compute-facts', metavar='FILE',
                   help='With --os-cloud: facts of the cloud\'s compute '
                        '(kvmtune host inspect --format json there); the '
                        'job then picks the tuned profile from them and '
                        'tags that compute.')
    p.add_argument('--max-vms', type=int, default=3,
                   help='Largest VM count of the sweep (default 3).')
    p.add_argument('--workload', default='fio-randread-4k')
    p.add_argument('--runtime', type=int, metavar='SECONDS',
                   help='Seconds each workload runs in the guests (the '
                        'task\'s default: 10).')
    p.add_argument('--baseline', metavar='FILE',
                   help='Bare-metal result from kvmtune baseline.')
    p.add_argument('--emulated', action='store_true',
                   help='The cloud runs guests under QEMU without KVM (TCG):'
                        ' label the results emulated (known by itself for '
                        'the local test cloud).')
    p.add_argument('--tuned-profile', metavar='NAME',
                   help='The tuned profile (default: pinned-hugepages-ept '
                        'when the compute has EPT/NPT, else '
                        'pinned-hugepages).')
    p.add_argument('--state-dir', default=STATE_DIR,
                   help=f'Rally DB and results (default {STATE_DIR}).')
    args = p.parse_args(argv)
    if args.compute_facts and not args.os_cloud:
        p.error('--compute-facts goes with --os-cloud (the local test '
                'cloud\'s compute is this host)')
    return args


def prepare_local(args, kvmtune, this_facts):
    """Local test cloud: up, and its compute (this host) decided."""
    # Decide before starting anything: a profile this host cannot serve
    # (a trait host tag will not set, a page size) stops here.
    local_setup(this_facts, kvmtune, None, None, args.max_vms,
                BASE_FLAVOR['ram'], args.tuned_profile)
    cloud_name = local_cloud()
    nova_conf = cloud_env()['KVMTUNE_NOVA_CONF']
    setup = local_setup(
        this_facts, kvmtune, cloud_name, nova_conf, args.max_vms,
        BASE_FLAVOR['ram'], args.tuned_profile,
        CLOUD_PYTHON if os.path.exists(CLOUD_PYTHON) else None)
    say(f'tuned profile {setup.profile}: {setup.why}')
    return cloud_name, setup


def prepare_remote(args, kvmtune, this_facts, conn):
    """An operator's cloud: the tuned profile and what to tell."""
    setup = remote_setup(args.os_cloud, this_facts, compute_node_names(conn),
                         kvmtune, args.max_vms, BASE_FLAVOR['ram'],
                         args.compute_facts, args.tuned_profile)
    say(f'compute facts: {setup.source}')
    say(f'tuned profile {setup.profile}: {setup.why}')
    return setup


def main(argv=None):
    args = parse_args(argv)
    kvmtune = bin_path('kvmtune')
    try:
        os.makedirs(args.state_dir, exist_ok=True)
        run([kvmtune, 'image', 'build'])
        from kvmtune import facts
        import openstack

        this_facts = facts.gather()
        if args.os_cloud:
            cloud_name, emulated = args.os_cloud, args.emulated
            conn = openstack.connect(cloud=cloud_name)
            setup = prepare_remote(args, kvmtune, this_facts, conn)
            facts_args = setup.facts_args
        else:
            cloud_name, setup = prepare_local(args, kvmtune, this_facts)
            emulated = args.emulated or local_cloud_emulated()
            conn = openstack.connect(cloud=cloud_name)
            facts_args = []
        upload_image(conn)
        base_flavor(conn)
        flavors = []
        for profile in (BASE_PROFILE, setup.profile):
            run([kvmtune, 'flavor', 'apply', '--os-cloud', cloud_name,
                 '--profile', profile, '--from', BASE_FLAVOR['name'],
                 *facts_args])
            flavors.append(f'{BASE_FLAVOR["name"]}.{profile}')
        if args.os_cloud:
            for command in setup.commands:
                run(command)
            if setup.facts is None:
                say(f'host tag: skipped, {setup.source}; give '
                    '--compute-facts FILE, or run kvmtune host tag on the '
                    'computes')
            for line in operator_steps(setup, cloud_name, args.max_vms,
                                       BASE_FLAVOR['ram']):
                say(line)
        else:
            tune_local_compute(conn, setup)
            run([kvmtune, 'host', 'inspect'])
            run([kvmtune, 'plan', '--profile', setup.profile])
        rally = Rally(args.state_dir)
        rally.use_cloud(f'kvmtune-{cloud_name}', rally_spec(conn.config))
        out_json = os.path.join(args.state_dir, 'disk-scaling.json')
        uuid, sla_ok = rally.sweep(
            TASK, task_args(args.max_vms, args.workload, flavors,
                            IMAGE_NAME, args.baseline, emulated,
                            args.runtime),
            out_json, os.path.join(args.state_dir, 'disk-scaling.html'))
        report = [kvmtune, 'report', out_json,
                  '--png', os.path.join(args.state_dir, 'disk-scaling.png'),
                  '--html', os.path.join(args.state_dir,
                                         'disk-scaling-report.html')]
        if args.baseline:
            report += ['--baseline', args.baseline]
        run(report)
    except KvmtuneError as exc:
        print(f'main-job: error: {exc.line()}', file=sys.stderr)
        return 2
    except Exception as exc:  # openstacksdk's own errors: one line too
        msg = ' '.join(f'{type(exc).__name__}: {exc}'.split())
        print(f'main-job: error: {msg}', file=sys.stderr)
        return 2
    say(f'rally task {uuid}: SLA {"met" if sla_ok else "FAILED"}; '
        f'results in {args.state_dir}')
    return 0 if sla_ok else 1
