"""Faults on the cloud side (doc/design.md 9.8).

Proxy tests: the commands that talk to the cloud run against a clouds.yaml
whose compute endpoint is a FaultProxy (tests/functional/faultproxy.py) in
front of the test cloud's Nova: reads are retried within a bound with a
line per retry, writes go once, a give-up is one line naming the endpoint
and a request id, and a plain re-run converges.

Kill tests: `kvmtune flavor apply|remove` and `kvmtune host tag` run as
processes that SIGKILL themselves once the answer to their N-th HTTP
request has arrived (KVMTUNE_TEST_KILL_AFTER_CALL,
kvmtune.openstack.connection), for N = 1, 2, ... until a run finishes on its
own. After each kill the object is in a state no guest can be placed on while
it is incomplete, and a plain re-run converges.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from kvmtune import facts as host_facts
from kvmtune.openstack.connection import KILL_AFTER_CALL_ENV
from kvmtune.tuning import traits
from tests.functional.conftest import ADMIN
from tests.functional.conftest import find_flavor
from tests.functional.conftest import INTEL_HOST
from tests.functional.conftest import kvmtune
from tests.functional.conftest import kvmtune_process
from tests.functional.conftest import main_job_objects_kept
from tests.functional.conftest import provider_traits
from tests.functional.conftest import put_provider_traits
from tests.functional.conftest import Result
from tests.functional.faultproxy import FaultProxy
from tests.functional.test_flavors import expected_specs
# module fixtures of the Rally sweep: the libvirt cloud, the bench image
# and flavor (made when missing, removed after)
from tests.functional.test_rally_sweep import bench_flavor_and_image  # noqa: F401,E501
from tests.functional.test_rally_sweep import conn  # noqa: F401
from tests.functional.test_rally_sweep import FLAVOR as SWEEP_FLAVOR
from tests.functional.test_rally_sweep import libvirt_cloud  # noqa: F401
from tests.functional.test_rally_sweep import net_image  # noqa: F401

# The spec that keeps a flavor unplaceable while kvmtune changes it; spelt
# out here so that the test also runs against code that lacks it.
INCOMPLETE = 'trait:CUSTOM_KVMTUNE_INCOMPLETE'
_HOOK_LINE = re.compile(r'SIGKILL after request (\d+) \((\S+) ([^)]*)\)')
MAX_CALLS = 40


class KillPoints:
    """Runs argv once per N, SIGKILLed after its N-th request."""

    def __init__(self, *argv):
        self.argv = argv
        self.points = []     # (n, 'METHOD /path', state)

    def run(self, after_kill):
        """after_kill(request) checks and resets the cloud; returns the
        state it saw (a word for the table). Returns the finished run."""
        for n in range(1, MAX_CALLS):
            result = kvmtune_process(*self.argv,
                                     env={KILL_AFTER_CALL_ENV: str(n)})
            if result.rc == 0:
                assert n > 1, result.out
                return result
            assert result.rc == -signal.SIGKILL, (n, result.rc, result.err)
            found = _HOOK_LINE.search(result.err)
            assert found and int(found[1]) == n, result.err
            request = f'{found[2]} {found[3]}'
            self.points.append((n, request, after_kill(request)))
        raise AssertionError(f'{self.argv} still not done after '
                             f'{MAX_CALLS} requests')

    def table(self, command):
        return '\n'.join(f'  SIGKILL after request {n} ({request}) | '
                         f'{command} | {state}'
                         for n, request, state in self.points)


def specs_of(admin, name):
    flavor = find_flavor(admin, name)
    if flavor is None:
        return None, None
    return flavor, admin.compute.fetch_flavor_extra_specs(
        flavor.id).extra_specs


def reset_specs(admin, flavor_id, specs):
    current = admin.compute.fetch_flavor_extra_specs(flavor_id).extra_specs
    for key in current:
        admin.compute.delete_flavor_extra_specs_property(flavor_id, key)
    if specs:
        admin.compute.create_flavor_extra_specs(flavor_id, specs)


def apply_argv(profile, *extra):
    return ('flavor', 'apply', '--os-cloud', ADMIN, '--profile', profile,
            '--root', INTEL_HOST, *extra)


def assert_not_placeable(admin, servers, image, flavor, unique):
    server = servers.boot(unique + '-blocked', flavor.id, image.id)
    assert server.status == 'ERROR', server.status
    assert 'No valid host' in server.fault['message'], server.fault
    return server


def test_flavor_apply_killed_after_each_call_never_leaves_a_placeable_half(
        admin, base_flavor, unique, flavor_cleanup):
    """Creating is POST /flavors, then one POST of all specs (one Nova
    transaction). Nova leaves one window (design 9.8): a flavor killed
    right after its birth is plain; kvmtune must name it incomplete."""
    profile = 'pinned-hugepages-ept'
    wanted, _ = expected_specs(profile)
    flavor_cleanup.append(unique)
    argv = apply_argv(profile, '--from', base_flavor.name, '--name', unique)

    def after_kill(request):
        flavor, specs = specs_of(admin, unique)
        if flavor is None:
            return 'no flavor'
        if specs == wanted:
            state = 'complete'
        else:
            # Any other state could place a half-tuned guest.
            assert specs == {} and request == 'POST /v2.1/flavors', (
                request, specs)
            diff = kvmtune_process('flavor', 'diff', '--os-cloud', ADMIN,
                                   '--profile', profile, '--name', unique,
                                   '--root', INTEL_HOST)
            assert diff.rc == 1, diff.err
            assert f'flavor {unique}: incomplete: kvmtune made it' in \
                diff.out
            state = ('plain: the one request Nova leaves open; flavor diff: '
                     'incomplete')
        again = kvmtune_process(*argv)
        assert again.rc == 0, again.err
        assert specs_of(admin, unique)[1] == wanted
        admin.compute.delete_flavor(flavor.id)
        return state + '; re-run: complete'

    kills = KillPoints(*argv)
    done = kills.run(after_kill)
    assert f'flavor {unique}: created' in done.out
    assert specs_of(admin, unique)[1] == wanted
    print('\n' + kills.table('flavor apply (create)'))


def test_a_private_flavor_killed_after_each_call_is_never_seen_half_made(
        admin, base_flavor, unique, flavor_cleanup):
    """flavor apply --project P closes the window of a public flavor
    (design 9.8): the flavor is born private and shared with P only once
    its specs are complete, so the project's member never sees it plain,
    whatever call the run is killed after; running again converges."""
    import openstack

    profile = 'pinned-hugepages-ept'
    wanted, _ = expected_specs(profile)
    project = admin.identity.find_project('kvmtune-member',
                                          ignore_missing=False)
    member = openstack.connect(cloud='kvmtune-member')
    flavor_cleanup.append(unique)
    argv = apply_argv(profile, '--from', base_flavor.name, '--name', unique,
                      '--project', project.id)

    def seen_by_member():
        return [f for f in member.compute.flavors() if f.name == unique]

    def after_kill(request):
        flavor, specs = specs_of(admin, unique)
        if flavor is None:
            return 'no flavor'
        assert flavor.is_public is False
        seen = seen_by_member()
        # the member sees it only complete: no guest of theirs lands on a
        # half-made flavor
        assert not seen or specs == wanted, (request, specs)
        state = ('shared, complete' if seen else
                 f'private, {"complete" if specs == wanted else "no specs"},'
                 ' not shared: the member cannot see it')
        again = kvmtune_process(*argv)
        assert again.rc == 0, again.err
        assert specs_of(admin, unique)[1] == wanted and seen_by_member()
        admin.compute.delete_flavor(flavor.id)
        return state + '; re-run: complete and shared'

    try:
        kills = KillPoints(*argv)
        done = kills.run(after_kill)
    finally:
        member.close()
    assert f'+ access: project {project.id}' in done.out
    assert specs_of(admin, unique)[1] == wanted
    states = [state for _, _, state in kills.points]
    assert any('no specs' in state for state in states), states
    print('\n' + kills.table('flavor apply --project (create)'))


def test_flavor_update_killed_after_each_call_never_leaves_a_placeable_half(
        admin, unique, flavor_cleanup, servers, image):
    """nested-host replaces trait:HW_CPU_X86_VMX by its own trait: a POST
    and a DELETE; between them the flavor is neither old nor new."""
    flavor_cleanup.append(unique)
    flavor = admin.compute.create_flavor(name=unique, ram=128, vcpus=1,
                                         disk=1)
    before = {'trait:HW_CPU_X86_VMX': 'required',
              'hw:watchdog_action': 'reset'}
    admin.compute.create_flavor_extra_specs(flavor.id, before)
    wanted, _ = expected_specs('nested-host')
    after = dict(wanted, **{'hw:watchdog_action': 'reset'})
    argv = apply_argv('nested-host', '--name', unique)
    booted = []

    def after_kill(request):
        specs = specs_of(admin, unique)[1]
        if specs == before:
            state = 'unchanged'
        elif specs == after:
            state = 'complete'
        else:
            assert specs.get(INCOMPLETE) == 'required', (request, specs)
            state = f'marked incomplete ({len(specs) - 1} specs)'
            if not booted:
                server = assert_not_placeable(admin, servers, image, flavor,
                                              unique)
                booted.append(server)
                state += f', boot: ERROR {server.fault["message"]}'
        again = kvmtune_process(*argv)
        assert again.rc == 0, again.err
        assert specs_of(admin, unique)[1] == after
        reset_specs(admin, flavor.id, before)
        return state + '; re-run: complete'

    kills = KillPoints(*argv)
    kills.run(after_kill)
    assert specs_of(admin, unique)[1] == after
    print('\n' + kills.table('flavor apply (update)'))
    assert booted, 'no kill point left a marked flavor to boot on'


def test_flavor_remove_killed_after_each_call_never_leaves_a_placeable_half(
        admin, unique, flavor_cleanup):
    profile = 'cpu-pinning'
    flavor_cleanup.append(unique)
    flavor = admin.compute.create_flavor(name=unique, ram=128, vcpus=1,
                                         disk=1)
    wanted, _ = expected_specs(profile)
    assert len(wanted) > 1, wanted
    before = dict(wanted, **{'hw:watchdog_action': 'reset'})
    after = {'hw:watchdog_action': 'reset'}
    admin.compute.create_flavor_extra_specs(flavor.id, before)
    argv = ('flavor', 'remove', '--os-cloud', ADMIN, '--profile', profile,
            '--name', unique, '--root', INTEL_HOST)

    def after_kill(request):
        specs = specs_of(admin, unique)[1]
        if specs == before:
            state = 'unchanged'
        elif specs == after:
            state = 'complete'
        else:
            assert specs.get(INCOMPLETE) == 'required', (request, specs)
            state = f'marked incomplete ({len(specs) - 1} specs)'
        again = kvmtune_process(*argv)
        assert again.rc == 0, again.err
        assert specs_of(admin, unique)[1] == after
        reset_specs(admin, flavor.id, before)
        return state + '; re-run: complete'

    kills = KillPoints(*argv)
    kills.run(after_kill)
    assert specs_of(admin, unique)[1] == after
    print('\n' + kills.table('flavor remove'))


@pytest.fixture
def node_without_kvmtune_traits(admin):
    """(hypervisor hostname, provider uuid) of the first compute node by
    name, without kvmtune's traits; its traits come back afterwards."""
    nodes = sorted((h.name, h.id) for h in admin.compute.hypervisors())
    assert nodes, 'the test cloud has no compute node'
    name, uuid = nodes[0]
    before, _ = provider_traits(admin, uuid)
    put_provider_traits(admin, uuid, before - traits.KVMTUNE_TRAITS)
    yield name, uuid
    put_provider_traits(admin, uuid, before)


