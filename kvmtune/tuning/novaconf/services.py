"""Which Nova service reads which nova.conf option kvmtune plans.

On a multi-node cloud every Nova service reads its own copy of nova.conf:
an option written where its reader does not run has no effect (only a
single-node DevStack has one file for all). The table below says, for each
option a kvmtune tuner or export sets, which services read it, and where in
Nova 34 (2026.2) that read is, so that anyone can check it:

- ``git grep -n 'CONF.<section>.<option>' -- nova/ ':!nova/tests'`` in
  https://opendev.org/openstack/nova (the same in the Nova installed in the
  test cloud), and for reads behind a helper, the callers of that helper.

tests/unit/tuning/novaconf/test_services.py derives the readers again from the
Nova source it finds (the test cloud's Nova) and fails when this table
misses a reader or cites a place that does not read the option.

Service names are Nova's binaries without ``nova-``: compute, scheduler,
conductor, api.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import os
import re
from typing import Any

COMPUTE = 'compute'
SCHEDULER = 'scheduler'
CONDUCTOR = 'conductor'
API = 'api'
SERVICES = (COMPUTE, SCHEDULER, CONDUCTOR, API)

# What ``--service`` accepts (nova-conf apply); 'all' is every service.
CHOICES = (COMPUTE, SCHEDULER, 'all')


@dataclasses.dataclass(frozen=True)
class Read:
    """One place in Nova that reads an option, on behalf of ``service``.

    ``path`` is relative to the nova package; ``function`` is the function
    whose body reads it (directly, or through ``via``: a helper in another
    module that ``function`` calls and that reads the option).
    """

    service: str
    path: str
    function: str
    via: str | None = None

    def cite(self) -> str:
        where = f'nova/{self.path} {self.function}()'
        return f'{where} via {self.via}()' if self.via else where


_R = Read
READERS: dict[tuple[str, str], tuple[Read, ...]] = {
    ('DEFAULT', 'reserved_host_memory_mb'): (
        _R(COMPUTE, 'compute/resource_tracker.py',
           '_update_usage_from_instances'),
        _R(COMPUTE, 'virt/libvirt/driver.py', 'update_provider_tree'),
    ),
    ('DEFAULT', 'use_cow_images'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '__init__'),
    ),
    ('DEFAULT', 'preallocate_images'): (
        _R(COMPUTE, 'virt/libvirt/imagebackend.py', '__init__'),
    ),
    ('DEFAULT', 'reserved_huge_pages'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '__init__',
           via='hardware.numa_get_reserved_huge_pages'),
    ),
    ('compute', 'cpu_shared_set'): (
        _R(COMPUTE, 'virt/libvirt/driver.py',
           '_validate_pinning_configuration'),
        _R(COMPUTE, 'virt/libvirt/driver.py', '_get_vcpu_available',
           via='hardware.get_cpu_shared_set'),
    ),
    ('compute', 'cpu_dedicated_set'): (
        _R(COMPUTE, 'virt/libvirt/driver.py',
           '_validate_pinning_configuration'),
        _R(COMPUTE, 'virt/libvirt/driver.py', '_get_pcpu_available',
           via='hardware.get_cpu_dedicated_set'),
    ),
    ('compute', 'provider_config_location'): (
        _R(COMPUTE, 'compute/resource_tracker.py', '__init__'),
    ),
    # The PCPU -> VCPU fallback query is built in the scheduler only.
    ('workarounds', 'disable_fallback_pcpu_query'): (
        _R(SCHEDULER, 'scheduler/manager.py', 'select_destinations'),
    ),
    # The scheduler loads its filters from it; the conductor asks whether
    # the server group filters are enabled before it schedules a group
    # (scheduler_utils.setup_instance_group -> _get_group_details ->
    # validate_filter reads the option).
    ('filter_scheduler', 'enabled_filters'): (
        _R(SCHEDULER, 'scheduler/host_manager.py', '_load_filters'),
        _R(CONDUCTOR, 'conductor/manager.py', '_schedule_instances',
           via='scheduler_utils.setup_instance_group'),
    ),
    ('libvirt', 'cpu_mode'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '_get_guest_cpu_model_config'),
    ),
    ('libvirt', 'cpu_models'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '_check_cpu_compatibility'),
        _R(COMPUTE, 'virt/libvirt/driver.py', '_get_guest_cpu_model_config'),
    ),
    ('libvirt', 'cpu_model_extra_flags'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '_check_cpu_compatibility'),
        _R(COMPUTE, 'virt/libvirt/driver.py', '_get_guest_cpu_model_config'),
    ),
    ('libvirt', 'rx_queue_size'): (
        _R(COMPUTE, 'virt/libvirt/vif.py', 'get_base_config'),
    ),
    ('libvirt', 'images_type'): (
        _R(COMPUTE, 'virt/libvirt/imagebackend.py', 'backend'),
    ),
    ('libvirt', 'images_volume_group'): (
        _R(COMPUTE, 'virt/libvirt/imagebackend.py', '__init__'),
    ),
    ('libvirt', 'disk_cachemodes'): (
        _R(COMPUTE, 'virt/libvirt/driver.py', '__init__'),
    ),
}


class UnknownOption(KeyError):
    """An option kvmtune has no reader for: add it to READERS."""


def readers(section: str, option: str) -> tuple[str, ...]:
    """The services that read ``[section] option``, in SERVICES order."""
    try:
        reads = READERS[(section, option)]
    except KeyError:
        raise UnknownOption(f'[{section}] {option}') from None
    found = {read.service for read in reads}
    return tuple(service for service in SERVICES if service in found)


def citation(section: str, option: str) -> str:
    """Where Nova reads it, for messages: 'nova/scheduler/...() ...'."""
    return '; '.join(read.cite() for read in READERS[(section, option)])


def tag(nova_conf: Mapping[str, Mapping[str, Any]]
        ) -> dict[str, dict[str, tuple[str, ...]]]:
    """{section: {option: (services...)}} for a plan's nova_conf."""
    return {section: {option: readers(section, option)
                      for option in options}
            for section, options in nova_conf.items()}


