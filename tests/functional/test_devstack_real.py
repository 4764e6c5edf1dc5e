"""The DevStack plugin under the real DevStack scripts, as the stack user.

DevStack is in no package registry and is not copied into this
repository: the tree comes from ``KVMTUNE_DEVSTACK_DIR``, a checkout of
https://opendev.org/openstack/devstack (mirror github.com/openstack/devstack)
at the commit devstack/README.rst names (tests/trees.py, ``DEVSTACK``);
without the variable the tests are skipped with that reason (allow-listed
for CI), and a tree it names that is missing or at another commit fails
them. The tests run as root only to set up: DevStack's own
tools/create-stack-user.sh makes the ``stack`` user with passwordless sudo,
and everything DevStack runs, runs as that user. Not root and no ``stack``
user, or a conf dir clean.sh would remove (/etc/nova, ...), fails: the
variable asked for these tests, and the tier runs as root
(tools/run-functional).

What runs, from the tree (a copy in a temporary workspace):

* stack: a driver that does what stack.sh does, in stack.sh's order and
  with its shell options (xtrace, errexit and its ERR trap, umask 022;
  nounset off as NOUNSET is unset): source functions and lib/stack,
  extract local.conf, source stackrc, async_init, the lib/ files, ``run_phase
  override_defaults`` and ``source`` (load_plugin_settings),
  setup_devstack_virtualenv, save_stackenv, ``run_phase stack
  pre-install`` and ``install`` (the plugin's real setup_develop, through
  DevStack's pip_install), configure_nova's /etc/nova, lib/nova's
  create_nova_conf and configure_nova_hypervisor (which writes
  cpu_mode=custom, cpu_models=Nehalem for LIBVIRT_TYPE=qemu),
  ``run_phase stack post-config``, lib/nova's start_nova_compute (which
  copies nova.conf to nova-cpu.conf), ``run_phase stack extra``,
  ``post-extra``, ``test-config``.
* unstack.sh and clean.sh themselves, unchanged.

Stubs (extras.d/00-kvmtune-test-stubs.sh in the workspace copy, which
unstack.sh and clean.sh source as they source any extras.d file; the
stack driver sources it too), each for a network or a running service:

* fetch_plugins: git clone over the network; the workspace already has
  the plugin at $DEST/kvmtune (a copy of this working tree). The stub
  records the safe.directory git_clone would (unstack.sh removes it).
* DEVSTACK_VENV and REQUIREMENTS_DIR: made by the test (pip and the
  requirements repository come from the network); the venv sees this
  repository's .venv site-packages, the constraints file is empty and
  edit-constraints does nothing.
* install_tempest, install_tempest_plugins: git and pip from the network;
  configure_tempest: needs the running cloud, so it writes the start of
  what it writes ([DEFAULT] log_dir, [compute] min_compute_nodes).
* configure_libvirt: installs packages and restarts libvirtd.
* run_process: starts systemd units (no systemd here: PID 1 is not it).
* clean_iptables (lib/nova) and neutron_ovs_base_cleanup: they flush the
  host's live firewall rules and delete the running Open vSwitch's
  bridges, which the test cloud on this machine uses.
* write_uwsgi_config (lib/apache), which lib/nova's create_nova_conf
  calls on a controller for nova-api: it registers the API with apache2
  (``sudo a2ensite``), which stack.sh's install_apache_uwsgi installs
  from the distro's package mirror, and its postinst would start a web
  server on this host; no test here starts nova-api. unstack.sh's
  remove_uwsgi_config runs unchanged (``sudo a2dissite nova-api ||
  true``, as on any host).
* The controller enables mysql and rabbit, as a single-node DevStack
  does (lib/database then picks the backend nova.conf's connection URLs
  name), but this host's MariaDB and RabbitMQ are the ones the test
  cloud runs on, so: rpc_backend_add_vhost (``sudo rabbitmqctl
  add_vhost`` on the running broker), cleanup_database and
  cleanup_rpc_backend (clean.sh's: they purge the database and broker
  packages and /var/lib/mysql), and stop_service for mysql and
  rabbitmq-server (``unstack.sh --all``, run by clean.sh; every other
  service name goes to DevStack's own stop_service).

``sudo systemctl`` in unstack.sh and clean.sh runs for real and finds no
systemd unit, as on a host where the services are down.

The controller runs ``stack extra`` against the test cloud (its admin
entry copied into the stack user's clouds.yaml), so that test needs the
cloud up (flock /tmp/kvmtune-cloud.lock); the compute-only subnode makes
no cloud call and runs without it.
"""