def test_host_tag_killed_after_each_call_leaves_old_or_new_traits(
        admin, node_without_kvmtune_traits):
    name, uuid = node_without_kvmtune_traits
    before, _ = provider_traits(admin, uuid)
    wanted = traits.from_facts(host_facts.resolve(root=str(INTEL_HOST)))
    after = before | wanted
    argv = ('host', 'tag', '--os-cloud', ADMIN, '--root', INTEL_HOST,
            '--hypervisor', name)

    def forget_unused_trait_names():
        # So that every run creates them again and is killed there too;
        # Placement refuses (409) to delete a trait a provider still has.
        for name in sorted(wanted):
            admin.placement.delete(f'/traits/{name}', microversion='1.6')

    def after_kill(request):
        current, _ = provider_traits(admin, uuid)
        assert current in (before, after), (request, current ^ before)
        state = 'unchanged' if current == before else 'complete'
        again = kvmtune_process(*argv)
        assert again.rc == 0, again.err
        assert provider_traits(admin, uuid)[0] == after
        put_provider_traits(admin, uuid, before)
        forget_unused_trait_names()
        return state + '; re-run: complete'

    forget_unused_trait_names()
    kills = KillPoints(*argv)
    kills.run(after_kill)
    assert provider_traits(admin, uuid)[0] == after
    assert any(request.startswith('PUT ') and '/traits/CUSTOM_' in request
               for _, request, _ in kills.points), kills.points
    print('\n' + kills.table('host tag'))


