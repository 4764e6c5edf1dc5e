"""kvmtune flavor apply/diff/remove against a real Nova (microversion 2.86).

The flavors are planned for the constructed Intel host (2 sockets, SMT,
EPT, 1G pages) so every tuner has something to say; Nova sees the specs
exactly as an operator's run would send them.
"""

import pathlib

import pytest
import yaml

from kvmtune import facts as host_facts
from kvmtune.openstack import planning
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from tests.functional.conftest import ADMIN
from tests.functional.conftest import find_flavor
from tests.functional.conftest import INTEL_HOST
from tests.functional.conftest import kvmtune
from tests.functional.conftest import kvmtune_process

PROFILES = sorted(profiles.available(profiles.search_dirs()))


def expected_specs(profile):
    built = plans.build_plan(
        profiles.load(profile, profiles.search_dirs()),
        host_facts.resolve(root=str(INTEL_HOST)))
    return {k: str(v) for k, v in built.extra_specs.items()}, \
        built.owned_extra_specs


def apply(profile, *extra):
    return kvmtune('flavor', 'apply', '--os-cloud', ADMIN, '--profile',
                   profile, '--root', INTEL_HOST, *extra)


@pytest.mark.parametrize('profile', PROFILES)
def test_profile_flavor_has_exactly_the_profile_specs(
        profile, admin, base_flavor, flavor_cleanup, http_requests):
    name = f'{base_flavor.name}.{profile}'
    flavor_cleanup.append(name)
    wanted, _ = expected_specs(profile)

    first = apply(profile, '--from', base_flavor.name)
    assert first.rc == 0, first.err
    assert f'flavor {name}: created' in first.out
    for key, value in wanted.items():
        assert f'+ {key}={value}' in first.out

    flavor = find_flavor(admin, name)
    assert flavor is not None
    specs = admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs
    assert specs == wanted
    for size in ('ram', 'vcpus', 'disk', 'ephemeral', 'swap',
                 'is_public'):
        assert getattr(flavor, size) == getattr(base_flavor, size), size
    assert flavor.description.startswith('Tuned by kvmtune (profile '
                                         f'{profile}, from ')

    http_requests.clear()
    second = apply(profile, '--from', base_flavor.name)
    assert second.rc == 0, second.err
    assert 'nothing to change' in second.out
    assert http_requests.writes() == []
    assert http_requests.by_method().keys() <= {'GET', 'POST'}
    print(f'\n{profile}: second apply sent {http_requests.by_method()} '
          f'(POSTs: {[p for m, p in http_requests.sent if m == "POST"]}); '
          f'kvmtune said: {second.out.strip().splitlines()[-1]}')


def test_drift_is_shown_read_only_then_repaired_keeping_foreign_keys(
        admin, base_flavor, flavor_cleanup, http_requests):
    profile = 'pinned-hugepages-ept'
    name = f'{base_flavor.name}.{profile}'
    flavor_cleanup.append(name)
    wanted, owned = expected_specs(profile)
    assert apply(profile, '--from', base_flavor.name).rc == 0
    flavor = find_flavor(admin, name)
    # An operator changed an owned key and added one kvmtune does not own.
    admin.compute.update_flavor_extra_specs_property(
        flavor.id, 'hw:cpu_thread_policy', 'isolate')
    admin.compute.update_flavor_extra_specs_property(
        flavor.id, 'quota:cpu_shares', '2048')

    http_requests.clear()
    diff = kvmtune('flavor', 'diff', '--os-cloud', ADMIN, '--profile',
                   profile, '--name', name, '--root', INTEL_HOST)
    assert diff.rc == 1, diff.err
    assert '~ hw:cpu_thread_policy: isolate -> prefer' in diff.out
    assert 'quota:cpu_shares' not in diff.out
    assert http_requests.writes() == []

    http_requests.clear()
    fixed = apply(profile, '--name', name)
    assert fixed.rc == 0, fixed.err
    specs = admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs
    assert specs == dict(wanted, **{'quota:cpu_shares': '2048'})
    # One POST of the changed key, nothing deleted.
    assert [m for m, _ in http_requests.writes()] == ['POST']


