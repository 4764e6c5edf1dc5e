"""Network scaling: N client guests against one server guest, one host."""

import time
from typing import Any

from rally.common import validation
from rally import exceptions
from rally.task import types

from rally_openstack.common import consts
from rally_openstack.task import scenario

from kvmtune.errors import KvmtuneError
from kvmtune.rally.scenarios.kvmtune import guests
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import units


@types.convert(image={"type": "glance_image"},
               flavor={"type": "nova_flavor"},
               server_flavor={"type": "nova_flavor"})
@validation.add("image_valid_on_flavor", flavor_param="flavor",
                image_param="image", fail_on_404_image=False)
@validation.add("number", param_name="runtime", minval=1, integer_only=True)
@validation.add("enum", param_name="start_mode", values=utils.START_MODES,
                missed=True)
@validation.add("required_services", services=[consts.Service.NOVA,
                                               consts.Service.NEUTRON])
@validation.add("required_platform", platform="openstack", users=True)
@scenario.configure(context={"cleanup@openstack": ["nova"]},
                    name="KvmTune.network_scaling", platform="openstack")
class NetworkScaling(utils.KvmTuneScenario):

    _chart_metrics = units.throughput("gbit_s", "tps")

    def _address(self, server: utils.Server) -> str:
        """The server guest's first fixed address, from the Nova API."""
        for addresses in (server.addresses or {}).values():
            for a in addresses:
                if a.get("OS-EXT-IPS:type", "fixed") == "fixed":
                    addr: str = a["addr"]
                    return addr
        raise exceptions.RallyException(
            f"server guest {server.id} has no fixed address: the network "
            "scenario needs a tenant network (network@openstack context or "
            "the nics argument)")

    def run(self, flavor: str, image: str, vm_counts: list[int],
            workload: str = "iperf3-tcp-stream", runtime: int = 10,
            params: dict[str, Any] | None = None, start_margin: float = 45,
            start_margin_per_vm: float = 20, result_timeout: float = 180,
            host: str | None = None, nics: utils.Nics | None = None,
            emulated: bool = False, server_flavor: str | None = None,
            start_mode: str = "signal", ready_timeout: float = 600) -> None:
        """Boot a server guest, then N clients that load it at once.

        The server guest (role server, hold) serves until it is deleted;
        iteration i boots vm_counts[i] clients on the same host and network,
        each given the server's address (read from the Nova API) as peer and
        one common start_at; a tool whose server takes one client at a time
        (iperf3) gets one server process and port per client. Per-client
        results go to the output table read by the kvmtune_scaling SLA and
        `kvmtune report`.

        :param flavor: benchmark flavor
        :param image: the kvmtune benchmark image
        :param vm_counts: clients per iteration, e.g. [1, 2, 3]
        :param workload: workload name from kvmtune/data/workloads
        :param runtime: seconds each client runs
        :param params: workload parameters passed to the guests unchanged
        :param start_margin: start_mode "at": seconds from now to
            start_at for one client
        :param start_margin_per_vm: start_mode "at": extra seconds per
            client booted at once
        :param result_timeout: seconds after the start + runtime to wait
            for every client's status line on its console
        :param start_mode: "signal" (default): the clients start on an
            NMI once the server serves and every client said ready
            (design.md 6); "at": the old common start_at, guessed from the
            margins
        :param ready_timeout: start_mode "signal": seconds from the
            clients' create calls for every client to say ready
        :param host: admin only: boot on this compute host
        :param nics: NICs for novaclient; default: the context's network
        :param emulated: the cloud runs guests under QEMU without KVM
            (TCG); results are labelled emulated
        :param server_flavor: flavor of the server guest (default: flavor);
            e.g. an unpinned one when the host has too few dedicated CPUs
            for the server and every client
        """
        vms = self._vm_count(vm_counts)
        nics = self._nics(nics)
        if not isinstance(nics, list):
            raise exceptions.InvalidArgumentsException(
                "the network scenario needs a network: add the "
                "network@openstack context or pass nics")
        try:
            # iperf3 serves one client per process: a port per client
            ports = guests.client_ports(workload, vms, params)
        except KvmtuneError as exc:
            raise exceptions.InvalidArgumentsException(exc.line()) from None
        with self._guest_batch(host, workload) as (created, placement):
            serve = self._job(workload, time.time(), runtime,
                              role="server", hold=True, params=params,
                              ports=ports)
            self._create_guests(image, server_flavor or flavor, [serve],
                                placement, nics, created, role="server")
            server, = self._wait_active(created)
            peer = self._address(server)
            signal = start_mode == "signal"
            created_at = time.time()
            start = None if signal else guests.start_at(
                created_at, vms, start_margin, start_margin_per_vm)
            # hold: Nova serves no console log of a stopped guest
            jobs = [self._job(workload, start, runtime, peer=peer,
                              hold=True, params=dict(params or {}, port=p),
                              start="nmi" if signal else None)
                    for p in ports]
            self._create_guests(image, flavor, jobs, placement, nics,
                                created)
            clients = self._wait_active(created[1:])
            rows = self._run_step(vms, [server] + clients, clients, start,
                                  runtime, workload, emulated, created_at,
                                  time.time(), ready_timeout, result_timeout)
        self._fail_on_bad_guests(rows)