# -- a flaky API: the proxy --------------------------------------------------

FAULTY = 'kvmtune-ft-faulty'
# The client's timeout in the proxied cloud; a delay past it is a timeout.
API_TIMEOUT = 5
_RETRY_LINE = re.compile(r'^kvmtune: cloud ' + FAULTY + r': (GET|HEAD) \S+: '
                         r'(HTTP \d+|timed out|connection failed); retry '
                         r'(\d) of 3 in [\d.]+ s$')


def _proxied_cloud(admin, tmp_path, monkeypatch, stack, services):
    """clouds.yaml with the test cloud's clouds and FAULTY: kvmtune-admin
    with each of ``services`` ('compute', 'image', 'placement') behind a
    FaultProxy of its own; returns {service: proxy}."""
    import os

    with open(os.environ['OS_CLIENT_CONFIG_FILE']) as f:
        clouds_yaml = yaml.safe_load(f)
    config = admin.config.config
    cloud = {'auth': dict(config['auth']),
             'region_name': config.get('region_name'),
             'identity_api_version': '3',
             'api_timeout': API_TIMEOUT}
    proxies = {}
    for service in services:
        # the catalog's URL, as a client starts from: Glance's is its root
        # (its discovered /v2/ answers discovery with 401)
        endpoint = admin.config.get_endpoint_from_catalog(service)
        proxy = stack.enter_context(FaultProxy(endpoint))
        cloud[f'{service}_endpoint_override'] = proxy.url(endpoint)
        proxies[service] = proxy
    clouds = tmp_path / 'clouds.yaml'
    clouds_yaml['clouds'][FAULTY] = cloud
    clouds.write_text(yaml.safe_dump(clouds_yaml))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(clouds))
    return proxies


@pytest.fixture
def faulty(admin, tmp_path, monkeypatch):
    """A FaultProxy in front of Nova, and a clouds.yaml with the test
    cloud's clouds and FAULTY: kvmtune-admin with the compute endpoint
    behind the proxy."""
    with contextlib.ExitStack() as stack:
        yield _proxied_cloud(admin, tmp_path, monkeypatch, stack,
                             ['compute'])['compute']


@pytest.fixture
def faulty_placement(admin, tmp_path, monkeypatch):
    """The same with Placement behind the proxy (Nova direct)."""
    with contextlib.ExitStack() as stack:
        yield _proxied_cloud(admin, tmp_path, monkeypatch, stack,
                             ['placement'])['placement']


def retry_lines(err):
    lines = [line for line in err.splitlines() if _RETRY_LINE.match(line)]
    return lines