import configparser
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning import pages
from tests import paths
from tests import trees

REPO = pathlib.Path(paths.REPO)
STACK_USER = 'stack'
NOVA_PYTHON = paths.NOVA_PYTHON
PROFILES = 'pinned-hugepages-ept nested-host'
EXTRA_PAGES = 8     # 2 MB pages added to node 0's pool, then taken back
# DevStack's conf dirs that clean.sh removes with sudo rm -rf.
CONF_DIRS = ['/etc/nova', '/etc/keystone', '/etc/glance', '/etc/placement',
             '/etc/cinder', '/etc/swift', '/etc/neutron', '/etc/openstack']

# no tree given: skip before the cloud fixtures of test_single_node
pytestmark = trees.DEVSTACK.skip_if_absent()


@pytest.fixture(scope='session')
def devstack():
    """The pinned DevStack tree (skip: KVMTUNE_DEVSTACK_DIR unset; fail:
    it names a missing tree or one at another commit). Session-scoped so
    that it is checked before test_single_node's cloud fixtures."""
    return trees.DEVSTACK.require()


STUBS = r'''
# kvmtune's test stubs (tests/functional/test_devstack_real.py says why).
function fetch_plugins {
    sudo git config --system --add safe.directory "$DEST/kvmtune"
}
function install_tempest {
    :
}
function install_tempest_plugins {
    :
}
function configure_tempest {
    mkdir -p "$TEMPEST_CONFIG_DIR"
    iniset "$TEMPEST_CONFIG" DEFAULT log_dir "$DEST/logs"
    iniset "$TEMPEST_CONFIG" compute min_compute_nodes 1
}
function configure_libvirt {
    :
}
function run_process {
    echo "stub run_process: $1"
}
function clean_iptables {
    :
}
function neutron_ovs_base_cleanup {
    :
}
function write_uwsgi_config {
    echo "stub write_uwsgi_config: $1 for $5"
}
function rpc_backend_add_vhost {
    echo "stub rpc_backend_add_vhost: $1"
}
function cleanup_database {
    echo "stub cleanup_database: $DATABASE_TYPE"
}
function cleanup_rpc_backend {
    echo "stub cleanup_rpc_backend"
}
if ! declare -F _devstack_stop_service >/dev/null; then
    eval "$(declare -f stop_service |
        sed '1s/^stop_service/_devstack_stop_service/')"
fi
function stop_service {
    case "$1" in
        mysql|mariadb|rabbitmq-server) echo "stub stop_service: $1";;
        *) _devstack_stop_service "$@";;
    esac
}
'''

# stack.sh's sequence for what reaches the plugin (see the docstring).
STACK = r'''#!/bin/bash
set -o xtrace
umask 022
TOP_DIR=$(cd "$(dirname "$0")" && pwd)
source "$TOP_DIR/functions"
source "$TOP_DIR/lib/stack"
GetDistro
rm -f "$TOP_DIR/.localrc.auto"
extract_localrc_section "$TOP_DIR/local.conf" "$TOP_DIR/localrc" \
    "$TOP_DIR/.localrc.auto"
source "$TOP_DIR/stackrc"
async_init
function err_trap {
    local r=$?
    set +o xtrace
    echo "${0##*/} failed"
    exit $r
}
trap err_trap ERR
set -o errexit
source "$TOP_DIR/lib/database"
source "$TOP_DIR/lib/rpc_backend"
source "$TOP_DIR/extras.d/00-kvmtune-test-stubs.sh"
fetch_plugins
run_phase override_defaults
for lib in apache tls infra libraries lvm horizon keystone glance nova \
        placement cinder swift neutron ldap dstat atop tcpdump etcd3 os-vif; do
    source "$TOP_DIR/lib/$lib"
done
run_phase source
source "$TOP_DIR/extras.d/00-kvmtune-test-stubs.sh"
setup_devstack_virtualenv
save_stackenv $LINENO
run_phase stack pre-install
run_phase stack install
sudo install -d -o "$STACK_USER" "$NOVA_CONF_DIR"
create_nova_conf
configure_nova_hypervisor
run_phase stack post-config
start_nova_compute
run_phase stack extra
run_phase stack post-extra
run_phase stack test-config
save_stackenv $LINENO
echo "kvmtune-test: stack done"
'''


