"""The test fleet: compute hosts reached over real SSH.

Each host is Debian's sshd (openssh-server) of its own, run by the test
with its own host key, on its own loopback address (127.35.0.<n>, port
PORT; doc's network rule: loopback and the tests' own addresses only) and
logged into as root with a key the fleet makes. A host's facts and boot
state are its own tree: a copy of a different real capture
(tests/fixtures/hosts/real) with a distribution's boot files over it
(tests/hosttrees.py). Its sshd gives every session ``KVMTUNE_ROOT`` (the
tree) and the PATH and PYTHONPATH of the kvmtune under test (sshd_config
SetEnv), so ``kvmtune ... --root "$KVMTUNE_ROOT"`` run over SSH reads and
writes that host and nothing else; the inventory gives Ansible the same
as the host variable ``kvmtune_root``.

What is not real, said plainly: the hosts share this machine's kernel, so
a host's /proc and /sys are files in its tree, and its *reboot* is
``Fleet.reboot``, a simulated one: the command line GRUB would boot (the
booted one with kvmtune's staged arguments) becomes proc/cmdline, the
huge page pools it reserves are set in the tree's sysfs, the staged
modprobe.d options become the loaded module's parameters, the boot id
changes, and the host's nova-compute of the test cloud is restarted
(with the facts of its tree, when it was started from them).

The simulated reboot is also a command, for Ansible's
ansible.builtin.reboot (``reboot_command``, the apply role's
kvmtune_reboot_command) run on the host over SSH: ``Fleet.reboot_command``
gives it (``python -m tests.fleet reboot ...``, ``main`` below). Each
such reboot appends a line to ``reboots.jsonl`` in the fleet's
directory: the host, the servers Nova placed on its compute at that
moment, the command line it booted. ``plant_short_pool`` makes the
host's next reboot reserve half the huge pages its command line asks
for (as a boot whose memory is too fragmented would), until
``unplant``.

Every file the fleet makes is under its own directory; its sshd's are
its child processes, stopped by ``stop()``.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

from tests import hosttrees

SSHD = '/usr/sbin/sshd'
SFTP_SERVER = '/usr/lib/openssh/sftp-server'
PORT = 2222
NETWORK = '127.35.0.'
START_TIMEOUT = 30
# the hosts: (capture under tests/fixtures/hosts, boot files) - four real
# machines of different shapes, each with the command line it booted
CAPTURES = (
    ('real/20em64t-hybrid-1p6c2t+2ca4co1t', 'debian-12'),   # 1 node
    ('real/32intel64-2p8co2t+8ve', 'rhel-7'),               # 2 nodes
    ('real/memorysidecaches', 'debian-12'),                 # 4 nodes
    ('real/128arm-2pa2n8cluster4co', 'debian-12'),          # 4, arm64
)


@dataclasses.dataclass
class Host:
    name: str           # inventory name, = its nova-compute's host
    address: str
    capture: str
    distro: str
    root: pathlib.Path  # its tree: /proc, /sys, /etc, /boot, /var
    home: pathlib.Path  # its sshd's files
    process: subprocess.Popen | None = None

    @property
    def facts_file(self):
        """Its facts as ``kvmtune host inspect`` prints them from its
        tree: the shape of its nova-compute (cloud up --compute-facts)."""
        return self.home / 'facts.json'


def _kvmtune_env():
    """PATH and PYTHONPATH of the kvmtune under test, for the sessions."""
    bindir = os.path.dirname(shutil.which('kvmtune') or sys.executable)
    env = {'PATH': f'{bindir}:/usr/sbin:/usr/bin:/sbin:/bin'}
    if os.environ.get('PYTHONPATH'):
        env['PYTHONPATH'] = os.environ['PYTHONPATH']
    return env


def _wait_listening(address, port, process, log):
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f'sshd on {address} exited: '
                               f'{log.read_text()[-500:]}')
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f'sshd on {address}:{port} did not listen within '
                       f'{START_TIMEOUT} s')


class Fleet:
    """Hosts named ``names`` (one per entry of CAPTURES, in order) under
    the directory ``base``."""

    def __init__(self, base, names, captures=CAPTURES):
        self.base = pathlib.Path(base)
        self.key = self.base / 'id_ed25519'
        self.ssh_config = self.base / 'ssh_config'
        self.known_hosts = self.base / 'known_hosts'
        pairs = enumerate(zip(names, captures))
        self.hosts = [
            Host(name, f'{NETWORK}{n + 2}', capture, distro,
                 self.base / name / 'root', self.base / name)
            for n, (name, (capture, distro)) in pairs]

    # -- bring up, take down ---------------------------------------------

    def start(self):
        self.base.mkdir(parents=True, exist_ok=True)
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '',
                        '-C', 'kvmtune-fleet', '-f', str(self.key)],
                       check=True)
        (self.base / 'authorized_keys').write_text(
            self.key.with_suffix('.pub').read_text())
        (self.base / 'no_known_hosts').write_text('')
        # sshd refuses to start without its privilege separation directory
        # (Debian's ssh.service makes it; no such service runs here)
        os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
        lines = ['Host *', '  User root', f'  Port {PORT}',
                 f'  IdentityFile {self.key}', '  IdentitiesOnly yes',
                 f'  UserKnownHostsFile {self.known_hosts}',
                 f'  GlobalKnownHostsFile {self.base / "no_known_hosts"}',
                 '  StrictHostKeyChecking yes', '  BatchMode yes',
                 '  ConnectTimeout 10']
        known = []
        try:
            for host in self.hosts:
                hosttrees.make(host.root, host.distro, host.capture)
                self._write_boot_id(host)
                known.append(self._start_sshd(host))
                lines[:0] = [f'Host {host.name}',
                             f'  HostName {host.address}']
        except BaseException:
            self.stop()
            raise
        self.known_hosts.write_text(''.join(known))
        self.ssh_config.write_text('\n'.join(lines) + '\n')
        return self

    def _start_sshd(self, host):
        key = host.home / 'ssh_host_ed25519_key'
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                        str(key)], check=True)
        env = {'KVMTUNE_ROOT': str(host.root),
               'KVMTUNE_FLEET_HOST': host.name, **_kvmtune_env()}
        config = host.home / 'sshd_config'
        config.write_text('\n'.join([
            f'ListenAddress {host.address}:{PORT}',
            f'HostKey {key}',
            f'PidFile {host.home / "sshd.pid"}',
            f'AuthorizedKeysFile {self.base / "authorized_keys"}',
            'PermitRootLogin prohibit-password',
            'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
            'UsePAM no', 'StrictModes no', 'PrintMotd no',
            f'Subsystem sftp {SFTP_SERVER}',
            'SetEnv ' + ' '.join(f'{k}={v}' for k, v in env.items()),
        ]) + '\n')
        log = host.home / 'sshd.log'
        host.process = subprocess.Popen(
            [SSHD, '-D', '-e', '-f', str(config)],
            stdout=log.open('w'), stderr=subprocess.STDOUT,
            start_new_session=True)
        _wait_listening(host.address, PORT, host.process, log)
        public = key.with_suffix('.pub').read_text().split()[:2]
        return f'[{host.address}]:{PORT} {" ".join(public)}\n'

    def stop(self):
        for host in self.hosts:
            process, host.process = host.process, None
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    # -- reaching the hosts ----------------------------------------------

    def host(self, name):
        return next(h for h in self.hosts if h.name == name)

    def ssh(self, name, command, timeout=120):
        """Run the shell ``command`` on host ``name`` over SSH."""
        return subprocess.run(['ssh', '-F', str(self.ssh_config), name,
                               command], capture_output=True, text=True,
                              timeout=timeout)

    def inventory(self, host_vars=None):
        """An Ansible inventory (INI) of the fleet: group ``computes``,
        each host with its address, port, key and ``kvmtune_root``; with
        ``host_vars`` ({name: {var: value}}) a YAML one, those variables
        added to each host's."""
        if host_vars is not None:
            return self._yaml_inventory(host_vars)
        path = self.base / 'inventory.ini'
        lines = ['[computes]']
        for host in self.hosts:
            lines.append(
                f'{host.name} ansible_host={host.address} '
                f'ansible_port={PORT} kvmtune_root={host.root}')
        lines += ['', '[computes:vars]', 'ansible_user=root',
                  f'ansible_ssh_private_key_file={self.key}',
                  f"ansible_ssh_common_args='-F {self.ssh_config}'",
                  'ansible_python_interpreter=/usr/bin/python3']
        path.write_text('\n'.join(lines) + '\n')
        return path

    def _yaml_inventory(self, host_vars):
        path = self.base / 'inventory.yml'
        hosts = {host.name: {'ansible_host': host.address,
                             'ansible_port': PORT,
                             'kvmtune_root': str(host.root),
                             **host_vars.get(host.name, {})}
                 for host in self.hosts}
        group = {'hosts': hosts, 'vars': {
            'ansible_user': 'root',
            'ansible_ssh_private_key_file': str(self.key),
            'ansible_ssh_common_args': f'-F {self.ssh_config}',
            'ansible_python_interpreter': '/usr/bin/python3'}}
        # JSON is YAML: Ansible's yaml inventory plugin reads it
        path.write_text(json.dumps({'all': {'children': {
            'computes': group}}}, indent=1) + '\n')
        return path

    def ansible_env(self):
        """Environment for ansible-* so that nothing is written outside
        the fleet's directory (ANSIBLE_HOME, temps, control sockets)."""
        home = self.base / 'ansible'
        return {**os.environ, 'ANSIBLE_HOME': str(home),
                'ANSIBLE_LOCAL_TEMP': str(home / 'tmp'),
                'ANSIBLE_REMOTE_TEMP': str(home / 'remote-tmp'),
                'ANSIBLE_SSH_CONTROL_PATH_DIR': str(home / 'cp'),
                'ANSIBLE_HOST_KEY_CHECKING': 'True',
                # a task's module goes down the SSH session it runs in,
                # not put in a temp file first (https://docs.ansible.com/
                # ansible/latest/reference_appendices/config.html#ansible-
                # pipelining); the rollout's playbook tests: 152 + 152 s
                # with it, 175 + 172 s without, on one machine
                'ANSIBLE_PIPELINING': 'True',
                'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0'}

    # -- the simulated reboot ----------------------------------------------

    def _write_boot_id(self, host):
        path = host.root / 'proc/sys/kernel/random/boot_id'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'{uuid.uuid4()}\n')

    def write_facts(self, host):
        """kvmtune host inspect of the host's tree, as its facts file."""
        done = subprocess.run(
            ['kvmtune', 'host', 'inspect', '--root', str(host.root), '-f',
             'json'], capture_output=True, text=True, timeout=120,
            env={**os.environ, **_kvmtune_env()}, check=True)
        host.facts_file.write_text(done.stdout)
        return host.facts_file

    def reboot_command(self, name, env, cloud=None, restart=True):
        """The shell command that makes the SIMULATED reboot of host
        ``name`` and restarts its nova-compute (``main``), run on that
        host over SSH by ansible.builtin.reboot: the first word an
        absolute path, as that module wants. ``env``: what the test
        cloud's commands need (KVMTUNE_CLOUD_DIR, OS_CLIENT_CONFIG_FILE);
        ``cloud``: the clouds.yaml cloud to list the host's servers with
        at that moment (reboots.jsonl); ``restart``: restart the host's
        nova-compute of the test cloud."""
        import shlex

        from tests import paths

        (self.base / 'reboot-env.json').write_text(json.dumps(
            {'names': [h.name for h in self.hosts], 'env': env,
             'cloud': cloud, 'restart': restart}))
        return ' '.join(shlex.quote(word) for word in [
            '/usr/bin/env', f'PYTHONPATH={paths.REPO}', sys.executable,
            '-m', 'tests.fleet', 'reboot', '--base', str(self.base), name])

    def reboots(self):
        """The SIMULATED reboots made by ``reboot_command``, in order."""
        log = self.base / 'reboots.jsonl'
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    def plant_short_pool(self, name):
        (self.host(name).home / 'short-pool').write_text('2\n')

    def unplant(self, name):
        (self.host(name).home / 'short-pool').unlink(missing_ok=True)

    def reboot(self, name, restart_compute=None):
        """SIMULATED reboot of host ``name`` (module docstring): returns
        the command line it "booted"."""
        from kvmtune.boot import loader
        from kvmtune.facts import kernel

        host = self.host(name)
        root = str(host.root)
        staged = loader.owned_args(loader.detect(root), root)
        keys = {arg.partition('=')[0] for arg in staged}
        booted = (host.root / 'proc/cmdline').read_text().split()
        line = ' '.join([word for word in booted
                         if word.partition('=')[0] not in keys] + staged)
        (host.root / 'proc/cmdline').write_text(line + '\n')
        self._set_pools(host, kernel.parse_args(line))
        self._load_module_options(host)
        self._write_boot_id(host)
        if restart_compute is not None:
            self.write_facts(host)
            restart_compute(host.name)
        return line

    def _set_pools(self, host, args):
        """The pools the booted line reserves: per node as given, else
        spread over the nodes with memory as the kernel does at boot."""
        nodes_dir = host.root / 'sys/devices/system/node'
        nodes = sorted(int(p.name[4:]) for p in nodes_dir.glob('node[0-9]*')
                       if (p / 'meminfo').exists())
        plant = host.home / 'short-pool'
        short = int(plant.read_text()) if plant.exists() else 1
        for entry in args['hugepages']:
            size_kb = entry.get('size_kb')
            if not size_kb or not nodes:
                continue
            per_node = {int(n): c for n, c in
                        entry.get('per_node', {}).items()}
            if not per_node:
                share, extra = divmod(entry['count'], len(nodes))
                per_node = {node: share + (i < extra)
                            for i, node in enumerate(nodes)}
            # planted: a pool short of what the command line asks
            per_node = {node: count // short
                        for node, count in per_node.items()}
            pool = f'hugepages/hugepages-{size_kb}kB'
            for node in nodes:
                directory = nodes_dir / f'node{node}' / pool
                if directory.is_dir():
                    for name in ('nr_hugepages', 'free_hugepages'):
                        (directory / name).write_text(
                            f'{per_node.get(node, 0)}\n')
            total = host.root / 'sys/kernel/mm' / pool
            if total.is_dir():
                for name in ('nr_hugepages', 'free_hugepages'):
                    (total / name).write_text(
                        f'{sum(per_node.values())}\n')

    def _load_module_options(self, host):
        """modprobe.d's options become the loaded modules' parameters."""
        from kvmtune.boot import changes

        conf = host.root / 'etc/modprobe.d/kvm.conf'
        if not conf.exists():
            return
        for module, option, value in changes.modprobe_options(
                conf.read_text()):
            param = host.root / 'sys/module' / module / 'parameters' / option
            if param.parent.is_dir():
                old = param.read_text().strip() if param.exists() else ''
                if old in ('Y', 'N'):
                    value = 'Y' if value.lower() in ('1', 'y') else 'N'
                param.write_text(value + '\n')