def test_reads_are_retried_with_a_line_each(faulty, admin, base_flavor,
                                            unique, flavor_cleanup):
    flavor_cleanup.append(unique)
    faulty.fail_next(2, status=503, method='GET', path_part='/flavors')
    result = kvmtune('flavor', 'apply', '--os-cloud', FAULTY, '--profile',
                     'hugepages', '--root', INTEL_HOST, '--from',
                     base_flavor.name, '--name', unique)
    assert result.rc == 0, result.err
    lines = retry_lines(result.err)
    assert len(lines) == 2 and result.err.count('\n') == 2, result.err
    assert ': HTTP 503; retry 1 of 3 in 0.5 s' in lines[0]
    assert ': HTTP 503; retry 2 of 3 in 1.0 s' in lines[1]
    assert specs_of(admin, unique)[1] == {'hw:mem_page_size': 'large'}
    assert len(faulty.faulted('status')) == 2 and faulty.faults_left() == 0
    print(f'\n503 x2 on GET: {lines}')


def test_a_read_that_keeps_failing_is_one_line_naming_endpoint_and_id(
        faulty, base_flavor):
    faulty.fail_next(10, status=503, method='GET', path_part='/flavors')
    argv = ('flavor', 'diff', '--os-cloud', FAULTY, '--profile',
            'hugepages', '--name', base_flavor.name, '--root', INTEL_HOST)
    result = kvmtune(*argv)
    assert result.rc == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 4 and len(retry_lines(result.err)) == 3, lines
    error = lines[-1]
    assert error.startswith(f'kvmtune: error: cloud {FAULTY}: GET '), error
    assert 'HTTP 503' in error and re.search(r'\(request req-[0-9a-f-]{36}\)',
                                             error), error
    assert f'gave up after 3 retries of {faulty.root}/' in error, error
    assert [s[2] for s in faulty.seen if '/flavors' in s[1]] == \
        ['status 503'] * 4
    print(f'\ngive-up line: {error}')
    faulty.clear()
    again = kvmtune(*argv)
    assert again.rc == 1 and again.err == '', again.err


def test_a_timed_out_read_is_retried(faulty, base_flavor):
    faulty.delay_next(1, API_TIMEOUT * 3, method='GET', path_part='/flavors')
    result = kvmtune('flavor', 'diff', '--os-cloud', FAULTY, '--profile',
                     'hugepages', '--name', base_flavor.name, '--root',
                     INTEL_HOST)
    assert result.rc == 1, result.err
    lines = retry_lines(result.err)
    assert len(lines) == 1 and ': timed out; retry 1 of 3' in lines[0], \
        result.err


@pytest.mark.parametrize('fault', ['reset', 'status'])
def test_a_failed_write_is_sent_once_and_the_rerun_converges(
        fault, faulty, admin, base_flavor, unique, flavor_cleanup):
    flavor_cleanup.append(unique)
    if fault == 'reset':
        faulty.reset_next(1, method='POST', path_part='/os-extra_specs')
    else:
        faulty.fail_next(1, status=503, method='POST',
                         path_part='/os-extra_specs')
    argv = ('flavor', 'apply', '--os-cloud', FAULTY, '--profile',
            'hugepages', '--root', INTEL_HOST, '--from', base_flavor.name,
            '--name', unique)
    result = kvmtune(*argv)
    assert result.rc == 2
    assert result.err.count('\n') == 1 and retry_lines(result.err) == [], \
        result.err
    assert f'flavor {unique} was not created' in result.err
    assert (f'a write goes once, not retried (POST {faulty.root}/v2.1/'
            'flavors/') in result.err, result.err
    posts = [s for s in faulty.seen
             if s[0] == 'POST' and s[1].endswith('/os-extra_specs')]
    assert len(posts) == 1 and posts[0][2] is not None, faulty.seen
    assert find_flavor(admin, unique) is None
    print(f'\n{fault} on POST os-extra_specs: {result.err.strip()}')
    again = kvmtune(*argv)
    assert again.rc == 0, again.err
    assert specs_of(admin, unique)[1] == {'hw:mem_page_size': 'large'}


def test_host_tag_rides_out_503s_then_converges(
        faulty, admin, node_without_kvmtune_traits):
    name, uuid = node_without_kvmtune_traits
    before, _ = provider_traits(admin, uuid)
    wanted = traits.from_facts(host_facts.resolve(root=str(INTEL_HOST)))
    faulty.fail_next(2, status=502, method='GET',
                     path_part='/os-hypervisors')
    argv = ('host', 'tag', '--os-cloud', FAULTY, '--root', INTEL_HOST,
            '--hypervisor', name)
    result = kvmtune(*argv)
    assert result.rc == 0, result.err
    assert len(retry_lines(result.err)) == 2, result.err
    assert provider_traits(admin, uuid)[0] == before | wanted
    faulty.fail_next(10, status=503, method='GET',
                     path_part='/os-hypervisors')
    put_provider_traits(admin, uuid, before)
    failed = kvmtune(*argv)
    assert failed.rc == 2 and 'gave up after 3 retries' in failed.err
    assert provider_traits(admin, uuid)[0] == before
    faulty.clear()
    assert kvmtune(*argv).rc == 0
    assert provider_traits(admin, uuid)[0] == before | wanted


def _json_out(result):
    # 3: verify checked nothing (a cloud with no flavor of the profile yet:
    # its one check is UNKNOWN), the same through the proxy as without
    assert result.rc in (0, 1, 3), result.err
    return json.loads(result.out)


