"""helm target, proven by helm rendering openstack-helm's own nova chart.

``helm template`` (helm v3.8.1, tools/fetch-helm) renders the nova chart
and its helm-toolkit from an openstack-helm checkout with the exported
values file; the nova.conf of each rendered Secret, loaded by oslo.config
with Nova's options, has the planned values: the per-node compute
DaemonSet's file (conf.overrides.nova_compute.hosts, scheduled only on that
node) the compute options, nova-etc (API, scheduler, conductor) the
scheduler's, and the other computes' file none of the node's.

openstack-helm is in no package registry and is not copied here: the chart
comes from ``KVMTUNE_OSH_DIR``, else ``/opt/openstack-helm``, a checkout of
https://opendev.org/openstack/openstack-helm at the commit tests/trees.py
pins (``OSH``). Without one the tests skip with that reason (allow-listed
for CI); a tree that is given but missing or at another commit fails them.
"""

import base64
import os
import shutil
import subprocess

import pytest
import yaml

from kvmtune.tuning.novaconf import services
from tests import trees
from tests.unit.tuning.export import consumers

HELM = os.environ.get('KVMTUNE_HELM',
                      '/opt/kvmtune-consumers/helm/helm')

needs_helm = pytest.mark.skipif(
    not os.access(HELM, os.X_OK),
    reason=f'no helm at {HELM} (tools/bootstrap runs tools/fetch-helm)')


@pytest.fixture
def osh():
    """The pinned openstack-helm tree (skip: none given; fail: the one
    given is missing or at another commit)."""
    return trees.OSH.require()


