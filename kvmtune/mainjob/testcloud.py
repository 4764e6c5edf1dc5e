"""The main job's target when it runs on this host: the single-host test
cloud (kvmtune.testcloud, what `kvmtune cloud` runs) brought up beside the
image build, its compute tuned for the tuned profile, the sweep's VM counts
limited to the guests that fit, and how to stop the cloud, which the job
leaves running. The test cloud's side is reached through its library
(kvmtune.testcloud.api: install, up, its env, whether it emulates, restart
of its compute, how to stop it). An operator's cloud is the other target:
kvmtune.mainjob.cloud.OperatorCloud."""
from collections.abc import Sequence
import os
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune import mainjob
from kvmtune.mainjob import cloud
from kvmtune.mainjob import compute
from kvmtune.mainjob import steps

if TYPE_CHECKING:
    from concurrent.futures import Future

    from openstack.connection import Connection

    from kvmtune.facts.types import Facts
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


class TestCloud:
    """The test cloud as the job's target: the tuned profile is decided
    from this host's facts before anything installs (a profile this host
    cannot serve stops the job there), the bare host is measured before
    the cloud starts, the cloud installs and comes up beside the image
    build, and the compute is tuned before the sweep."""

    __test__ = False    # a target, not a pytest class
    measures_baseline = True

    def __init__(self, this_facts: 'Facts', *, max_vms: int,
                 tuned_profile: str | None, config_files: Sequence[str],
                 emulated: bool) -> None:
        self.name = ''          # once up: its admin cloud of clouds.yaml
        self.emulated = emulated
        self.record_facts: 'Facts | None' = this_facts
        self._max_vms = max_vms
        self._installing: 'Future[dict[str, Any]] | None' = None
        with steps.step('tuned profile') as s:
            self.setup = compute.local_setup(
                this_facts, None, max_vms, mainjob.BASE_FLAVOR['ram'],
                tuned_profile, config_files)
            s.done(f'{self.setup.profile}: {self.setup.why}')
        self.profile = self.setup.profile

    def start(self) -> None:
        """The cloud's install and bring-up, beside the image build."""
        self._installing = start_cloud()

    def up(self) -> 'Cloud':
        """After the image build: the cloud up, its compute's nova.conf and
        Python on the setup; the connection."""
        started = install_step(self._installing)
        self.name, self.setup.nova_conf, self.setup.nova_python = \
            testcloud_step(started)
        self.emulated = self.emulated or testcloud_emulated()
        return cloud.connect(self.name)

    def compute_step(self, api: 'Cloud', flavors: list[str]
                     ) -> dict[str, int]:
        """The compute tuned for the tuned flavor; {flavor: largest VM
        count} for a flavor of which fewer guests fit than the sweep's
        VM count."""
        with steps.step('compute tuning') as s, api.named():
            fits = compute.tune_local_compute(
                cast('Connection', api.conn), self.setup, self.name,
                restart=restart_compute)
            s.done(f'{self.setup.summary}')
        return compute.sweep_limits(self.setup, flavors, self._max_vms,
                                    fits)

    @staticmethod
    def stop_hint() -> str | None:
        return stop_hint()