def test_verify_and_capacity_read_through_503s_as_without(faulty, admin,
                                                          base_flavor,
                                                          compute_node):
    capacity = ('capacity', '--flavor', base_flavor.name, '-f', 'json')
    plain = _json_out(kvmtune(capacity[0], '--os-cloud', ADMIN,
                              *capacity[1:]))
    faulty.fail_next(2, status=503, method='GET', path_part='/flavors')
    through = kvmtune(capacity[0], '--os-cloud', FAULTY, *capacity[1:])
    assert len(retry_lines(through.err)) == 2, through.err
    assert _json_out(through)['fits'] == plain['fits']

    # --host: the cloud's node the tree stands for (its verdict takes no
    # name from this machine)
    verify = ('verify', '--profile', 'hugepages', '--root', INTEL_HOST,
              '--host', compute_node[0], '--layer', 'cloud', '-f', 'json')
    plain = _json_out(kvmtune(verify[0], '--os-cloud', ADMIN, *verify[1:]))
    faulty.fail_next(2, status=503, method='GET', path_part='/flavors')
    through = kvmtune(verify[0], '--os-cloud', FAULTY, *verify[1:])
    assert len(retry_lines(through.err)) == 2, through.err
    assert _json_out(through)['checks'] == plain['checks']


def test_capacity_and_verify_ride_out_placement_503s_and_name_a_give_up(
        faulty_placement, admin, base_flavor, compute_node):
    """Placement behind the proxy: capacity reads each node's inventories,
    usages and traits there, verify --layer cloud its provider. A few 503s
    are retried with a line each and change nothing; a Placement that
    keeps failing is named (endpoint, request id) on the node's line, not
    a traceback; once it answers again the same run gives the same
    answer."""
    proxy = faulty_placement
    down = _rides_out_placement(
        proxy, ('capacity', '--flavor', base_flavor.name, '-f', 'json'),
        lambda doc: doc)
    assert re.search(r'\(request req-[0-9a-f-]{36}\)', down.out + down.err)
    _rides_out_placement(
        proxy, ('verify', '--profile', 'hugepages', '--root', INTEL_HOST,
                '--host', compute_node[0], '--layer', 'cloud', '-f', 'json'),
        lambda doc: doc['checks'])


def _rides_out_placement(proxy, argv, part):
    """``kvmtune argv`` (with --os-cloud) through the Placement proxy:
    two 503s are retried with a line each and give the same ``part`` of
    its JSON as without the proxy; a Placement that keeps failing is
    named (the proxy's endpoint), never a traceback; once it answers
    again the same part comes back. The give-up's result."""
    command, rest = argv[0], argv[1:]
    plain = part(_json_out(kvmtune(command, '--os-cloud', ADMIN, *rest)))
    proxy.fail_next(2, status=503, method='GET',
                    path_part='/resource_providers')
    through = kvmtune(command, '--os-cloud', FAULTY, *rest)
    assert len(retry_lines(through.err)) == 2, through.err
    assert part(_json_out(through)) == plain
    assert proxy.faults_left() == 0

    proxy.fail_next(1000, status=503, method='GET',
                    path_part='/resource_providers')
    down = kvmtune(command, '--os-cloud', FAULTY, *rest)
    print(f'\n{command}, Placement down: rc {down.rc}\n{down.err}'
          f'{down.out[:600]}')
    assert 'Traceback' not in down.err
    assert f'gave up after 3 retries of {proxy.root}/' in \
        down.out + down.err
    proxy.clear()
    assert part(_json_out(kvmtune(command, '--os-cloud', FAULTY,
                                  *rest))) == plain
    return down


# -- the main job's setup through the proxy ---------------------------------
#
# `kvmtune main-job --os-cloud FAULTY --setup-only`, its own process, with
# Nova, Glance and Placement each behind a FaultProxy: openstacksdk's own
# calls (the compute node list, the image upload, the base flavor) and
# kvmtune's (the tuned flavors, host tag) go through them.

JOB_TIMEOUT = 600
_JOB_ERROR = re.compile(r'^main-job: error: (.*)$', re.M)


@pytest.fixture
def job_objects(admin, restore_traits):
    """The image and the base flavor the main job makes, gone before it
    runs (so that it uploads the image and POSTs the flavor through the
    proxies); afterwards what the cloud did not have before is removed
    (what it had, the job has made again)."""
    from kvmtune import image as bench_image
    from kvmtune import mainjob

    base = mainjob.BASE_FLAVOR['name']
    names = [base] + [f'{base}.{p}' for p in (
        mainjob.BASE_PROFILE, 'pinned-hugepages', 'pinned-hugepages-ept')]
    with main_job_objects_kept(admin, names) as had:
        for image in admin.image.images(name=bench_image.GLANCE_NAME):
            admin.image.delete_image(image)
        if base in had:
            admin.compute.delete_flavor(admin.compute.find_flavor(base))
        yield names


def main_job_setup(state_dir):
    """`kvmtune main-job --os-cloud FAULTY --setup-only` as its own
    process: (Result, its log's text)."""
    env = dict(os.environ)
    env.setdefault('KVMTUNE_IMAGE_CACHE', '/var/lib/kvmtune/build-cache')
    env.pop('OS_CLOUD', None)
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'main-job', '--os-cloud',
         FAULTY, '--max-vms', '1', '--state-dir', str(state_dir),
         '--setup-only'], capture_output=True, text=True,
        timeout=JOB_TIMEOUT, env=env)
    log = state_dir / 'main-job.log'
    return (Result(done.returncode, done.stdout, done.stderr),
            log.read_text() if log.exists() else '')


def _writes(proxies):
    return [(m, p, fault) for proxy in proxies for m, p, fault in proxy.seen
            if m not in ('GET', 'HEAD')]


