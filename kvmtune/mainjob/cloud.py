"""The cloud side of the main job: the test cloud through its
library (kvmtune.testcloud.api, what `kvmtune cloud` calls: up, its env,
whether it emulates, restart of its compute, how to stop it), the cloud's
compute node names, the benchmark image upload and the base flavor the
tuned flavors start from."""
import os
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune import image
from kvmtune import mainjob
from kvmtune.mainjob import steps

if TYPE_CHECKING:
    from concurrent.futures import Future

    from openstack.connection import Connection

    from kvmtune.openstack.connection import Cloud


def _say(line: str) -> None:
    steps.detail(line)


def start_cloud(up: bool = True) -> 'Future[dict[str, Any]] | None':
    """When the test cloud is not up, start installing what it needs
    (api.install with libvirt: apt, the services' venv; network and disk)
    and, with ``up``, bringing it up (testcloud_up: its services start),
    in a thread of its own, so that the image build (CPU) runs meanwhile
    (benchmarks/main_job_install.py). None when a cloud runs (nothing to
    install). The future's result is the install's figures, with the
    cloud's (name, state) under 'cloud' when ``up``; result() re-raises
    what the install or the bring-up raised."""
    from kvmtune.testcloud import api

    running = api.status()
    if running is not None and not running.get('not_running'):
        return None

    def install_and_up() -> dict[str, Any]:
        figures = api.install(libvirt=True, say=_say, output=steps.OUT.log)
        if up:
            figures['cloud'] = testcloud_up(installed=True)
        return figures

    return steps.beside('cloud-install', install_and_up)


def install_step(installing: 'Future[dict[str, Any]] | None'
                 ) -> dict[str, Any] | None:
    """Wait for start_cloud()'s work (after the image build); the step's
    line says how long the install took and what it installed. Its
    figures (None when nothing was started)."""
    if installing is None:
        return None
    with steps.step('test cloud install') as s:
        figures = installing.result()
        changed = ', '.join(figures['changed']) or 'nothing missing'
        s.done(f'{figures["seconds"]:.0f} s beside the image build '
               f'({changed})')
    return figures


def testcloud_up(installed: bool = False) -> tuple[str, str]:
    """Bring up the test cloud (libvirt compute) unless it already
    runs: (cloud name, what happened). ``installed``: start_cloud()'s
    install is done (else api.install checks and installs here)."""
    from kvmtune.testcloud import api
    from kvmtune.testcloud import config
    from kvmtune.testcloud import stop

    running = api.status()
    stale = running is not None and bool(running.get('not_running'))
    if stale:
        # what a crashed or rebooted run left: its state, no services
        api.down(say=_say)
        running = None
    if running and running['mode'] == 'libvirt':
        state = 'already up with libvirt compute: using it'
    elif running:
        raise CloudError('a test cloud without libvirt compute is up',
                         source=running['root'],
                         fix='guests need libvirt: when nobody uses it, '
                             f'{stop.STOP_HINT}, then run again')
    else:
        if not installed:
            api.install(libvirt=True, say=_say, output=steps.OUT.log)
        figures = api.up(compute='libvirt', say=_say)
        how = 'restarted (some services had stopped)' if stale else 'up'
        state = (f'{how} in {figures["seconds"]:.0f} s, libvirt compute '
                 f'({figures["virt_type"]}), network {figures["network"]}')
    os.environ['OS_CLIENT_CONFIG_FILE'] = api.env()['OS_CLIENT_CONFIG_FILE']
    return config.ADMIN_CLOUD, state


def testcloud_step(started: dict[str, Any] | None
                   ) -> tuple[str, str, str | None]:
    """The job's step: the test cloud up (by start_cloud() beside the
    image build, whose figures are ``started``; else here, installed
    first); what the compute's tuning needs of it: (the cloud's name, its
    compute's nova.conf, its Python with Nova or None)."""
    with steps.step('test cloud') as s:
        if started is not None and 'cloud' in started:
            cloud_name, state = cast(tuple[str, str], started['cloud'])
            state += ' (beside the image build)'
        else:
            cloud_name, state = testcloud_up(started is not None)
        s.done(state)
    return cloud_name, nova_conf(), nova_python()


def nova_conf() -> str:
    """The test cloud's compute's own nova.conf."""
    from kvmtune.testcloud import api

    return api.env()['KVMTUNE_NOVA_CONF']


def nova_python() -> str | None:
    """The test cloud's Python, which imports Nova (or None)."""
    from kvmtune.testcloud import api

    python = api.python()
    return python if os.path.exists(python) else None


def restart_compute() -> None:
    from kvmtune.testcloud import api

    api.restart_compute(say=_say)


def stop_hint() -> str | None:
    """How to stop the test cloud, which the job leaves running for
    the next run; None when none runs."""
    from kvmtune.testcloud import api
    from kvmtune.testcloud import stop

    try:
        if not api.status():
            return None
    except Exception:   # a broken state dir: say how to stop anyway
        pass
    return (f'the test cloud keeps running for the next run; stop it '
            f'with: {stop.STOP_HINT}')


def testcloud_emulated() -> bool:
    """True when the test cloud runs guests under QEMU TCG."""
    from kvmtune.testcloud import api

    running = api.status()
    return running is not None and running.get('virt_type') == 'qemu'


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