def _servers_on(cloud, host):
    import openstack

    conn = openstack.connect(cloud=cloud)
    try:
        return sorted(s.id for s in conn.compute.servers(
            all_projects=True, compute_host=host))
    finally:
        conn.close()


def main(argv=None):
    """``python -m tests.fleet reboot --base DIR NAME``: the SIMULATED
    reboot of host NAME of the fleet under DIR (Fleet.reboot_command)."""
    parser = argparse.ArgumentParser(prog='python -m tests.fleet')
    parser.add_argument('command', choices=['reboot'])
    parser.add_argument('--base', required=True)
    parser.add_argument('name')
    args = parser.parse_args(argv)
    saved = json.loads((pathlib.Path(args.base) /
                        'reboot-env.json').read_text())
    os.environ.update(saved['env'])
    fleet = Fleet(args.base, saved['names'])
    servers = (_servers_on(saved['cloud'], args.name)
               if saved['cloud'] else None)

    def restart(name):
        done = subprocess.run([sys.executable, '-m', 'kvmtune.cli',
                               'cloud', 'restart-compute', '--host', name],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            sys.exit(f'restart-compute {name}: {done.stdout}{done.stderr}')

    line = fleet.reboot(args.name, restart_compute=restart
                        if saved['restart'] else None)
    with (fleet.base / 'reboots.jsonl').open('a') as log:
        log.write(json.dumps({'host': args.name, 'servers': servers,
                              'short_pool': (fleet.host(args.name).home /
                                             'short-pool').exists(),
                              'cmdline': line, 'at': time.time()}) + '\n')
    print(f'SIMULATED reboot of {args.name}: {line}')


if __name__ == '__main__':
    main()
