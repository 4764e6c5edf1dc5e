"""Disk scaling: the same fio job on 1..N guests of one host at once.

The same scenario runs the CPU and memory workloads (sysbench-*, target
none): the guests then get no data disk in their job and the flavor needs
no ephemeral disk.
"""

import time
from typing import Any

from rally.common import validation
from rally.task import types

from rally_openstack.common import consts
from rally_openstack.task import scenario

from kvmtune.rally.scenarios.kvmtune import guests
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import units


@types.convert(image={"type": "glance_image"},
               flavor={"type": "nova_flavor"})
@validation.add("image_valid_on_flavor", flavor_param="flavor",
                image_param="image", fail_on_404_image=False)
@validation.add("number", param_name="runtime", minval=1, integer_only=True)
@validation.add("enum", param_name="start_mode", values=utils.START_MODES,
                missed=True)
@validation.add("required_services", services=[consts.Service.NOVA])
@validation.add("required_platform", platform="openstack", users=True)
@scenario.configure(context={"cleanup@openstack": ["nova"]},
                    name="KvmTune.disk_scaling", platform="openstack")
class DiskScaling(utils.KvmTuneScenario):

    # throughput only: latency has its own chart (charts.ScenarioCharts)
    _chart_metrics = units.throughput("iops", "events_s", "bw_bytes_s")

    def run(self, flavor: str, image: str, vm_counts: list[int],
            workload: str = "fio-randread-4k",
            target: str | None = "/dev/vdb", runtime: int = 10,
            params: dict[str, Any] | None = None, start_margin: float = 45,
            start_margin_per_vm: float = 20, result_timeout: float = 180,
            host: str | None = None, nics: utils.Nics | None = None,
            emulated: bool = False, record: dict[str, Any] | None = None,
            start_mode: str = "signal", ready_timeout: float = 600) -> None:
        """Boot N guests on one host; each runs a fio job on its data disk.

        Iteration i boots vm_counts[i] guests (so a task sweeps the list
        with times = len(vm_counts)), all started together: by default
        each says ready on its console and all get the start signal (an
        NMI) once every one is ready; start_mode "at" is the old common
        start_at, guessed from start_margin.
        Every guest benchmarks its flavor's ephemeral disk, named in the
        job, never the boot disk. Per-VM results go to the output table
        read by the kvmtune_scaling SLA and `kvmtune report`.

        :param flavor: benchmark flavor (with an ephemeral disk)
        :param image: the kvmtune benchmark image
        :param vm_counts: guests per iteration, e.g. [1, 2, 3]
        :param workload: workload name from kvmtune/data/workloads
        :param target: device of the data disk inside the guest
        :param runtime: seconds the workload runs
        :param params: workload parameters passed to the guest unchanged
        :param start_margin: start_mode "at": seconds from now to start_at
            for one guest
        :param start_margin_per_vm: start_mode "at": extra seconds per
            guest booted at once
        :param result_timeout: seconds after the start + runtime to wait
            for every guest's status line on its console
        :param start_mode: "signal" (default) or "at" (design.md 6)
        :param ready_timeout: start_mode "signal": seconds from the create
            calls for every guest to say ready; the ready ones then start
            and the others are reported as never ready
        :param host: admin only: boot on this compute host
            (availability_zone nova:HOST) instead of an affinity group
        :param nics: NICs for novaclient; default: the context's network,
            else none
        :param emulated: the cloud runs guests under QEMU without KVM
            (TCG); results are labelled emulated
        :param record: what the task knows of how the results were made
            (kvmtune.results.records: profile, nova.conf options, extra
            specs, the compute's facts digest); kept in Rally's result
            file with the other arguments, read back by `kvmtune report`
        """
        vms = self._vm_count(vm_counts)
        if self._needs_disk(workload):
            self._require_data_disk(flavor, target)
        else:
            target = None    # CPU and memory workloads: no data disk
        signal = start_mode != "at"
        with self._guest_batch(host, workload) as (created, placement):
            created_at = time.time()
            start = None if signal else guests.start_at(
                created_at, vms, start_margin, start_margin_per_vm)
            # hold: Nova serves no console log of a stopped guest
            job = self._job(workload, start, runtime, target=target,
                            hold=True, params=params,
                            start="nmi" if signal else None)
            self._create_guests(image, flavor, [job] * vms, placement,
                                self._nics(nics), created)
            active = self._wait_active(created)
            rows = self._run_step(vms, active, active, start, runtime,
                                  workload, emulated, created_at,
                                  time.time(), ready_timeout, result_timeout)
        self._fail_on_bad_guests(rows)