def test_stale_owned_key_is_removed_and_nothing_else(
        admin, unique, flavor_cleanup, http_requests):
    """nested-host owns trait:HW_CPU_X86_VMX/SVM (it replaces them with
    its own trait): an old VMX requirement goes, a foreign key stays."""
    flavor_cleanup.append(unique)
    flavor = admin.compute.create_flavor(name=unique, ram=128, vcpus=1,
                                         disk=1)
    admin.compute.create_flavor_extra_specs(flavor.id, {
        'trait:HW_CPU_X86_VMX': 'required', 'hw:watchdog_action': 'reset'})
    wanted, owned = expected_specs('nested-host')
    assert 'trait:HW_CPU_X86_VMX' in owned
    assert 'trait:HW_CPU_X86_VMX' not in wanted

    http_requests.clear()
    result = apply('nested-host', '--name', unique)
    assert result.rc == 0, result.err
    assert '- trait:HW_CPU_X86_VMX (was required)' in result.out
    specs = admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs
    assert specs == dict(wanted, **{'hw:watchdog_action': 'reset'})
    # POST (new keys and the INCOMPLETE marker), DELETE of the stale key,
    # DELETE of the marker (kvmtune.openstack.flavors, design 9.8).
    assert [m for m, _ in http_requests.writes()] == ['POST', 'DELETE',
                                                      'DELETE']
    assert http_requests.writes()[-1][1].endswith(
        '/os-extra_specs/trait:CUSTOM_KVMTUNE_INCOMPLETE')


def test_nova_rejection_is_one_line_and_leaves_no_flavor(
        admin, base_flavor, flavor_cleanup, http_requests, monkeypatch):
    """A value kvmtune's own checks let through (a rule only a newer Nova
    has) but Nova refuses: the flavor made in this run is gone again."""
    name = f'{base_flavor.name}.kvmtune-ft-rejected'
    flavor_cleanup.append(name)
    monkeypatch.setattr(planning, 'plan_for', lambda *a, **k: (
        planning.FlavorPlan('kvmtune-ft-rejected',
                            {'hw:cpu_policy': 'dedicated',
                             'hw:mem_page_size': 'huge'},
                            ('hw:cpu_policy', 'hw:mem_page_size'))))
    flavors_before = {f.name for f in admin.compute.flavors(is_public=None)}

    result = apply('kvmtune-ft-rejected', '--from', base_flavor.name,
                   '--name', name)
    assert result.rc == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f'kvmtune: error: cloud {ADMIN}: POST '
                               '/v2.1/flavors/')
    assert 'HTTP 400' in lines[0] and 'hw:mem_page_size' in lines[0]
    assert f'flavor {name} was not created' in lines[0]
    assert find_flavor(admin, name) is None
    assert {f.name for f in admin.compute.flavors(is_public=None)} == \
        flavors_before
    assert [m for m, _ in http_requests.writes()] == ['POST', 'POST',
                                                      'DELETE']


def test_remove_owned_keys_then_delete_only_kvmtune_flavors(
        admin, base_flavor, flavor_cleanup, http_requests):
    profile = 'cpu-pinning'
    name = f'{base_flavor.name}.{profile}'
    flavor_cleanup.append(name)
    assert apply(profile, '--from', base_flavor.name).rc == 0
    flavor = find_flavor(admin, name)
    admin.compute.update_flavor_extra_specs_property(
        flavor.id, 'hw:watchdog_action', 'reset')

    remove = ('flavor', 'remove', '--os-cloud', ADMIN, '--profile',
              profile, '--name', name, '--root', INTEL_HOST)
    first = kvmtune(*remove)
    assert first.rc == 0, first.err
    specs = admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs
    assert specs == {'hw:watchdog_action': 'reset'}
    http_requests.clear()
    again = kvmtune(*remove)
    assert again.rc == 0 and 'nothing to change' in again.out
    assert http_requests.writes() == []

    refused = kvmtune('flavor', 'remove', '--os-cloud', ADMIN, '--profile',
                      profile, '--name', base_flavor.name, '--delete')
    assert refused.rc == 2
    assert 'not created by kvmtune' in refused.err
    assert find_flavor(admin, base_flavor.name) is not None

    deleted = kvmtune(*remove, '--delete')
    assert deleted.rc == 0, deleted.err
    assert find_flavor(admin, name) is None


def test_existing_flavor_of_another_size_is_named_not_recreated(
        admin, base_flavor, unique, flavor_cleanup):
    flavor_cleanup.append(unique)
    other = admin.compute.create_flavor(name=unique, ram=256, vcpus=1,
                                        disk=1)
    result = apply('hugepages', '--from', base_flavor.name, '--name',
                   unique)
    assert result.rc == 0, result.err
    assert f'ram 256 (base {base_flavor.name}: 128)' in result.out
    flavor = find_flavor(admin, unique)
    assert flavor.id == other.id and flavor.ram == 256
    assert admin.compute.fetch_flavor_extra_specs(
        flavor.id).extra_specs == {'hw:mem_page_size': 'large'}