def run(argv, **kwargs):
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    return done


def as_stack(workspace, *argv, timeout=900):
    """Run argv as the stack user, in DevStack's tree, with a login-like
    environment (DevStack reads nothing else from ours)."""
    env = ['env', '-i', f'HOME={pwd.getpwnam(STACK_USER).pw_dir}',
           'PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
           'LANG=C.UTF-8', 'PBR_VERSION=0.0.1.dev16']
    done = run(['sudo', '-u', STACK_USER, *env, *argv],
               cwd=workspace / 'devstack', timeout=timeout)
    log = workspace / f'{pathlib.Path(argv[-1]).name}.log'
    with open(log, 'a') as handle:
        handle.write(done.stdout + done.stderr)
    print(f'--- {" ".join(argv)}: exit {done.returncode}, log {log}')
    return done


@pytest.fixture(scope='module')
def stack_user(devstack):
    if os.geteuid() != 0:
        try:
            pwd.getpwnam(STACK_USER)
        except KeyError:
            pytest.fail('KVMTUNE_DEVSTACK_DIR is set, but there is no stack '
                        'user and only root can make one (run as root, or '
                        'make it with DevStack\'s '
                        'tools/create-stack-user.sh)', pytrace=False)
        return
    done = run(['bash', os.path.join(devstack, 'tools',
                                     'create-stack-user.sh')],
               env=dict(os.environ, STACK_USER=STACK_USER))
    assert done.returncode == 0, done.stdout + done.stderr
    assert run(['sudo', '-u', STACK_USER, 'sudo', '-n', 'true']
               ).returncode == 0


def copy_tree(src, dst, files):
    for name in files:
        target = dst / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.isfile(src / name):
            shutil.copy2(src / name, target)


@pytest.fixture
def workspace(devstack, stack_user):
    present = [path for path in CONF_DIRS if os.path.exists(path)]
    if present:
        # a host with OpenStack's config (or one a crashed run of this
        # test left): the tests must not delete it, nor skip unseen
        pytest.fail(f'{", ".join(present)} exist(s): DevStack\'s clean.sh '
                    'would remove them; move them away to run these tests',
                    pytrace=False)
    root = pathlib.Path(tempfile.mkdtemp(prefix='kvmtune-devstack-'))
    os.chmod(root, 0o755)
    shutil.copytree(devstack, root / 'devstack', symlinks=True)
    (root / 'devstack' / 'extras.d' / '00-kvmtune-test-stubs.sh'
     ).write_text(STUBS)
    (root / 'devstack' / 'kvmtune-stack.sh').write_text(STACK)
    dest = root / 'opt'
    # The plugin as enable_plugin would clone it: this working tree.
    files = run(['git', 'ls-files', '-co', '--exclude-standard'],
                cwd=REPO).stdout.split('\n')
    copy_tree(REPO, dest / 'kvmtune', [f for f in files if f])
    # DevStack's global venv (pip from the network otherwise): it sees
    # this repository's .venv packages; kvmtune itself comes from
    # setup_develop.
    venv = dest / 'data' / 'venv'
    done = run(['/usr/bin/python3', '-m', 'venv', '--system-site-packages',
                str(venv)])
    assert done.returncode == 0, done.stderr
    site = run([str(venv / 'bin' / 'python3'), '-c',
                'import site; print(site.getsitepackages()[0])']
               ).stdout.strip()
    borrowed = [p for p in sys.path if p.endswith('site-packages')
                and p.startswith(str(REPO))]
    pathlib.Path(site, 'kvmtune-test-borrowed.pth').write_text(
        '\n'.join(borrowed) + '\n')
    reqs = dest / 'requirements'
    (reqs / '.venv' / 'bin').mkdir(parents=True)
    (reqs / 'upper-constraints.txt').write_text('')
    edit = reqs / '.venv' / 'bin' / 'edit-constraints'
    edit.write_text('#!/bin/sh\nexit 0\n')
    edit.chmod(0o755)
    run(['chown', '-R', f'{STACK_USER}:{STACK_USER}', str(root)])
    yield root
    run(['rm', '-rf', '/etc/nova'])
    if not os.environ.get('KVMTUNE_KEEP_WORKSPACE'):
        shutil.rmtree(root, ignore_errors=True)


