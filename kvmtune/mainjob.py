"""The main job: from a fresh host to a scaling report (tools/main-job).

Without --os-cloud it brings up the single-host test cloud (libvirt
compute, QEMU TCG here) and works against it; with --os-cloud C it uses
that cloud and starts nothing locally. Either way it builds and uploads
the benchmark image, makes the default and the tuned flavor with
`kvmtune flavor apply`, shows this host's facts and the tuned profile's
plan, runs the disk scaling sweep with Rally and prints `kvmtune report`.
Rally's database and settings stay in the state directory.

The tuned profile follows this host's facts: pinned-hugepages-ept where
EPT/NPT is on, else pinned-hugepages (no trait to ask for); --tuned-profile
overrides. On the local test cloud, whose compute is this host, the job
also tunes the compute: `kvmtune nova-conf apply` (PCPU inventory), 2 MB
pages for the guests, a compute restart, and `kvmtune host tag`. Another
cloud's computes are the operator's to tune and tag.

Exit status: 0 when every step ran and the task met its SLA, 1 when the
task ran but an SLA failed, 2 when a step could not run.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
NR_HUGEPAGES = '/proc/sys/vm/nr_hugepages'
HUGEPAGE_MB = 2
HUGEPAGE_MARGIN = 64    # pages beyond the guests' RAM, for QEMU's slack
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
              emulated=False):
    args = {'max_vms': max_vms, 'workload': workload, 'flavors': flavors,
            'image_name': image, 'emulated': emulated}
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


def guest_hugepages(max_vms, ram_mb):
    """2 MB pages for max_vms guests of ram_mb each, with a margin."""
    return max_vms * -(-ram_mb // HUGEPAGE_MB) + HUGEPAGE_MARGIN


def reserve_hugepages(pages):
    """Raise the 2 MB pool to pages (never lower it); the kernel may
    find fewer free, so read back what it gave."""
    with open(NR_HUGEPAGES) as f:
        before = int(f.read())
    if before >= pages:
        say(f'hugepages: {before} x 2 MB already, {pages} needed')
        return
    with open(NR_HUGEPAGES, 'w') as f:
        f.write(str(pages))
    with open(NR_HUGEPAGES) as f:
        got = int(f.read())
    if got < pages:
        raise CloudError(f'the kernel gave {got} of {pages} 2 MB pages',
                         source=NR_HUGEPAGES,
                         fix='free memory (or reboot with hugepages=N) '
                             'and run again')
    say(f'hugepages: {before} -> {got} x 2 MB for the tuned guests')


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


def tune_local_compute(conn, kvmtune, profile, max_vms, ram_mb):
    """nova.conf of the profile, guest hugepages, restart, PCPU shown."""
    import time

    # Pages first: nova-conf apply plans from this host's facts
    reserve_hugepages(guest_hugepages(max_vms, ram_mb))
    nova_conf = cloud_env()['KVMTUNE_NOVA_CONF']
    apply = [kvmtune, 'nova-conf', 'apply', '--profile', profile,
             '--config', nova_conf]
    if os.path.exists(CLOUD_PYTHON):
        apply += ['--nova-python', CLOUD_PYTHON]
    run(apply)
    run([CLOUD_CTL, 'restart-compute'])
    deadline = time.monotonic() + PCPU_TIMEOUT
    while not (pcpu := pcpu_total(conn)):
        if time.monotonic() > deadline:
            raise CloudError(f'no PCPU inventory {PCPU_TIMEOUT} s after '
                             'the compute restart', source=nova_conf,
                             key='compute.cpu_dedicated_set')
        time.sleep(2)
    say(f'compute: {pcpu} PCPU in Placement, {BASE_FLAVOR["vcpus"]} per '
        'pinned guest: tuned guests at once, at most '
        f'{pcpu // BASE_FLAVOR["vcpus"]} (more get NoValidHost)')


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
                        'bringing up the local test cloud.')
    p.add_argument('--max-vms', type=int, default=3,
                   help='Largest VM count of the sweep (default 3).')
    p.add_argument('--workload', default='fio-randread-4k')
    p.add_argument('--baseline', metavar='FILE',
                   help='Bare-metal result from kvmtune baseline.')
    p.add_argument('--emulated', action='store_true',
                   help='The cloud runs guests under QEMU without KVM (TCG):'
                        ' label the results emulated (known by itself for '
                        'the local test cloud).')
    p.add_argument('--tuned-profile', metavar='NAME',
                   help='The tuned profile (default: pinned-hugepages-ept '
                        'when this host has EPT/NPT, else pinned-hugepages).')
    p.add_argument('--state-dir', default=STATE_DIR,
                   help=f'Rally DB and results (default {STATE_DIR}).')
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    kvmtune = bin_path('kvmtune')
    try:
        os.makedirs(args.state_dir, exist_ok=True)
        run([kvmtune, 'image', 'build'])
        from kvmtune import facts

        tuned, why = tuned_profile(facts.gather())
        if args.tuned_profile:
            tuned, why = args.tuned_profile, 'named by --tuned-profile'
        say(f'tuned profile {tuned}: {why}')
        cloud_name = args.os_cloud or local_cloud()
        emulated = args.emulated or (not args.os_cloud
                                     and local_cloud_emulated())
        import openstack

        conn = openstack.connect(cloud=cloud_name)
        upload_image(conn)
        base_flavor(conn)
        flavors = []
        for profile in (BASE_PROFILE, tuned):
            run([kvmtune, 'flavor', 'apply', '--os-cloud', cloud_name,
                 '--profile', profile, '--from', BASE_FLAVOR['name']])
            flavors.append(f'{BASE_FLAVOR["name"]}.{profile}')
        if args.os_cloud:
            say(f'cloud {cloud_name}: its computes are not this host; '
                'tuning them (kvmtune nova-conf apply, hugepages) and '
                'kvmtune host tag are left to the operator')
        else:
            tune_local_compute(conn, kvmtune, tuned, args.max_vms,
                               BASE_FLAVOR['ram'])
            run([kvmtune, 'host', 'tag', '--os-cloud', cloud_name])
        run([kvmtune, 'host', 'inspect'])
        run([kvmtune, 'plan', '--profile', tuned])
        rally = Rally(args.state_dir)
        rally.use_cloud(f'kvmtune-{cloud_name}', rally_spec(conn.config))
        out_json = os.path.join(args.state_dir, 'disk-scaling.json')
        uuid, sla_ok = rally.sweep(
            TASK, task_args(args.max_vms, args.workload, flavors,
                            IMAGE_NAME, args.baseline, emulated),
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


if __name__ == '__main__':
    sys.exit(main())
