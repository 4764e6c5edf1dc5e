"""Real Neutron for the test cloud: ML2/OVS on Open vSwitch's userspace
datapath (``datapath_type = netdev``).

This host has no kernel modules (no openvswitch datapath, no
br_netfilter), but Debian's ovs-vswitchd forwards in userspace between tap
devices. Every guest is on this one host, so tenant networks are VLANs on
``physnet1`` (bridge ``br-phys`` without an uplink) and all traffic stays on
``br-int``. No DHCP agent and no L3 agent: for a subnet with DHCP
disabled Nova writes the address statically into the config drive's
network_data.json; with DHCP enabled (Nova 34 then says "ipv4_dhcp", DHCP
port or not) the OVS agent's ``dhcp`` extension answers in OpenFlow.
Routers are API objects only (Rally's network context makes one by
default).

Processes (all session leaders in the ledger, stopped by ``down``):
ovsdb-server and ovs-vswitchd (unless an Open vSwitch already answers on
its default socket: then it is reused and only our bridges are removed),
neutron-api (gunicorn), neutron-rpc-server, neutron-openvswitch-agent.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import MutableMapping
from collections.abc import Sequence
import os
import subprocess
from typing import Any

from kvmtune.testcloud import config
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest

APT = ('openvswitch-switch',)
OVS_RUNDIR = '/run/openvswitch'
OVS_SOCKET = 'unix:%s/db.sock' % OVS_RUNDIR
OVS_SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema'
# Neutron's agent and os-vif both default to this OVSDB endpoint.
OVS_MANAGER = 'ptcp:6640:127.0.0.1'
INT_BRIDGE = 'br-int'
PHYS_BRIDGE = 'br-phys'
PHYSNET = 'physnet1'
VLAN_RANGE = '100:199'
# Stopped by stop.stop_all in this order; the switch after them (stop_ovs).
STOP_ORDER = ('neutron-openvswitch-agent', 'neutron-rpc-server',
              'neutron-api')
PRIVSEP_SECTIONS = ('privsep', 'privsep_dhcp_release', 'privsep_ovs_vsctl',
                    'privsep_namespace', 'privsep_conntrack', 'privsep_link')


def conf_dir(layout: config.Layout) -> str:
    return os.path.join(layout.etc, 'neutron')


def conf_files(layout: config.Layout) -> dict[str, str]:
    d = conf_dir(layout)
    return {'neutron': os.path.join(d, 'neutron.conf'),
            'ml2': os.path.join(d, 'ml2_conf.ini'),
            'agent': os.path.join(d, 'openvswitch_agent.ini')}


# --- configuration ---------------------------------------------------------

def neutron_conf(layout: config.Layout, secrets: Mapping[str, str]
                 ) -> config.Conf:
    files = conf_files(layout)
    state = os.path.join(layout.data, 'neutron')
    helper = '%s --config-file %s --config-file %s' % (
        layout.bin('privsep-helper'), files['neutron'], files['agent'])
    nova = config.service_auth(layout, secrets, 'nova')
    nova['endpoint_type'] = 'public'
    conf: config.Conf = {
        'DEFAULT': {
            'core_plugin': 'ml2',
            # The router API only (no L3 agent): Rally's network context
            # creates a router and plugs the subnet unless told `router: {}`.
            'service_plugins': 'router',
            'auth_strategy': 'keystone',
            'transport_url': config.transport_url(layout),
            'api_paste_config': os.path.join(conf_dir(layout),
                                             'api-paste.ini'),
            'state_path': state,
            # The RPC worker also consumes agents' state reports.
            'rpc_workers': 1, 'rpc_state_report_workers': 0,
            # No DHCP agent: nothing to notify.
            'dhcp_agent_notification': 'false',
            # oslo.service's grace after SIGTERM (default 60 s), as Nova's:
            # `down` waits stop.STOP_GRACE, then SIGKILLs.
            'graceful_shutdown_timeout': 10,
            # network-vif-plugged/unplugged events to Nova.
            'notify_nova_on_port_status_changes': 'true',
            'notify_nova_on_port_data_changes': 'true',
        },
        'database': {'connection':
                     config.db_url(layout, secrets, 'neutron')},
        'keystone_authtoken': config.authtoken(layout, secrets,
                                               'neutron'),
        'nova': nova,
        # Root without sudo: commands run directly, privsep daemons are
        # started by their helper (as nova-compute's are).
        'agent': {'root_helper': ''},
        'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    }
    for section in PRIVSEP_SECTIONS:
        conf[section] = {'helper_command': helper}
    return conf


def ml2_conf() -> config.Conf:
    return {
        'ml2': {'type_drivers': 'vlan', 'tenant_network_types': 'vlan',
                'mechanism_drivers': 'openvswitch',
                'extension_drivers': 'port_security'},
        'ml2_type_vlan': {
            'network_vlan_ranges': '%s:%s' % (PHYSNET, VLAN_RANGE)},
    }


def agent_conf() -> config.Conf:
    return {
        'ovs': {'integration_bridge': INT_BRIDGE,
                'bridge_mappings': '%s:%s' % (PHYSNET, PHYS_BRIDGE),
                # No kernel datapath module on this host.
                'datapath_type': 'netdev',
                'of_listen_address': config.HOST},
        # The agent's own DHCP responder (OpenFlow packet-in, no
        # namespace, no dnsmasq). Nova 34 writes "ipv4_dhcp" into
        # network_data.json for every subnet with enable_dhcp, DHCP port
        # or not, and Rally's network context cannot turn DHCP off: without
        # an answer its guests had no address (seen: "no DHCP lease").
        'agent': {'tunnel_types': '', 'extensions': 'dhcp'},
        # noop, because: iptables_hybrid needs br_netfilter (a kernel
        # module: none loadable here) and the openvswitch firewall would
        # add userspace conntrack to every packet of the path kvmtune
        # measures, on 2 cores shared with TCG guests. The tenant network
        # is private to one test project on one host.
        'securitygroup': {'firewall_driver': 'noop'},
    }


def write_configs(layout: config.Layout, secrets: Mapping[str, str]
                  ) -> None:
    files = conf_files(layout)
    procs.write_file(files['neutron'], config.render(
        neutron_conf(layout, secrets)), 0o600)
    procs.write_file(files['ml2'], config.render(ml2_conf()), 0o600)
    procs.write_file(files['agent'], config.render(agent_conf()), 0o600)
    with open(os.path.join(layout.venv, 'etc', 'neutron',
                           'api-paste.ini')) as f:
        procs.write_file(os.path.join(conf_dir(layout), 'api-paste.ini'),
                         f.read())
    os.makedirs(os.path.join(layout.data, 'neutron', 'lock'),
                exist_ok=True)


# --- Open vSwitch ------------------------------------------------------------

def vsctl(*argv: str, timeout: int = 30
          ) -> 'subprocess.CompletedProcess[str]':
    return subprocess.run(['ovs-vsctl', '--timeout=%d' % timeout] +
                          list(argv), capture_output=True, text=True,
                          timeout=timeout + 10)


def _ovs_answers() -> bool:
    return (os.path.exists(OVS_SOCKET[len('unix:'):]) and
            vsctl('show', timeout=5).returncode == 0)


def _check(result: 'subprocess.CompletedProcess[str]', what: str
           ) -> None:
    if result.returncode:
        raise RuntimeError('%s: %s' % (what, result.stderr.strip()))


def start_ovs(layout: config.Layout, pids: MutableMapping[str, int]
              ) -> bool:
    """ovsdb-server + ovs-vswitchd on a fresh database; True if started.

    They keep the default run directory, so ovs-vsctl, libvirt and the
    neutron agent find them without options. An Open vSwitch that already
    answers there is reused (and left running by ``down``).
    """
    started = not _ovs_answers()
    if started:
        os.makedirs(OVS_RUNDIR, exist_ok=True)
        data = os.path.join(layout.data, 'ovs')
        os.makedirs(data, exist_ok=True)
        db = os.path.join(data, 'conf.db')
        if os.path.exists(db):
            os.remove(db)
        subprocess.check_call(['ovsdb-tool', 'create', db, OVS_SCHEMA])
        pids['ovsdb-server'] = procs.start(layout, 'ovsdb-server', [
            'ovsdb-server', db,
            '--remote=punix:%s' % OVS_SOCKET[len('unix:'):],
            '--remote=db:Open_vSwitch,Open_vSwitch,manager_options'])
        procs.wait_until(
            lambda: vsctl('--no-wait', 'show', timeout=2).returncode == 0,
            30, 'ovsdb-server', interval=0.3)
        # userspace-tso-enable (read once, at ovs-vswitchd's start): the
        # userspace datapath then reads and writes virtio-net headers on
        # the guests' taps. Without them a guest's checksum-offloaded
        # packet (partial checksum) reaches the other guest as is, and
        # TCP never connects (seen: ARP passes, iperf3 times out).
        _check(vsctl('--no-wait', 'init', '--', 'set-manager', OVS_MANAGER,
                     '--', 'set', 'Open_vSwitch', '.',
                     'other_config:userspace-tso-enable=true'),
               'ovs-vsctl init')
        pids['ovs-vswitchd'] = procs.start(layout, 'ovs-vswitchd', [
            'ovs-vswitchd', OVS_SOCKET])
    # Waits until ovs-vswitchd has configured the bridge.
    _check(vsctl('--may-exist', 'add-br', PHYS_BRIDGE, '--', 'set',
                 'Bridge', PHYS_BRIDGE, 'datapath_type=netdev', timeout=60),
           'ovs-vsctl add-br %s' % PHYS_BRIDGE)
    return started


def stop_ovs(state: Mapping[str, Any],
             terminate: Callable[[list[int]], Sequence[object]]
             ) -> list[str]:
    """Take our bridges off the switch (ovs-vswitchd deletes their tap
    devices then; killed, it would leave them behind), then stop the
    daemons if ``up`` started them. Returns what it did."""
    done: list[str] = []
    if _ovs_answers():
        vsctl('--if-exists', 'del-br', INT_BRIDGE, '--', '--if-exists',
              'del-br', PHYS_BRIDGE)
        done.append('bridges %s %s' % (INT_BRIDGE, PHYS_BRIDGE))
    services = state.get('services', {})
    for name in ('ovs-vswitchd', 'ovsdb-server'):
        pid = services.get(name)
        if pid and procs.alive(pid):
            done.append(name + (' (SIGKILL)' if terminate([pid]) else ''))
    if state.get('started_ovs'):
        # The datapath's own tap, and any bridge tap a SIGKILL left.
        for dev in ('ovs-netdev', INT_BRIDGE, PHYS_BRIDGE):
            if os.path.exists('/sys/class/net/' + dev):
                subprocess.call(['ip', 'link', 'del', dev])
                done.append('link ' + dev)
    return done


# --- Neutron -----------------------------------------------------------------

def db_sync(layout: config.Layout) -> None:
    files = conf_files(layout)
    procs.run(layout, 'neutron-db-manage', [
        layout.bin('neutron-db-manage'), '--config-file', files['neutron'],
        '--config-file', files['ml2'], 'upgrade', 'heads'])


def api_env(layout: config.Layout) -> dict[str, str]:
    """How neutron.wsgi.api finds its files (neutron/server/__init__.py)."""
    return {'OS_NEUTRON_CONFIG_DIR': conf_dir(layout),
            'OS_NEUTRON_CONFIG_FILES': 'neutron.conf;ml2_conf.ini'}


def start_rpc_and_agent(layout: config.Layout,
                        pids: MutableMapping[str, int]) -> None:
    files = conf_files(layout)
    pids['neutron-rpc-server'] = procs.start(layout, 'neutron-rpc-server', [
        layout.bin('neutron-rpc-server'), '--config-file', files['neutron'],
        '--config-file', files['ml2']])
    pids['neutron-openvswitch-agent'] = procs.start(
        layout, 'neutron-openvswitch-agent', [
            layout.bin('neutron-openvswitch-agent'),
            '--config-file', files['neutron'],
            '--config-file', files['agent']])


def wait_agent(layout: config.Layout, token: str, timeout: float,
               alive_pid: int) -> None:
    """Until the OVS agent is alive in the API (it reported its bridges)."""
    url = layout.url('network', '/v2.0/agents?agent_type=Open+vSwitch+'
                     'agent')

    def alive() -> bool:
        if not procs.alive(alive_pid):
            raise RuntimeError('neutron-openvswitch-agent exited: see '
                               'log/neutron-openvswitch-agent.log')
        try:
            agents = rest.call('GET', url, token=token)[2]['agents']
        except (rest.HTTPError, OSError):
            return False
        return any(a['alive'] for a in agents)
    procs.wait_until(alive, timeout, 'neutron-openvswitch-agent',
                     interval=0.3)