def test_main_job_setup_rides_out_read_faults_stops_on_a_write_reruns(
        admin, tmp_path, monkeypatch, compute_node, job_objects):
    """Reads (the compute node list, the image list) meet 503s and a
    reset: each is retried after 0.5 s, then 1 s, with a line in the
    job's log. The base flavor's POST /flavors meets a reset: it is
    sent once, and the job stops on one line naming the request, the
    endpoint and the request id it sent. A plain re-run makes the rest,
    and a third run writes nothing: converged."""
    from kvmtune import image as bench_image
    from kvmtune import mainjob

    with contextlib.ExitStack() as stack:
        proxies = _proxied_cloud(admin, tmp_path, monkeypatch, stack,
                                 ['compute', 'image', 'placement'])
        nova, glance = proxies['compute'], proxies['image']
        nova.fail_next(2, status=503, method='GET',
                       path_part='/os-hypervisors')
        glance.reset_next(1, method='GET', path_part='/images')
        glance.fail_next(1, status=503, method='GET', path_part='/images')
        nova.reset_next(1, method='POST', path_part='/flavors')
        started = time.monotonic()
        first, log = main_job_setup(tmp_path / 'state1')
        seconds = [time.monotonic() - started]
        print(f'\nfirst run: exit {first.rc}\n{first.out}{first.err}')
        assert first.rc == 2, first.out + first.err
        assert 'Traceback' not in first.out + first.err + log
        assert 'main-job: image and base flavor: FAILED' in first.out
        errors = _JOB_ERROR.findall(first.out)
        assert len(errors) == 1, first.out
        error = errors[0]
        assert error.startswith(f'cloud {FAULTY}: POST /v2.1/flavors: '), \
            error
        assert re.search(r'\(request req-[0-9a-f-]{36}\)', error), error
        assert f'(POST {nova.root}/' in error, error
        assert 'a write goes once, not retried' in error, error
        assert 'run the same command again' in error, error
        # the reads: two 503s on the compute node list, a reset and a
        # 503 on the image list, each retried with a line in the log
        retried = [line for line in log.splitlines()
                   if re.search(r'kvmtune: cloud ' + FAULTY + r': GET \S+: '
                                r'(HTTP 503|connection failed); retry \d '
                                r'of 3 in (0\.5|1\.0) s$', line)]
        assert len(retried) == 4, log
        assert sum('connection failed' in line for line in retried) == 1
        assert nova.faults_left() == 0 and glance.faults_left() == 0
        # the write went once and never reached Nova
        posts = [w for w in _writes([nova]) if w[:2] == ('POST',
                                                         '/v2.1/flavors')]
        assert posts == [('POST', '/v2.1/flavors', 'reset')], nova.seen
        base = mainjob.BASE_FLAVOR['name']
        assert admin.compute.find_flavor(base) is None
        images = list(admin.image.images(name=bench_image.GLANCE_NAME))
        assert [i.status for i in images] == ['active'], images

        started = time.monotonic()
        again, log = main_job_setup(tmp_path / 'state2')
        seconds.append(time.monotonic() - started)
        print(f'\nre-run: exit {again.rc}\n{again.out}{again.err}')
        assert again.rc == 0, again.out + again.err
        assert 'set up for the sweep' in again.out
        assert f'image {bench_image.GLANCE_NAME} unchanged' in again.out
        assert f'flavor {base} created' in again.out
        for proxy in proxies.values():
            proxy.seen.clear()

        started = time.monotonic()
        third, log = main_job_setup(tmp_path / 'state3')
        seconds.append(time.monotonic() - started)
        assert third.rc == 0, third.out + third.err
        assert f'flavor {base} exists' in third.out
        assert _writes(proxies.values()) == []
    assert len(list(admin.image.images(name=bench_image.GLANCE_NAME))) == 1
    assert [n for n in job_objects if admin.compute.find_flavor(n)]
    print(f'\nmain-job --setup-only through the proxies: '
          f'{", ".join(f"{s:.0f} s" for s in seconds)} (faulted, re-run, '
          f'converged: no writes)')


# -- a sweep whose nova-compute dies, or whose cloud goes down ---------------
#
# A real `rally task start` of the disk scenario (1 guest, as in
# test_rally_sweep.py) on the libvirt cloud. The fault comes when Rally
# says the step's guest is ACTIVE (the scenario's first "guests ready"
# line); the sweep must end within its own timeouts (the task's
# ready_timeout and result_timeout, Rally's delete timeout and HTTP
# timeout, set below), the guest count as invalid, and nothing stay: no
# server, port or volume in the API, no libvirt domain on the host.

# From the create call: ACTIVE came after 4-10 s, and the fault comes then,
# so the guest is never ready and the step waits this out (75 s before:
# 30 s more of waiting per test, proving nothing more).
SWEEP_READY_TIMEOUT = 45
SWEEP_RALLY_CONF = {'DEFAULT': {'openstack_client_http_timeout': 30},
                    'openstack': {'nova_server_delete_timeout': 240,
                                  'nova_server_boot_timeout': 300}}
SWEEP_HANG_BOUND = 900         # hang bound: the sweep's own are far below


