"""The main job's target when it is given a cloud of clouds.yaml
(``--os-cloud``): an operator's cloud, on which it changes nothing of this
host (OperatorCloud); and what the job does in any cloud, the test cloud
(kvmtune.mainjob.testcloud) included: connect, list the compute nodes,
upload the benchmark image, make the base flavor the tuned flavors start
from."""
import os
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune import image
from kvmtune import mainjob
from kvmtune.mainjob import compute
from kvmtune.mainjob import steps

if TYPE_CHECKING:
    from openstack.connection import Connection

    from kvmtune.facts.types import Facts
    from kvmtune.openstack.connection import Cloud


class OperatorCloud:
    """An operator's cloud as the job's target: nothing of this host is
    installed, started or changed; the tuned profile comes from the facts
    of one of its computes (--compute-facts, or this host when it is one
    of them), that compute is tagged, and the job says what the operator
    does on each compute host."""

    measures_baseline = False

    def __init__(self, name: str, this_facts: 'Facts', *, max_vms: int,
                 compute_facts: str | None, tuned_profile: str | None,
                 emulated: bool) -> None:
        self.name = name
        self.emulated = emulated
        self._this_facts = this_facts
        self._max_vms = max_vms
        self._compute_facts = compute_facts
        self._tuned_profile = tuned_profile
        self.profile = ''
        self.record_facts: 'Facts | None' = None

    def start(self) -> None:
        """Nothing to install or start beside the image build."""

    def up(self) -> 'Cloud':
        """The connection, then the tuned profile from a compute's facts."""
        api = connect(self.name)
        with api.named(), steps.step('tuned profile') as s:
            self.setup = compute.remote_setup(
                self.name, self._this_facts, compute_node_names(api.conn),
                self._max_vms, mainjob.BASE_FLAVOR['ram'],
                self._compute_facts, self._tuned_profile)
            s.done(f'{self.setup.profile}: {self.setup.why} (compute '
                   f'facts: {self.setup.source})')
        self.profile = self.setup.profile
        self.record_facts = self.setup.facts
        return api

    def compute_step(self, api: 'Cloud', flavors: list[str]
                     ) -> dict[str, int]:
        """Tag the compute whose facts the job has; the operator's steps.
        No VM count is limited: the job does not know the computes'
        free CPUs."""
        setup = self.setup
        with steps.step('compute') as s:
            for line in compute.tag_remote(setup, self.name):
                steps.detail(line)
            s.done('tagged ' + setup.source if setup.facts is not None
                   else 'not tagged: no facts of its computes (give '
                        '--compute-facts FILE)')
        for line in compute.operator_steps(setup, self.name, self._max_vms,
                                           mainjob.BASE_FLAVOR['ram']):
            steps.say(line)
        return {}

    @staticmethod
    def stop_hint() -> str | None:
        """No cloud of this host runs for the job."""
        return None


def connect(name: str) -> 'Cloud':
    """The cloud of clouds.yaml as kvmtune.openstack.connection makes it:
    openstacksdk's own calls through ``.conn`` retry reads (a line each),
    send writes once and carry a request id; ``with cloud.named():``
    makes what they raise one line naming the request, its id and the
    endpoint."""
    from kvmtune.openstack.connection import Cloud

    return Cloud.connect(name)


def compute_node_names(conn: 'Connection') -> set[str]:
    """Hypervisor hostnames of the cloud (admin); empty when hidden."""
    from openstack import exceptions as sdk_exc

    try:
        return {h.name for h in conn.compute.hypervisors()}
    except sdk_exc.HttpException as exc:
        # a non-admin account may not list them; a cloud that failed
        # (5xx after the retries, no answer) is an error, not "hidden"
        hidden = isinstance(exc, (sdk_exc.ForbiddenException,
                                  sdk_exc.NotFoundException)) or \
            exc.status_code in (401, 403, 404)
        if not hidden:
            raise
        steps.detail(f'compute nodes: not listed ({type(exc).__name__}):'
                     ' tagging needs --compute-facts')
        return set()


def image_file() -> tuple[str, str]:
    for name, fmt in ((image.QCOW2, 'qcow2'), (image.RAW, 'raw')):
        path = os.path.join(mainjob.IMAGE_DIR, name)
        if os.path.exists(path):
            return path, fmt
    raise CloudError('no benchmark image after the build',
                     source=mainjob.IMAGE_DIR,
                     fix='run kvmtune image build and read its error')


def upload_image(conn: 'Connection') -> str:
    """Upload the image once; a changed file replaces the old one."""
    import hashlib

    path, fmt = image_file()
    sha = hashlib.sha512()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            sha.update(block)
    old = [i for i in conn.image.images(name=image.GLANCE_NAME)]
    if any(i.hash_value == sha.hexdigest() for i in old):
        return f'image {image.GLANCE_NAME} unchanged'
    conn.create_image(image.GLANCE_NAME, filename=path, disk_format=fmt,
                      container_format='bare', visibility='public',
                      wait=True)
    for i in old:
        conn.image.delete_image(i)
    return f'image {image.GLANCE_NAME} uploaded'


def base_flavor(conn: 'Connection') -> str:
    name = mainjob.BASE_FLAVOR['name']
    if conn.compute.find_flavor(name):
        return f'flavor {name} exists'
    conn.compute.create_flavor(is_public=True, **mainjob.BASE_FLAVOR)
    return f'flavor {name} created'