def split(nova_conf: Mapping[str, Mapping[str, Any]], service: str
          ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(kept, left) of ``nova_conf``: options ``service`` reads, and the
    others, each {section: {option: value}}; service 'all' keeps all."""
    kept: dict[str, dict[str, Any]] = {}
    left: dict[str, dict[str, Any]] = {}
    for section, options in nova_conf.items():
        for option, value in options.items():
            wanted = (service == 'all'
                      or service in readers(section, option))
            target = kept if wanted else left
            target.setdefault(section, {})[option] = value
    return kept, left


# The process names of Nova's services: /proc/<pid>/cmdline has them as
# the script path (nova-compute) or as an argument of python.
_PROGRAMS = {f'nova-{service}': service for service in SERVICES}
_PROGRAMS['nova-api-wsgi'] = API


_PYTHON = re.compile(r'python[0-9.]*\Z')


def service_of(argv: Sequence[str]) -> str | None:
    """The Nova service a process runs, from its argv (a list of str), or
    None. Nova's programs run as the script (``/usr/bin/nova-compute
    --config-file ...``), as python's first argument (``python3
    /usr/bin/nova-compute``), or retitled by oslo.service (``nova-scheduler:
    master process [/usr/bin/nova-scheduler ...]``, one string). A process that
    merely names one (``journalctl -u nova-scheduler``, ``tail -f
    nova-compute.log``) is not it (tests/unit/test_hostile.py).
    """
    if not argv:
        return None
    first = argv[0].split()
    head = os.path.basename(first[0].rstrip(':')) if first else ''
    if head in _PROGRAMS and (first[0].endswith(':') or len(first) == 1):
        return _PROGRAMS[head]
    if _PYTHON.match(head):
        for word in argv[1:3]:
            if word.startswith('-'):
                continue            # python -u /usr/bin/nova-compute
            name = os.path.basename(word)
            return _PROGRAMS.get(name)
    return None


def processes(proc: str = '/proc') -> list[tuple[int, str, list[str]]]:
    """[(pid, service, argv)] of every Nova service process under ``proc``
    (/proc/<pid>/cmdline read bounded; unreadable ones skipped)."""
    from kvmtune.errors import InputError
    from kvmtune import inputs

    found: list[tuple[int, str, list[str]]] = []
    try:
        pids = sorted((name for name in os.listdir(proc) if name.isdigit()),
                      key=int)
    except OSError:
        return found
    for pid in pids:
        try:
            data = inputs.read_bytes(os.path.join(proc, pid, 'cmdline'),
                                     max_bytes=1 << 20)
        except InputError:
            continue
        argv = [word.decode('utf-8', 'replace')
                for word in data.split(b'\0') if word]
        service = service_of(argv)
        if service:
            found.append((int(pid), service, argv))
    return found


def running(proc: str = '/proc') -> set[str]:
    """The Nova services with a process on this host (a set, maybe empty)."""
    return {service for _, service, _ in processes(proc)}


def default_service(proc: str = '/proc') -> tuple[str, str]:
    """(service, why) for ``--service`` when none is given: what this host
    runs when that can be told, else compute."""
    here = running(proc)
    if COMPUTE in here and SCHEDULER in here:
        return 'all', 'this host runs nova-compute and nova-scheduler'
    if SCHEDULER in here:
        return SCHEDULER, 'this host runs nova-scheduler, not nova-compute'
    if COMPUTE in here:
        return COMPUTE, 'this host runs nova-compute'
    return COMPUTE, 'no Nova service runs here: taken as a compute host'


def parse_cmdline(line: str) -> tuple[list[str], str]:
    """(argv, service) of a ``--service-cmdline`` given as one shell line.

    :raises InputError: it does not split into words, or it is not the
        command line of a Nova service
    """
    import shlex

    from kvmtune.errors import InputError
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise InputError(f'cannot split it into words: {exc}', source=line,
                         key='--service-cmdline',
                         fix='quote it as a shell would') from None
    service = service_of(argv)
    if service is None:
        raise InputError('not the command line of a Nova service',
                         source=line, key='--service-cmdline',
                         fix='give it as /proc/<pid>/cmdline shows it, '
                             'e.g. "/usr/bin/nova-compute --config-file '
                             '/etc/nova/nova.conf"')
    return argv, service