@pytest.fixture(scope='module')
def sweeping(request, tmp_path_factory):
    """(Rally with the timeouts above, openstacksdk connection, the
    libvirt TestCloud), with test_rally_sweep's module fixtures."""
    from kvmtune.mainjob import rallycloud
    from kvmtune.mainjob import sweep

    cloud = request.getfixturevalue('libvirt_cloud')
    sdk = request.getfixturevalue('conn')
    request.getfixturevalue('bench_flavor_and_image')
    r = sweep.Rally(str(tmp_path_factory.mktemp('rally')))
    with open(r.conf, 'a') as f:
        for section, options in SWEEP_RALLY_CONF.items():
            f.write(f'[{section}]\n' + ''.join(
                f'{k} = {v}\n' for k, v in options.items()))
    r.use_cloud('kvmtune-faults', rallycloud.rally_spec(sdk.config))
    return r, sdk, cloud


class RallyLines:
    """Rally's output lines as they come (what kvmtune.mainjob.sweep
    hands the job's log, steps.OUT.detail), with events on them."""

    def __init__(self):
        self.lines = []
        self._waits = []
        self._lock = threading.Lock()

    def when(self, pattern):
        event = threading.Event()
        with self._lock:
            self._waits.append((re.compile(pattern), event))
            if any(re.search(pattern, line) for line in self.lines):
                event.set()
        return event

    def line(self, line):
        with self._lock:
            self.lines.append(line)
            for pattern, event in self._waits:
                if pattern.search(line):
                    event.set()


@pytest.fixture
def rally_lines(monkeypatch):
    from kvmtune.mainjob import steps

    lines = RallyLines()
    log = steps.OUT.detail

    def detail(text):
        lines.line(text)
        log(text)

    monkeypatch.setattr(steps.OUT, 'detail', detail)
    return lines


def start_sweep(rally, tmp_path, task='disk-scaling',
                workload='fio-randread-4k', image=None):
    """The sweep of ``task`` at 1 VM (the network one: 1 client and its
    server guest) in a thread; returns (thread, outcome)."""
    from kvmtune import image as bench_image
    from kvmtune.mainjob import sweep
    from kvmtune.mainjob import testcloud as mainjob_testcloud

    args = dict(sweep.task_args(
        1, workload, [SWEEP_FLAVOR], image or bench_image.GLANCE_NAME,
        emulated=mainjob_testcloud.testcloud_emulated()),
        runtime=5, ready_timeout=SWEEP_READY_TIMEOUT, result_timeout=30)
    outcome = {}

    def run():
        started = time.monotonic()
        try:
            outcome['uuid'], outcome['sla_ok'] = rally.sweep(
                sweep.task_path(task), args,
                str(tmp_path / 'results.json'), str(tmp_path / 'rally.html'))
        except BaseException as exc:    # the test names it
            outcome['error'] = exc
        outcome['seconds'] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def sweep_rows(tmp_path):
    from kvmtune.results import rally as rally_results

    with open(tmp_path / 'results.json') as f:
        doc = json.load(f)
    (_, _, data, sla), = rally_results.workloads(doc)
    rows = [r.flat() for iteration in data
            for r in rally_results.rows_of(iteration['output']) or []]
    return rows, sla


def compute_up(sdk):
    """Until Nova's API counts every nova-compute up again (the scheduler
    places nothing on a compute it counts down)."""
    wait_for(lambda: all(s.state == 'up' for s in
                         sdk.compute.services(binary='nova-compute')),
             120, 'nova-compute up in the API')


def restart_compute(cloud, sdk):
    cloud.restart_compute()
    compute_up(sdk)


def nothing_left(sdk, uuids):
    """No server, port or volume of the cloud's projects, and none of the
    sweep's guests (``uuids``) left as a libvirt domain."""
    from kvmtune.testcloud import system

    assert list(sdk.compute.servers(all_projects=True)) == []
    ports = [p for p in sdk.network.ports()
             if (p.device_owner or '').startswith('compute:')]
    assert ports == []
    if sdk.has_service('block-storage'):
        assert list(sdk.block_storage.volumes(all_projects=True)) == []

    def domains():
        listed = system.virsh('list', '--all', '--uuid').stdout.split()
        return set(listed) & set(uuids)
    # A server Nova deleted while its compute was down leaves the domain
    # to that compute's reaper ([DEFAULT]
    # running_deleted_instance_poll_interval in the test cloud).
    wait_for(lambda: not domains(), 300, 'the guests\' domains to go')


def wait_for(predicate, timeout, what):
    from kvmtune.testcloud import procs

    procs.wait_until(predicate, timeout, what, interval=1)


def kill_compute_mid_step(sweeping, lines, tmp_path, guests=1, **sweep):
    """The sweep (start_sweep(**sweep)) with nova-compute SIGKILLed once
    the step's ``guests`` are ACTIVE (the scenario's first "guests ready"
    line) and dead until the sweep has ended, then started again. Checks
    it ended within its own timeouts, its one client row is a no-result
    the SLA names, never a figure; returns (rows, SLA detail, outcome,
    seconds into the sweep of the kill)."""
    from kvmtune.testcloud import api
    from kvmtune.testcloud import procs

    rally, sdk, cloud = sweeping
    active = lines.when(rf'kvmtune: guests ready \d+/{guests}')
    started = time.monotonic()
    thread, outcome = start_sweep(rally, tmp_path, **sweep)
    try:
        assert active.wait(SWEEP_READY_TIMEOUT + 60), ''.join(lines.lines)
        compute = procs.load_state(api.layout())['services']['nova-compute']
        os.kill(compute, signal.SIGKILL)
        killed_at = time.monotonic() - started
        thread.join(SWEEP_HANG_BOUND)
        assert not thread.is_alive(), 'the sweep did not end'
    finally:
        restart_compute(cloud, sdk)
    assert 'error' not in outcome, outcome
    rows, sla = sweep_rows(tmp_path)
    assert [r['status'] for r in rows] == ['no-result'], rows
    # lost, so no figure of it can reach an average
    assert all(rows[0].get(k) is None for k in ('iops', 'gbit_s', 'tps'))
    assert not outcome['sla_ok']
    detail = next(s['detail'] for s in sla
                  if s['criterion'] == 'kvmtune_scaling')
    assert rows[0]['instance'] in detail and 'no valid result' in detail
    return rows, detail, outcome, killed_at


