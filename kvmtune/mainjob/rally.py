"""Rally for the main job: an existing@openstack environment made from the
cloud's credentials (never printed), the disk scaling task's arguments,
and the sweep with its JSON and HTML reports and SLA check. Rally's
database and "current" env stay in the job's state directory."""
import json
import os
import re
import subprocess

from kvmtune.errors import CloudError
from kvmtune.mainjob import steps

_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def rally_spec(cloud):
    """An existing@openstack spec from an openstacksdk CloudRegion."""
    auth = cloud.config['auth']
    admin = {k: auth[k] for k in ('username', 'password', 'project_name',
                                  'user_domain_name', 'project_domain_name')
             if auth.get(k)}
    spec = {'auth_url': auth['auth_url'], 'admin': admin,
            'endpoint_type': cloud.config.get('interface') or 'public'}
    if cloud.get_region_name():
        spec['region_name'] = cloud.get_region_name()
    if cloud.config.get('verify') is False:
        spec['https_insecure'] = True
    return {'existing@openstack': spec}


def task_args(max_vms, workload, flavors, image, baseline=None,
              emulated=False, runtime=None):
    args = {'max_vms': max_vms, 'workload': workload, 'flavors': flavors,
            'image_name': image, 'emulated': emulated}
    if runtime:
        args['runtime'] = runtime
    if baseline:
        args['baseline'] = os.path.abspath(baseline)
    return args


class Rally:
    """Rally with its database and globals kept in one directory."""

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, 'rally')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.conf = os.path.join(self.dir, 'rally.conf')
        with open(self.conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///'
                    + os.path.join(self.dir, 'rally.sqlite') + '\n')
        # Rally keeps the "current" env and task under ~/.rally
        self.env = dict(os.environ, HOME=self.dir)

    def __call__(self, *args, capture=False):
        return steps.run([steps.bin_path('rally'), '--config-file',
                          self.conf, *args], env=self.env, capture=capture)

    def use_cloud(self, name, spec):
        self('db', 'ensure')
        envs = json.loads(self('env', 'list', '--json', capture=True)
                          or '[]')
        if any(e['name'] == name for e in envs):
            self('env', 'destroy', name, capture=True)
            self('env', 'delete', name, capture=True)
        path = os.path.join(self.dir, 'spec.json')
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            json.dump(spec, f)
        try:
            # Rally prints the spec back, password included: keep it quiet
            self('env', 'create', '--name', name, '--spec', path,
                 capture=True)
        finally:
            os.unlink(path)
        steps.say(f'rally env {name}: created from cloud credentials '
                  '(not shown)')
        self('env', 'check')

    def start_task(self, task, args):
        """Run the task, echoing Rally's output; its UUID. Rally exits
        non-zero when an iteration failed: the report still follows."""
        argv = [steps.bin_path('rally'), '--config-file', self.conf, 'task',
                'start', task, '--task-args', json.dumps(args)]
        steps.say('$ ' + ' '.join(argv))
        uuid = None
        with subprocess.Popen(argv, env=self.env, text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) as proc:
            for line in proc.stdout:
                print(line, end='', flush=True)
                found = _UUID.search(line) if uuid is None else None
                if found and 'Task' in line:
                    uuid = found.group(0)
        if uuid is None:
            raise CloudError(f'rally exited {proc.returncode} before it '
                             'started a task', source=task)
        return uuid

    def sweep(self, task, args, out_json, out_html):
        uuid = self.start_task(task, args)
        state = self('task', 'status', uuid, capture=True).split()[-1]
        if state not in ('finished', 'aborted'):
            raise CloudError(f'rally task {uuid} ended {state}: no sweep '
                             'ran', source=task,
                             fix=f'rally task detailed {uuid} shows why')
        self('task', 'report', uuid, '--json', '--out', out_json)
        self('task', 'report', uuid, '--html-static', '--out', out_html)
        proc = subprocess.run([steps.bin_path('rally'), '--config-file',
                               self.conf, 'task', 'sla-check', uuid],
                              env=self.env)
        return uuid, proc.returncode == 0