def helm(*argv, cwd):
    done = subprocess.run([HELM, *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=300,
                          env=dict(os.environ, HOME=str(cwd),
                                   HELM_CACHE_HOME=str(cwd / '.cache'),
                                   HELM_CONFIG_HOME=str(cwd / '.config'),
                                   HELM_DATA_HOME=str(cwd / '.data')))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def render(osh, values, work, before=()):
    """The chart's objects as ``helm template`` gives them, with the values
    files ``before`` (the operator's) then ``values``."""
    charts = work / 'charts'
    if not (charts / 'nova').exists():
        for chart in ('nova', 'helm-toolkit'):
            shutil.copytree(os.path.join(osh, chart), charts / chart)
        # nova's Chart.yaml names helm-toolkit as file://../helm-toolkit
        helm('dependency', 'build', 'nova', cwd=charts)
    files = [arg for path in (*before, values) if path
             for arg in ('-f', str(path))]
    out = helm('template', 'nova', './nova', '--namespace', 'openstack',
               *files, cwd=charts)
    return [doc for doc in yaml.safe_load_all(out) if doc]


def nova_confs(objects, work):
    """{Secret name: path of its nova.conf, written out}."""
    found = {}
    for obj in objects:
        data = obj.get('data') or {}
        if obj['kind'] == 'Secret' and 'nova.conf' in data:
            name = obj['metadata']['name']
            path = work / f'{name}.conf'
            path.write_bytes(base64.b64decode(data['nova.conf']))
            found[name] = path
    return found


def node_names(daemonset):
    """The node names a DaemonSet's required node affinity allows."""
    affinity = daemonset['spec']['template']['spec']['affinity']
    terms = affinity['nodeAffinity'][
        'requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']
    return {value for term in terms for match in term['matchExpressions']
            if match['key'] == 'kubernetes.io/hostname'
            and match['operator'] == 'In' for value in match['values']}


def read(path, keys, work):
    got = consumers.nova_reads(keys, files=[str(path)], dirs=[], home=work)
    assert got['files'] == [str(path)]
    return got


@needs_helm
@consumers.needs_nova
def test_helm_template_then_nova_reads_the_plan(osh, tmp_path):
    out = tmp_path / 'out'
    consumers.export('helm', out)
    objects = render(osh, out / 'values-kvmtune.yaml', tmp_path)
    confs = nova_confs(objects, tmp_path)
    plan, _ = consumers.plan()
    planned = consumers.planned(plan.nova_conf)
    keys = [tuple(key.split('.')) for key in planned]
    compute = {key for key in planned if 'compute' in
               services.readers(*key.split('.'))}
    scheduler = set(planned) - compute
    assert compute and scheduler
    # the node's own compute DaemonSet, scheduled on that node only
    daemonsets = {obj['metadata']['name']: obj for obj in objects
                  if obj['kind'] == 'DaemonSet'}
    mine = [name for name in daemonsets
            if node_names(daemonsets[name]) == {consumers.HOST}]
    assert len(mine) == 1, sorted(daemonsets)
    got = read(confs[mine[0]], keys, tmp_path)
    for key, value in planned.items():      # a multi-valued one included
        assert got[key] == value, key
    assert isinstance(planned['DEFAULT.reserved_huge_pages'], list)
    # API, scheduler and conductor pods: the scheduler's options
    got = read(confs['nova-etc'], keys, tmp_path)
    for key in scheduler:
        assert got[key] == planned[key], key
    assert got['compute.cpu_dedicated_set'] is None
    # every other compute keeps its own CPU sets
    others = [name for name in daemonsets if name.startswith(
        'nova-compute-default')]
    assert len(others) == 1, sorted(daemonsets)
    got = read(confs[others[0]], keys, tmp_path)
    assert got['compute.cpu_dedicated_set'] is None
    assert not got['DEFAULT.reserved_huge_pages']


@needs_helm
@consumers.needs_nova
def test_group_values_reach_every_compute(osh, tmp_path):
    # without --host the compute options are conf.nova: every pod has them
    out = tmp_path / 'out'
    consumers.export('helm', out, host=None)
    confs = nova_confs(render(osh, out / 'values-kvmtune.yaml', tmp_path),
                       tmp_path)
    plan, _ = consumers.plan()
    planned = consumers.planned(plan.nova_conf)
    keys = [tuple(key.split('.')) for key in planned]
    computes = [name for name in confs if name.startswith('nova-compute-')]
    assert computes
    for name in computes + ['nova-etc']:
        got = read(confs[name], keys, tmp_path)
        for key, value in planned.items():
            assert got[key] == value, (name, key)


OPERATOR_FILTERS = ['PciPassthroughFilter',
                    'AggregateInstanceExtraSpecsFilter']


@needs_helm
@consumers.needs_nova
@pytest.mark.parametrize('given', [True, False], ids=['base', 'no-base'])
def test_operator_filters_survive_helm_template(osh, tmp_path, capsys,
                                                given):
    """The operator's values file sets their filters; the nova.conf the
    chart renders from it is the export's --nova-conf. With it, the
    values file given after theirs holds their filters and kvmtune's;
    without, helm takes the later file's list and theirs are gone."""
    theirs = tmp_path / 'values-operator.yaml'
    theirs.write_text(yaml.safe_dump({'conf': {'nova': {'filter_scheduler': {
        'enabled_filters': ','.join(['ComputeFilter', *OPERATOR_FILTERS])}}}}))
    base = tmp_path / 'rendered-nova.conf'
    shutil.copyfile(nova_confs(render(osh, None, tmp_path, before=[theirs]),
                               tmp_path)['nova-etc'], base)
    out = tmp_path / 'out'
    capsys.readouterr()
    consumers.export('helm', out, *(['--nova-conf', str(base)]
                                    if given else []))
    printed = capsys.readouterr().out
    confs = nova_confs(render(osh, out / 'values-kvmtune.yaml', tmp_path,
                              before=[theirs]), tmp_path)
    got = read(confs['nova-etc'], [('filter_scheduler', 'enabled_filters')],
               tmp_path)
    filters = got['filter_scheduler.enabled_filters'].split(',')
    assert 'NUMATopologyFilter' in filters
    if given:
        assert filters == ['ComputeFilter', *OPERATOR_FILTERS,
                           'NUMATopologyFilter']
        assert 'give values-kvmtune.yaml last' in printed
    else:
        assert not set(OPERATOR_FILTERS) & set(filters)