@pytest.mark.compute('libvirt')
def test_a_sweep_whose_nova_compute_is_killed_mid_step(sweeping, rally_lines,
                                                       tmp_path):
    """nova-compute is SIGKILLed once the step's guest is ACTIVE and stays
    dead until the sweep has ended. Console reads then fail (Nova's RPC
    to the compute times out: HTTP 500) until the step's deadline; the
    delete Nova first ignores (the server is 'deleting' while the
    service still counts as up) is sent again until Nova deletes it
    locally."""
    rows, detail, outcome, killed_at = kill_compute_mid_step(
        sweeping, rally_lines, tmp_path)
    nothing_left(sweeping[1], {rows[0]['instance']})
    print(f'\nnova-compute SIGKILLed {killed_at:.0f} s into the sweep; '
          f'the sweep ended after {outcome["seconds"]:.0f} s; guest row: '
          f'{rows[0]["status"]}: {rows[0]["reason"]}; SLA: {detail}')


@pytest.mark.compute('libvirt')
@pytest.mark.extended('the disk sweep above kills nova-compute mid-step '
                      'the same way')
def test_a_network_sweep_whose_nova_compute_is_killed_mid_step(
        sweeping, rally_lines, net_image, tmp_path):  # noqa: F811
    """The network sweep (one server guest, one client, on the tenant
    network Rally's network context makes), nova-compute SIGKILLed once
    both are ACTIVE, as the disk sweep's above: it ends within its own
    timeouts, the client counts invalid, and no server, port or volume
    is left, nor the tenant network."""
    from kvmtune.mainjob import testcloud as mainjob_testcloud

    sdk = sweeping[1]
    label = (' (emulated: QEMU TCG guests)'
             if mainjob_testcloud.testcloud_emulated() else '')
    networks = sorted(n.id for n in sdk.network.networks())
    rows, detail, outcome, killed_at = kill_compute_mid_step(
        sweeping, rally_lines, tmp_path, guests=2, task='network-scaling',
        workload='iperf3-tcp-stream', image=net_image)
    guests_seen = set(re.findall(r'console of ([0-9a-f-]{36}) unreadable',
                                 ''.join(rally_lines.lines)))
    assert rows[0]['instance'] in guests_seen, guests_seen
    nothing_left(sdk, guests_seen)
    assert sorted(n.id for n in sdk.network.networks()) == networks
    print(f'\nnetwork sweep{label}, nova-compute SIGKILLed '
          f'{killed_at:.0f} s into it; it ended after '
          f'{outcome["seconds"]:.0f} s; client row: {rows[0]["status"]}: '
          f'{rows[0]["reason"]}; SLA: {detail}')


@pytest.mark.compute('libvirt')
def test_a_sweep_whose_whole_cloud_stops_mid_step(sweeping, rally_lines,
                                                  tmp_path):
    """Every process of the cloud (its services, their workers, libvirtd
    when the cloud started it) is stopped (SIGSTOP: no answer, connections
    hang) once the step's guest is ACTIVE, and let go on once the sweep,
    having given the guest up, is trying to delete it into the dead cloud.
    Rally's HTTP timeout ends each hung call; the delete goes through
    once the cloud is back."""
    from kvmtune.testcloud import api
    from kvmtune.testcloud import procs

    rally, sdk, cloud = sweeping
    lines = rally_lines
    active = lines.when(r'kvmtune: guests ready \d+/1')
    deleting = lines.when(r'kvmtune: deleting [0-9a-f-]{36}: ')
    started = time.monotonic()
    thread, outcome = start_sweep(rally, tmp_path)
    stopped = []
    try:
        assert active.wait(SWEEP_READY_TIMEOUT + 60), ''.join(lines.lines)
        stopped = procs.owned_pids(api.layout())
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        stopped_at = time.monotonic() - started
        assert deleting.wait(SWEEP_READY_TIMEOUT + 300), \
            ''.join(lines.lines[-30:])
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    back_at = time.monotonic() - started
    thread.join(SWEEP_HANG_BOUND)
    assert not thread.is_alive(), 'the sweep did not end'
    compute_up(sdk)
    assert 'error' not in outcome, outcome
    rows, sla = sweep_rows(tmp_path)
    assert [r['status'] for r in rows] == ['no-result'], rows
    assert not outcome['sla_ok']
    nothing_left(sdk, {rows[0]['instance']})
    print(f'\n{len(stopped)} cloud processes stopped {stopped_at:.0f} s '
          f'into the sweep, back at {back_at:.0f} s; the sweep ended '
          f'after {outcome["seconds"]:.0f} s; guest row: '
          f'{rows[0]["status"]}: {rows[0]["reason"]}')
