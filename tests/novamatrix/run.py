"""Check every shipped profile's plan on every real capture with each Nova
release's own code (tests/novamatrix/check.py run in the release's venv),
and write the release table kvmtune plans from
(kvmtune/data/nova_releases.yaml).
"""

import glob
import json
import os
import subprocess
import time

from kvmtune.errors import InputError
from kvmtune import nova_releases
from tests import novamatrix
from tests.paths import HOSTS

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check.py')
REAL = os.path.join(HOSTS, 'real')
CHECK_TIMEOUT = 600


def real_captures():
    """{name: capture dir} of tests/fixtures/hosts/real."""
    return {os.path.basename(path): path for path in sorted(
        glob.glob(os.path.join(REAL, '*')))
        if os.path.isdir(path) and os.path.isdir(os.path.join(path, 'sys'))}


def shipped_profiles():
    from kvmtune.tuning import profiles
    return profiles.available([profiles.packaged_dir()])


def tuner_classes():
    from kvmtune.tuning import tuners
    return [tuners.get(name) for name in tuners.names()]


def tuner_options():
    """Every (section, option) a tuner may plan, sorted."""
    return sorted({key for cls in tuner_classes()
                   for key in (*cls.NOVA_CONF, *cls.NOVA_CONF_OPTIONS)})


def tuner_specs():
    """Every extra spec name a tuner may set, sorted (templated trait
    names are left out)."""
    names = set()
    for cls in tuner_classes():
        names.update(cls.OWNED_EXTRA_SPECS)
        names.update(cls.EXTRA_SPECS)
    return sorted(names)


def ask(major, request):
    """check.py's answer, run in the venv of Nova ``major``."""
    done = subprocess.run(
        [novamatrix.python(major), CHECK], input=json.dumps(request),
        capture_output=True, text=True, cwd='/', timeout=CHECK_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f'nova-{major} check failed: '
                           + done.stderr.strip()[-2000:])
    return json.loads(done.stdout)


def facts_of(captures=None):
    from kvmtune import facts as host_facts
    return {name: host_facts.gather(path)
            for name, path in (captures or real_captures()).items()}


def plans_for(major, all_facts, profile_paths=None):
    """({profile: [plan request]}, {profile: unavailable reason})."""
    from kvmtune.tuning import plan as plans
    from kvmtune.tuning import profiles

    requests, unavailable = {}, {}
    for name, path in sorted((profile_paths or shipped_profiles()).items()):
        profile = profiles.load(path, [])
        for host, facts in all_facts.items():
            try:
                plan = plans.build_plan(profile, facts, release=major)
            except InputError as exc:
                if exc.key != '--nova-release':
                    raise
                unavailable[name] = exc.problem
                break
            requests.setdefault(name, []).append({
                'id': f'{name}@{host}', 'nova_conf': plan.nova_conf,
                'extra_specs': plan.extra_specs,
                'notes': [n['note'] for n in plan.notes]})
    return requests, unavailable


def check_release(major, all_facts):
    """({profile: {'status': 'ok'|'unavailable'|'failed', 'reason',
    'plans', 'problems', 'deprecated', 'notes'}}, description) for Nova
    ``major``: one run of check.py checks the plans and describes the
    release (describe())."""
    requests, unavailable = plans_for(major, all_facts)
    flat = [plan for plans in requests.values() for plan in plans]
    answer = ask(major, dict(_table_request(), plans=flat))
    results = {}
    for name, reason in unavailable.items():
        results[name] = {'status': 'unavailable', 'reason': reason,
                         'plans': 0, 'problems': [], 'deprecated': [],
                         'notes': []}
    for name, plans in requests.items():
        problems, deprecated, notes = [], [], set()
        for plan in plans:
            got = answer['plans'][plan['id']]
            problems += [f'{plan["id"]}: {p}' for p in got['problems']]
            deprecated += [f'{plan["id"]}: {d}' for d in got['deprecated']]
            notes.update(plan['notes'])
        results[name] = {
            'status': 'failed' if problems else 'ok',
            'reason': problems[0] if problems else None,
            'plans': len(plans), 'problems': problems,
            'deprecated': deprecated, 'notes': sorted(notes)}
    return dict(sorted(results.items())), _description(answer)


# -- the release table -------------------------------------------------------

def _table_request():
    return {'options': [list(k) for k in tuner_options()],
            'specs': tuner_specs()}


def describe(major):
    """What Nova ``major`` has of what the tuners plan (check.py)."""
    return _description(ask(major, _table_request()))