def test_dry_run_writes_nothing(admin, base_flavor, flavor_cleanup,
                                http_requests):
    name = f'{base_flavor.name}.hugepages'
    flavor_cleanup.append(name)
    result = apply('hugepages', '--from', base_flavor.name, '--dry-run')
    assert result.rc == 0, result.err
    assert '+ hw:mem_page_size=large' in result.out
    assert find_flavor(admin, name) is None
    assert http_requests.writes() == []


# -- errors an operator sees, from a separate kvmtune process --------------

def _clouds_yaml(admin, tmp_path, name, **auth_changes):
    """A clouds.yaml with one cloud like kvmtune-admin, auth changed."""
    config = admin.config.config
    auth = dict(config['auth'], **auth_changes)
    for key, value in list(auth.items()):
        if value is None:
            del auth[key]
    cloud = {'auth': auth, 'region_name': config.get('region_name'),
             'identity_api_version': '3'}
    if 'token' in auth:
        cloud['auth_type'] = 'v3token'
    path = tmp_path / 'clouds.yaml'
    path.write_text(yaml.safe_dump({'clouds': {name: cloud}}))
    return path


def test_wrong_password_is_one_line_without_the_password(admin, tmp_path):
    password = 'wrong-Pa55word-4-kvmtune'
    clouds = _clouds_yaml(admin, tmp_path, 'bad', password=password)
    result = kvmtune_process('host', 'tag', '--os-cloud', 'bad', '--root',
                             INTEL_HOST, env={'OS_CLIENT_CONFIG_FILE':
                                              str(clouds)})
    assert result.rc == 2
    assert result.out == ''
    assert result.err.count('\n') == 1, result.err
    assert result.err.startswith('kvmtune: error: cloud bad: POST '
                                 '/v3/auth/tokens: HTTP 401')
    assert password not in result.err


def test_tokens_never_appear(admin, tmp_path, monkeypatch):
    token = admin.session.get_token()
    # A valid token: the error comes from Nova, after authentication.
    clouds = _clouds_yaml(admin, tmp_path, 'tok', token=token,
                          username=None, password=None,
                          user_domain_name=None)
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(clouds))
    result = kvmtune('flavor', 'diff', '--os-cloud', 'tok', '--profile',
                     'hugepages', '--name', 'kvmtune-ft-no-such-flavor',
                     '--root', INTEL_HOST)
    assert result.rc == 2
    assert "no flavor named 'kvmtune-ft-no-such-flavor'" in result.err
    assert token not in result.err + result.out
    # A token Keystone refuses.
    bogus = 'gAAAAAB' + 'x' * 150
    clouds = _clouds_yaml(admin, tmp_path, 'tok', token=bogus,
                          username=None, password=None,
                          user_domain_name=None)
    result = kvmtune_process('flavor', 'diff', '--os-cloud', 'tok',
                             '--profile', 'hugepages', '--name', 'x',
                             '--root', INTEL_HOST,
                             env={'OS_CLIENT_CONFIG_FILE': str(clouds)})
    assert result.rc == 2, result.err
    assert 'HTTP 40' in result.err and bogus not in result.err


def test_missing_cloud_name_and_unreachable_cloud(tmp_path):
    missing = kvmtune_process('flavor', 'diff', '--os-cloud', 'no-such',
                              '--profile', 'hugepages', '--name', 'x')
    assert missing.rc == 2
    assert missing.err.startswith('kvmtune: error: clouds.yaml: no-such: ')
    clouds = pathlib.Path(tmp_path / 'clouds.yaml')
    clouds.write_text(yaml.safe_dump({'clouds': {'down': {'auth': {
        'auth_url': 'http://127.0.0.1:1/v3', 'username': 'u',
        'password': 'p4ss-not-shown', 'project_name': 'p',
        'user_domain_name': 'Default', 'project_domain_name': 'Default'}}}}))
    down = kvmtune_process('host', 'tag', '--os-cloud', 'down', '--root',
                           INTEL_HOST,
                           env={'OS_CLIENT_CONFIG_FILE': str(clouds)})
    assert down.rc == 2
    # The version discovery (a read) is retried, a line each (design 9.8);
    # then one error line naming the endpoint and the request id.
    *retries, error = down.err.splitlines()
    assert retries == [f'kvmtune: cloud down: GET /v3: connection failed; '
                       f'retry {n} of 3 in {wait} s'
                       for n, wait in ((1, 0.5), (2, 1.0), (3, 2.0))]
    assert error.startswith('kvmtune: error: cloud down: cannot reach '
                            'http://127.0.0.1:1/v3/auth/tokens')
    assert '(request req-' in error
    assert 'p4ss-not-shown' not in down.err