def local_conf(root, services, extra='', plugin=True):
    dest = root / 'opt'
    pool = pages.read_count(0, 2048)
    text = f'''[[local|localrc]]
DEST={dest}
DATA_DIR={dest}/data
SERVICE_HOST=127.0.0.1
HOST_IP=127.0.0.1
ADMIN_PASSWORD=kvmtune-test
DATABASE_PASSWORD=kvmtune-test
RABBIT_PASSWORD=kvmtune-test
SERVICE_PASSWORD=kvmtune-test
REQUIREMENTS_DIR={dest}/requirements
VIRT_DRIVER=libvirt
LIBVIRT_TYPE=qemu
# names no guest of this machine has (cleanup_nova destroys matching ones)
INSTANCE_NAME_PREFIX=kvmtune-devstack-test-
OVS_PHYSICAL_BRIDGE=
# async jobs (80-tempest.sh's install_tempest) run in line: in parallel
# the stubbed job's subshell never opened its fifo and stack hung in
# async_wait (single-node run, 21:03)
DEVSTACK_PARALLEL=False
disable_all_services
enable_service {services}
'''
    if plugin:
        observe(root)
        text += f'''enable_plugin kvmtune file://{dest}/kvmtune
enable_plugin observer file://{dest}/observer
KVMTUNE_PROFILES="{PROFILES}"
KVMTUNE_ALLOCATE_HUGEPAGES=True
KVMTUNE_HUGEPAGES=0:2M:{pool + EXTRA_PAGES}
KVMTUNE_ENABLE_NESTED=True
{extra}'''
    (root / 'devstack' / 'local.conf').write_text(text)
    run(['chown', f'{STACK_USER}:{STACK_USER}',
         str(root / 'devstack' / 'local.conf')])
    return pool


def nova_check(path):
    """Nova's own start-up check of [libvirt] cpu_mode/cpu_models
    (LibvirtDriver._check_cpu_compatibility, run by init_host) on path."""
    script = (
        'import sys\n'
        'import nova.conf\n'
        'from nova.virt.libvirt import driver\n'
        'CONF = nova.conf.CONF\n'
        'CONF(["--config-file", sys.argv[1]], project="nova",\n'
        '     default_config_files=[])\n'
        '# The CPU comparison of custom models needs a running libvirtd.\n'
        'CONF.set_override("skip_cpu_compare_at_startup", True,\n'
        '                  "workarounds")\n'
        'driver.LibvirtDriver.__new__(driver.LibvirtDriver)'
        '._check_cpu_compatibility()\n'
        'print("accepted", CONF.libvirt.cpu_mode, CONF.libvirt.cpu_models)\n')
    return run([NOVA_PYTHON, '-c', script, str(path)])


def snapshot(root):
    files = {'/etc/nova/nova.conf': None, '/etc/nova/nova-cpu.conf': None,
             f'{root}/opt/tempest/etc/tempest.conf': None}
    for path in files:
        if os.path.exists(path):
            files[path] = pathlib.Path(path).read_text()
    return files


def stack_unstack_clean(root, expect_extra):
    done = as_stack(root, 'bash', str(root / 'devstack' / 'kvmtune-stack.sh'))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert 'kvmtune-test: stack done' in out
    assert 'Installing kvmtune' in out
    assert 'Configuring nova.conf for kvmtune profiles' in out
    return out


def check_post_config(root, pool):
    nova = inifile.IniFile(pathlib.Path('/etc/nova/nova.conf').read_text())
    cpu = pathlib.Path('/etc/nova/nova-cpu.conf')
    assert nova.get('libvirt', 'cpu_mode') == 'host-passthrough'
    assert nova.get_all('libvirt', 'cpu_models') == []
    assert nova.get('compute', 'cpu_dedicated_set') is not None
    assert inifile.IniFile(cpu.read_text()).get('libvirt', 'cpu_mode') == \
        'host-passthrough'
    assert pages.read_count(0, 2048) == pool + EXTRA_PAGES
    checked = nova_check(cpu)
    print(f'Nova start-up check on nova-cpu.conf: {checked.stdout.strip()}'
          f'{checked.stderr.strip()[-500:]}')
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert checked.stdout.startswith('accepted host-passthrough []')


def baseline(root, services, extra=''):
    """nova.conf, nova-cpu.conf and tempest.conf as DevStack makes them
    without kvmtune: the same driver, no enable_plugin kvmtune."""
    conf = (root / 'devstack' / 'local.conf').read_text()
    local_conf(root, services, extra, plugin=False)
    done = as_stack(root, 'bash', str(root / 'devstack' / 'kvmtune-stack.sh'))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    files = snapshot(root)
    # Nova's check accepts DevStack's own file (cpu_mode custom).
    assert nova_check('/etc/nova/nova-cpu.conf').returncode == 0
    (root / 'devstack' / 'local.conf').write_text(conf)
    run(['rm', '-rf', '/etc/nova', str(root / 'opt' / 'tempest')])
    return files