def _description(answer):
    default = answer['options']['filter_scheduler.enabled_filters'][
        'default']
    planned = set(default) | {'NUMATopologyFilter'}
    for info in answer['options'].values():
        # Where an option is read matters for a deprecated one (the plan
        # names it); for the others, only that it is read at all.
        if 'read_in' in info:
            info['read'] = bool(info['read_in'])
            if not info['deprecated_for_removal']:
                del info['read_in']
    return {'nova': answer['nova'], 'options': answer['options'],
            'specs': answer['specs'],
            'filters': {'known': sorted(planned & set(answer['filters']))},
            'features': answer['features']}


def _ranges(by_major):
    """[{'releases': [first, last], **record}] merging equal neighbours."""
    entries = []
    for major in sorted(by_major):
        record = by_major[major]
        if entries and entries[-1]['record'] == record \
                and entries[-1]['last'] == major - 1:
            entries[-1]['last'] = major
        else:
            entries.append({'first': major, 'last': major,
                            'record': record})
    return [dict({'releases': [e['first'], e['last']]}, **e['record'])
            for e in entries]


def table(descriptions):
    """The release table (kvmtune/data/nova_releases.yaml) from
    describe()'s answers by major."""
    majors = sorted(descriptions)
    return {
        'releases': {str(major): {
            'nova': descriptions[major]['nova'],
            'series': novamatrix.RELEASES[major][1]} for major in majors},
        'options': {key: _ranges({m: descriptions[m]['options'][key]
                                  for m in majors})
                    for key in sorted(descriptions[majors[0]]['options'])},
        'specs': {name: _ranges({m: descriptions[m]['specs'][name]
                                 for m in majors})
                  for name in sorted(descriptions[majors[0]]['specs'])},
        'filters': _ranges({m: descriptions[m]['filters'] for m in majors}),
        'features': {name: _ranges({m: {'present': descriptions[m][
            'features'][name]} for m in majors})
            for name in sorted(descriptions[majors[0]]['features'])},
    }


HEADER = """\
# The Nova releases kvmtune plans for, and what each has of what kvmtune's
# tuners plan: nova.conf options (exists, deprecated, accepted choices,
# read by a service at all, and where, for a deprecated one), flavor extra
# specs (validated, accepted values), scheduler filters and behaviour
# kvmtune's notes depend on. Written by `tools/nova-matrix --write-table`
# from each release's own code (tests/novamatrix/check.py run in that
# release's venv); read by kvmtune/nova_releases.py. Do not edit by hand:
# the matrix tests compare it with every release.
"""


def write_table(descriptions, path=nova_releases.DATA):
    import yaml

    text = HEADER + yaml.safe_dump(table(descriptions), sort_keys=False,
                                   default_flow_style=None, width=76)
    tmp = path + '.tmp'
    with open(tmp, 'w') as handle:
        handle.write(text)
    os.replace(tmp, path)
    nova_releases.table.cache_clear()


# -- the whole matrix ---------------------------------------------------

def format_table(results):
    """Release x profile, ok / unavailable (reason) / failed."""
    profiles = sorted({p for by in results.values() for p in by})
    lines = ['release | ' + ' | '.join(profiles)]
    for major in sorted(results):
        cells = []
        for name in profiles:
            got = results[major].get(name)
            if got is None:
                cells.append('-')
            elif got['status'] == 'ok':
                cells.append(f'ok ({got["plans"]} hosts)')
            else:
                cells.append(f'{got["status"]}: {got["reason"]}')
        lines.append(f'Nova {major} | ' + ' | '.join(cells))
    return '\n'.join(lines) + '\n'


def run_matrix(majors=None, say=print):
    """Build (or reuse) the venvs, check every release; returns
    ({major: results}, {'install': {major: s}, 'check': {major: s}})."""
    majors = sorted(majors or novamatrix.RELEASES)
    figures = {'install': {}, 'check': {}}
    started = time.monotonic()
    built = novamatrix.build_all(majors, say=say)
    figures['install'] = {m: b['seconds'] for m, b in built.items()}
    figures['reused'] = {m: b['reused'] for m, b in built.items()}
    figures['install_wall'] = round(time.monotonic() - started, 1)
    all_facts = facts_of()
    results = {}
    for major in majors:
        t = time.monotonic()
        results[major] = check_release(major, all_facts)[0]
        figures['check'][major] = round(time.monotonic() - t, 1)
    figures['total'] = round(time.monotonic() - started, 1)
    return results, figures
