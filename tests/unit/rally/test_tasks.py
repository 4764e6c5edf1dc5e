"""Every task file renders (defaults and given args) and passes Rally's own
syntax validation against the scenario, context, runner and SLA schemas."""

import copy
import json
import os

import pytest
import yaml

from rally import api
from rally import exceptions
from rally import plugins
from rally.task import engine
from rally.task import task_cfg
from tests import paths

TASKS = os.path.join(paths.REPO, 'kvmtune', 'rally', 'tasks')
TASK_FILES = sorted(f for f in os.listdir(TASKS) if f.endswith('.yaml'))


@pytest.fixture(scope='module', autouse=True)
def rally_plugins():
    plugins.load()


def render(name, **args):
    with open(os.path.join(TASKS, name)) as f:
        template = f.read()
    # the same call `rally task start --task-args` makes
    return yaml.safe_load(api._Task(api=None).render_template(
        task_template=template, template_dir=TASKS, **args))


def validate_syntax(config):
    eng = engine.TaskEngine(task_cfg.TaskConfig(copy.deepcopy(config)),
                            task={'uuid': 'test'}, env=None)
    eng._validate_config_syntax(eng.config)


def scenario_args(config):
    return [next(iter(st['scenario'].values())) for st in config['subtasks']]


def test_there_are_both_sweeps():
    assert TASK_FILES == ['disk-scaling.yaml', 'network-scaling.yaml']


@pytest.mark.parametrize('name', TASK_FILES)
@pytest.mark.parametrize('args', [{}, {'max_vms': 3}])
def test_renders_and_validates(name, args):
    config = render(name, **args)
    validate_syntax(config)
    for st, a in zip(config['subtasks'], scenario_args(config)):
        assert a['vm_counts'] == [1, 2, 3]
        assert st['runner']['constant']['times'] == 3
        assert 'kvmtune_scaling' in st['sla']
    flavors = [a['flavor']['name'] for a in scenario_args(config)]
    assert flavors == ['m1.bench.baseline', 'm1.bench.pinned-hugepages-ept']


@pytest.mark.parametrize('name', TASK_FILES)
def test_step_keeps_one_and_the_maximum(name):
    config = render(name, max_vms=10, step=3, flavors=['f1'],
                    baseline='/tmp/bm.json', workload='w')
    validate_syntax(config)
    (args,) = scenario_args(config)
    assert args['vm_counts'] == [1, 4, 7, 10]
    assert args['workload'] == 'w'
    (st,) = config['subtasks']
    assert st['sla']['kvmtune_scaling'] == {'min_share': 0.5,
                                            'baseline': '/tmp/bm.json'}


def test_disk_sweep_names_the_data_disk():
    for args in scenario_args(render('disk-scaling.yaml')):
        assert args['target'] == '/dev/vdb'


def test_validation_catches_a_bad_sla():
    config = render('disk-scaling.yaml')
    config['subtasks'][0]['sla']['kvmtune_scaling'] = {'min_share': 2}
    with pytest.raises(exceptions.InvalidTaskConfig,
                       match="SLA plugin 'kvmtune_scaling' doesn't pass "
                             "jsonschema"):
        validate_syntax(config)


def test_validation_catches_an_unknown_argument():
    config = render('disk-scaling.yaml')
    next(iter(config['subtasks'][0]['scenario'].values()))['vms'] = 3
    with pytest.raises(exceptions.InvalidTaskConfig,
                       match=r"Unexpected argument\(s\) found "
                             r"\['vms'\]") as exc:
        validate_syntax(config)
    assert 'vms' in str(exc.value)


def test_rendered_task_is_json_clean():
    # Rally stores the task as JSON: nothing YAML-only may survive
    json.dumps(render('network-scaling.yaml', max_vms=2))


def test_network_sweep_makes_no_router_and_may_name_a_server_flavor():
    config = render('network-scaling.yaml', server_flavor='m1.plain')
    validate_syntax(config)
    for st, args in zip(config['subtasks'], scenario_args(config)):
        # one host, one network: a router would need Neutron's L3 plugin
        assert st['contexts']['network@openstack']['router'] == {}
        assert args['server_flavor'] == {'name': 'm1.plain'}
    # unset, the server guest takes each subtask's flavor
    for args in scenario_args(render('network-scaling.yaml')):
        assert 'server_flavor' not in args


@pytest.mark.parametrize('name,default', [('disk-scaling.yaml', 'signal'),
                                          ('network-scaling.yaml', 'signal')])
def test_start_mode_default_and_override(name, default):
    config = render(name)
    assert {a['start_mode'] for a in scenario_args(config)} == {default}
    other = 'at' if default == 'signal' else 'signal'
    config = render(name, start_mode=other, ready_timeout=120)
    validate_syntax(config)
    assert {(a['start_mode'], a['ready_timeout'])
            for a in scenario_args(config)} == {(other, 120)}


def test_an_unknown_start_mode_fails_the_scenarios_validators():
    from kvmtune.rally.scenarios.kvmtune import disk
    from rally.common import validation

    def check(mode):
        config = {'args': dict(scenario_args(
            render('disk-scaling.yaml', start_mode=mode))[0])}
        for validator_cls, args, kwargs in disk.DiskScaling._meta_get(
                'validators'):
            if validator_cls == 'enum':
                validation.Validator.get(validator_cls)(
                    *args, **kwargs).validate({}, config, None, None)

    check('signal')
    check('at')
    with pytest.raises(validation.ValidationError, match='whenever'):
        check('whenever')