def observe(root):
    """A plugin enabled after kvmtune that copies the files at its clean
    phase: what kvmtune's clean left, before clean.sh's own removals (it
    deletes /etc/nova)."""
    observer = root / 'opt' / 'observer' / 'devstack'
    observer.mkdir(parents=True, exist_ok=True)
    (observer / 'plugin.sh').write_text(
        'if [[ "$1" == "clean" ]]; then\n'
        f'    mkdir -p {root}/after-clean\n'
        '    cp /etc/nova/nova.conf /etc/nova/nova-cpu.conf '
        f'{root}/after-clean/\n'
        f'    cp "$DEST/tempest/etc/tempest.conf" {root}/after-clean/ '
        '|| true\n'
        f'    cat /sys/devices/system/node/node0/hugepages/'
        f'hugepages-2048kB/nr_hugepages > {root}/after-clean/pool\n'
        'fi\n')
    run(['chown', '-R', f'{STACK_USER}:{STACK_USER}', str(root / 'opt')])


def unstack_and_clean(root, pool, before):
    done = as_stack(root, './unstack.sh')
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert 'kvmtune unstack failed' not in out

    done = as_stack(root, './clean.sh')
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert 'kvmtune clean failed' not in out
    after = root / 'after-clean'
    assert (after / 'nova.conf').read_text() == \
        before['/etc/nova/nova.conf']
    assert (after / 'nova-cpu.conf').read_text() == \
        before['/etc/nova/nova-cpu.conf']
    tempest = before[f'{root}/opt/tempest/etc/tempest.conf']
    if tempest is not None:
        assert (after / 'tempest.conf').read_text() == tempest
    assert int((after / 'pool').read_text()) == pool
    assert pages.read_count(0, 2048) == pool
    assert not os.path.exists('/etc/nova')
    assert not (root / 'opt' / 'data' / 'kvmtune').exists()


def test_compute_only_subnode(workspace):
    services = 'n-cpu'
    pool = local_conf(workspace, services)
    before = baseline(workspace, services)
    out = stack_unstack_clean(workspace, expect_extra=False)
    assert 'compute-only node: flavors and the image are made on the ' \
        'controller' in out
    check_post_config(workspace, pool)
    unstack_and_clean(workspace, pool, before)


def test_single_node(workspace, test_cloud, admin, base_flavor):
    import yaml

    from tests.functional.conftest import find_flavor

    home = pathlib.Path(pwd.getpwnam(STACK_USER).pw_dir)
    clouds = yaml.safe_load(pathlib.Path(
        test_cloud.env['OS_CLIENT_CONFIG_FILE']).read_text())
    target = home / '.config' / 'openstack' / 'clouds.yaml'
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump({'clouds': {
        'kvmtune-admin': clouds['clouds']['kvmtune-admin']}}))
    run(['chown', '-R', f'{STACK_USER}:{STACK_USER}', str(home / '.config')])
    target.chmod(0o600)
    services = 'mysql,rabbit,n-api,n-sch,n-cond,n-cpu,placement-api,tempest'
    extra = ('KVMTUNE_OS_CLOUD=kvmtune-admin\n'
             f'KVMTUNE_BASE_FLAVOR={base_flavor.name}\n')
    pool = local_conf(workspace, services, extra)
    before = baseline(workspace, services, extra)
    out = stack_unstack_clean(workspace, expect_extra=True)
    assert 'Creating kvmtune flavors, traits and image' in out
    assert 'Configuring Tempest for kvmtune' in out
    check_post_config(workspace, pool)
    tempest = configparser.ConfigParser()
    tempest.read(f'{workspace}/opt/tempest/etc/tempest.conf')
    assert set(PROFILES.split()) == {
        item.split(':')[0] for item in
        tempest['kvmtune']['flavors'].split(',')}
    for profile in PROFILES.split():
        assert find_flavor(admin, f'{base_flavor.name}.{profile}')
    unstack_and_clean(workspace, pool, before)
    for profile in PROFILES.split():
        assert find_flavor(admin, f'{base_flavor.name}.{profile}') is None
