"""The main job: from a fresh host to a scaling report (`kvmtune
main-job`; tools/main-job from a checkout).

Without --os-cloud it brings up the single-host test cloud
(kvmtune.testcloud, libvirt compute, QEMU TCG where KVM cannot run
guests) and works against it; with --os-cloud C it uses
that cloud and starts nothing locally. Either way it builds and uploads
the benchmark image, makes the default and the tuned flavor (what
`kvmtune flavor apply` does, called as a library), runs the disk scaling
sweep with Rally (the task file installed with kvmtune.rally) and makes
the report. Rally's database and settings, the results, the report and
the job's log stay in the state directory. Only the job's own lines go to
stdout: one per step with its time, then the summary.

The tuned profile follows the compute's facts: pinned-hugepages-ept where
EPT/NPT is on (its flavor requires CUSTOM_KVMTUNE_EPT, the trait `kvmtune
host tag` sets from the same facts), else pinned-hugepages (no trait);
--tuned-profile overrides.

On the local test cloud, whose compute is this host, the job also tunes
the compute: huge pages of the size the tuned flavor asks for
(hw:mem_page_size; `large` is the largest page that divides the guests'
RAM) through /sys/kernel/mm/hugepages, nova.conf of the profile (PCPU
inventory), a compute restart, and the host's traits. The tuned flavor's
sweep runs only the VM counts whose pinned guests fit Placement's PCPU
inventory, and says so.

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

Exit status: 0 when the sweep ran and the report was made, whatever the
SLA said (the verdict is printed); 1 with --strict when an SLA failed; 2
when a step could not run.
"""
import os
from typing import Any

from kvmtune import image

# The job in parts, each importing only the ones before it:
#   steps    how a step runs and what the job says (say, step, detail,
#            run, the log)
#   rallycloud the cloud a Rally environment is for: its spec, its
#            credentials checked
#   rallyenv Rally's database and environment for a cloud (also `kvmtune
#            rally env`, for plain rally)
#   rally    Rally's environment, task arguments and the sweep
#   pages    the huge pages the tuned guests need, and reserving them
#   cloud    the test cloud, the benchmark image, the base flavor
#   compute  the compute's setup: local (tuned here) or an operator's
#   job      the steps in order and the summary (run)
# This module holds what they share: where things are, what the job makes.

IMAGE_DIR = image.image_dir()
STATE_DIR = os.environ.get('KVMTUNE_STATE_DIR',
                           '/var/lib/kvmtune/main-job')
BASE_PROFILE = 'baseline'
# The job's defaults, which `kvmtune main-job` offers (this module is
# light: the command imports these instead of copying them).
MAX_VMS = 3
WORKLOAD = 'fio-randread-4k'
# The base flavor: small guests, and an ephemeral disk the job benchmarks.
BASE_FLAVOR: dict[str, Any] = {'name': 'm1.bench', 'vcpus': 1, 'ram': 256,
                               'disk': 1, 'ephemeral': 1}
