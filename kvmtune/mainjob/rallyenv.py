"""Rally's database and an environment for a cloud (`kvmtune rally env`).

Where plain `rally` keeps its database: Rally reads the first rally.conf
it finds in ``<its Python's prefix>/etc/rally``, ``~/.rally``,
``/etc/rally`` (rally/api.py ``API.CONFIG_SEARCH_PATHS``); without one
its database is ``sqlite:///$TMPDIR/rally.sqlite`` (rally/common/db/api.py),
which every user shares and a reboot may wipe. So a rally.conf Rally
finds is used as it is; with none, and no database at Rally's default
place either, ``~/.rally/rally.conf`` is written naming
``~/.rally/rally.sqlite`` (a 0700 directory: the database holds the
environment's password), beside ``~/.rally/globals``, where Rally keeps
its current environment. A plain ``rally task start`` then finds both.

``ensure(os_cloud=None, ...)``:

1. the cloud: ``os_cloud`` from clouds.yaml (openstacksdk's search,
   ``OS_CLIENT_CONFIG_FILE`` first), or, when none is named, the test
   cloud's admin (``kvmtune-admin`` of its own clouds.yaml);
2. its credentials are checked (a Keystone token) before Rally is
   touched (1 and 2, and the spec: kvmtune.mainjob.rallycloud);
3. Rally's database is made where none exists (``rally db ensure``);
4. the environment: made when none has that name; left as it is when it
   holds the same spec; when it holds another (new passwords, another
   clouds.yaml) Rally cannot change it (``EnvManager.update_spec`` is not
   implemented), so the old one is renamed ``NAME@<UTC time>``, keeping
   its tasks, and a new one is made;
5. made Rally's current environment (``rally env use``) and checked by
   Rally itself (``rally env check``).

``use(rally, name, spec)`` is steps 3 to 5 for a Rally the caller set up
(the main job's, in its state directory). Nothing printed, logged or
raised here holds a password.
"""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import importlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from typing import Any

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.errors import MASK
from kvmtune.errors import mask_secrets
from kvmtune import extras
from kvmtune.mainjob import rallycloud
from kvmtune import venvs

CONFIG_NAME = 'rally.conf'
RALLY_DIR = '.rally'
DEFAULT_DB_NAME = 'rally.sqlite'
SEARCH_DIRS = ('{prefix}/etc/rally', '~/.rally', '/etc/rally')
# Rally's CLI takes a second or two to start; an env check asks Keystone
# and every service once.
RALLY_TIMEOUT = 300


class RallyCommand:
    """The ``rally`` program with an optional ``--config-file`` and HOME
    (where its ``~/.rally/globals`` is); ``log`` hears each command line
    and, unless it may hold a password, its output."""

    def __init__(self, config_file: str | None = None,
                 home: str | None = None, rally: str | None = None,
                 log: Callable[[str], object] | None = None) -> None:
        self.rally = rally or rally_bin()
        self.config_file = config_file
        self.home = home
        self.log = log or (lambda line: None)

    @property
    def env(self) -> dict[str, str]:
        """Its environment: kvmtune.venvs.program_env, with HOME."""
        env = venvs.program_env()
        if self.home:
            env['HOME'] = self.home
        return env

    def argv(self, *args: str) -> list[str]:
        conf = ['--config-file', self.config_file] if self.config_file \
            else []
        return [self.rally, *conf, *args]

    def run(self, *args: str, secret: bool = False) -> tuple[int, str]:
        """(exit status, stdout and stderr together)."""
        import subprocess

        argv = self.argv(*args)
        self.log('$ ' + ' '.join(argv))
        try:
            done = subprocess.run(argv, env=self.env, text=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT,
                                  timeout=RALLY_TIMEOUT)
        except FileNotFoundError:
            raise InputError('no rally program', source=self.rally,
                             fix=extras.install_hint('bench')) from None
        except subprocess.TimeoutExpired:
            raise CloudError(f'no answer in {RALLY_TIMEOUT} s',
                             source=' '.join(argv[:3])) from None
        if not secret:
            for line in done.stdout.splitlines():
                self.log(line)
        return done.returncode, done.stdout

    def python(self) -> str:
        """The Python the rally program runs with (its #! line)."""
        try:
            with open(self.rally, 'rb') as f:
                first = f.readline().decode(errors='replace')
        except OSError:
            first = ''
        if first.startswith('#!') and os.path.isabs(first[2:].split()[0]):
            return first[2:].split()[0]
        return sys.executable


def rally_bin() -> str:
    """The rally beside this Python (the bench extra's), else on PATH."""
    import shutil

    here = os.path.join(os.path.dirname(sys.executable), 'rally')
    return here if os.path.exists(here) else shutil.which('rally') or 'rally'


def search_paths(rally: str | None = None, home: str | None = None
                 ) -> list[str]:
    """The rally.conf files plain ``rally`` looks for, in its order."""
    rally = rally or rally_bin()
    if os.path.dirname(os.path.abspath(rally)) == \
            os.path.dirname(sys.executable):
        prefix = sys.prefix
    else:
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(rally)))
    home = home or os.path.expanduser('~')
    return [os.path.join(d.format(prefix=prefix).replace('~', home, 1),
                         CONFIG_NAME) for d in SEARCH_DIRS]


def rally_config(rally: str | None = None, home: str | None = None
                 ) -> tuple[str | None, str | None]:
    """(the rally.conf plain ``rally`` reads, or None; the one written,
    or None): writes ``~/.rally/rally.conf`` when Rally has neither a
    config file nor a database at its default place."""
    from kvmtune import fileio

    for path in search_paths(rally, home):
        if os.path.isfile(path):
            return path, None
    if os.path.exists(os.path.join(tempfile.gettempdir(), DEFAULT_DB_NAME)):
        return None, None       # Rally's own default, already in use
    directory = os.path.join(home or os.path.expanduser('~'), RALLY_DIR)
    fix = (f'make {directory} a directory you can write, or give Rally '
           f'a [database] connection in one of: '
           f'{", ".join(search_paths(rally, home))}')
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise InputError(f"Rally's directory cannot be made: "
                         f'{exc.strerror}', source=directory,
                         fix=fix) from None
    path = os.path.join(directory, CONFIG_NAME)
    db = os.path.join(directory, DEFAULT_DB_NAME)
    fileio.write_atomic(path, f'[database]\nconnection = sqlite:///{db}\n',
                        mode=0o600, fix=fix)
    return path, path


# "2026-11-25 15:40:33.753 13758 ERROR rally ": oslo.log's line prefix
_LOG_PREFIX = re.compile(r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \d+ '
                         r'[A-Z]+ \S+ ?')
# "oslo_db.exception.DBNonExistentDatabase: (sqlite3...) unable to ..."
_EXCEPTION = re.compile(r'^(?:\w+\.)+\w+: |^\w*(?:Error|Exception): ')


def _last_line(text: object) -> str:
    """What a failed rally said: the last exception line of a logged
    traceback, else its last line."""
    lines = [_LOG_PREFIX.sub('', line).strip()
             for line in str(text).splitlines()]
    lines = [line for line in lines if line]
    found = [line for line in lines if _EXCEPTION.match(line)]
    return (found or lines or [''])[-1]


def _redact(text: str, spec: Mapping[str, Any]) -> str:
    for secret in _spec_secrets(spec):
        text = text.replace(secret, MASK)
    return mask_secrets(' '.join(text.split()))


def _spec_secrets(spec: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for platform in spec.values():
        users = [platform.get('admin') or {}] + list(
            platform.get('users') or [])
        found += [u['password'] for u in users if u.get('password')]
    return sorted(set(found), key=len, reverse=True)


def _database(rally: RallyCommand, fix: str) -> str:
    """Rally's database made where none exists; its connection string,
    credentials masked."""
    rc, out = rally.run('db', 'ensure')
    connection = ''
    for line in out.splitlines():
        if 'Ensuring database exists:' in line:
            connection = line.split('Ensuring database exists:', 1)[1]
            connection = connection.strip()
    shown = mask_secrets(connection) or 'Rally\'s database'
    if rc != 0:
        raise InputError("Rally's database cannot be written: "
                         + mask_secrets(_last_line(out)), source=shown,
                         fix=fix)
    return shown


def _envs(rally: RallyCommand, spec: Mapping[str, Any]
          ) -> list[dict[str, Any]]:
    rc, out = rally.run('env', 'list', '--json', secret=True)
    try:
        envs = json.loads(out) if rc == 0 else None
    except ValueError:
        envs = None
    if not isinstance(envs, list):
        raise CloudError('rally env list failed: '
                         + _redact(_last_line(out), spec),
                         source=rally.config_file or 'rally')
    return envs


def _rename(rally: RallyCommand, old: str, new: str,
            spec: Mapping[str, Any]) -> None:
    """Rename an environment (Rally's CLI has no rename; its EnvManager
    has), run by the Python of the rally program."""
    import subprocess

    code = ('import sys\n'
            'from rally import api\n'
            'from rally.env import env_mgr\n'
            'api.API(config_file=sys.argv[1] or None)\n'
            'env_mgr.EnvManager.get(sys.argv[2]).rename(sys.argv[3])\n')
    rally.log(f'rename rally env {old} to {new}')
    done = subprocess.run([rally.python(), '-c', code,
                           rally.config_file or '', old, new],
                          env=rally.env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=RALLY_TIMEOUT)
    if done.returncode != 0:
        raise CloudError(f'rally env {old}: could not rename it to {new}: '
                         + _redact(_last_line(done.stdout), spec),
                         source=rally.config_file or 'rally')


def _create(rally: RallyCommand, name: str,
            spec: Mapping[str, Any]) -> None:
    fd, path = tempfile.mkstemp(prefix='kvmtune-rally-spec-',
                                suffix='.json')
    try:
        with os.fdopen(fd, 'w') as f:      # 0600 from mkstemp
            json.dump(spec, f)
        # Rally prints the spec back, password included: never shown
        rc, out = rally.run('env', 'create', '--name', name, '--spec',
                            path, '--no-use', secret=True)
    finally:
        os.unlink(path)
    if rc != 0:
        raise CloudError('rally env create failed: '
                         + _redact(_last_line(out), spec), key=name,
                         source=rally.config_file or 'rally')


def use(rally: RallyCommand, name: str, spec: Mapping[str, Any],
        fix: str | None = None) -> dict[str, Any]:
    """store(), then ``rally env check``: Rally itself reaches the cloud
    with the environment; the same result."""
    done = store(rally, name, spec, fix)
    rc, out = rally.run('env', 'check', name, secret=True)
    if rc != 0:
        raise CloudError('Rally cannot use the cloud: '
                         + _redact(_check_failure(out), spec), key=name,
                         source=f'rally env {name}',
                         fix=f'rally env check {name} --detailed says why')
    return done


def store(rally: RallyCommand, name: str, spec: Mapping[str, Any],
          fix: str | None = None) -> dict[str, Any]:
    """Rally's database (made where none exists) and the environment
    ``name`` for ``spec`` (an existing@openstack spec,
    rallycloud.rally_spec()), made Rally's current one. Rally does not
    reach the cloud here.

    :returns: {'environment': 'created' | 'refreshed' | 'unchanged',
               'replaced': the old environment's new name or None,
               'database': the connection, credentials masked}
    """
    fix = fix or ('give Rally a database it can write ([database] '
                  'connection in its rally.conf)')
    database = _database(rally, fix)
    found = [e for e in _envs(rally, spec) if e.get('name') == name]
    state, replaced = 'created', None
    if found:
        old = found[0]
        if old.get('spec') == spec and old.get('status') == 'READY':
            state = 'unchanged'
        else:
            replaced = time.strftime(f'{name}@%Y%m%dT%H%M%SZ',
                                     time.gmtime())
            _rename(rally, name, replaced, spec)
            state = 'refreshed'
    if state != 'unchanged':
        _create(rally, name, spec)
    rc, out = rally.run('env', 'use', name)
    if rc != 0:
        raise CloudError('rally env use failed: '
                         + _redact(_last_line(out), spec), key=name,
                         source=rally.config_file or 'rally')
    return {'environment': state, 'replaced': replaced,
            'database': database}


def _check_failure(out: str) -> str:
    """The line of ``rally env check`` output that says what failed."""
    for line in out.splitlines():
        if 'Failed' in line or 'Error' in line or 'error' in line:
            return line.strip()
    return _last_line(out)


def ensure(os_cloud: str | None = None, name: str | None = None,
           home: str | None = None, config_files: Iterable[str] = (),
           rally: str | None = None,
           log: Callable[[str], object] | None = None) -> dict[str, Any]:
    """An environment of plain ``rally`` for a cloud: see the module.

    :param os_cloud: a cloud of clouds.yaml; None: the test cloud
    :param name: the environment's name (default: the cloud's)
    :param home: the HOME Rally runs with (default: this process's)
    :param config_files: kvmtune.conf files (where the test cloud is)
    :param rally: the rally program (default: rally_bin())
    :returns: {'name', 'cloud', 'auth_url', 'username', 'project_name',
               'region_name', 'environment', 'replaced', 'current',
               'database', 'rally_config', 'wrote'}; no password
    """
    cloud, region = rallycloud.cloud_config(os_cloud, config_files)
    name = name or cloud
    try:
        rallycloud.check_credentials(cloud, region)
    except CloudError as exc:
        if os_cloud is None and getattr(exc, 'http_status', None) is None:
            exc.fix = ('is the test cloud up? kvmtune cloud status; '
                       'start it: kvmtune cloud up')
        raise
    spec = rallycloud.rally_spec(region)
    rally = rally or rally_bin()
    config, wrote = rally_config(rally, home)
    command = RallyCommand(config_file=config, home=home, rally=rally,
                           log=log)
    fix = ('give Rally a database it can write: [database] connection in '
           + (config or ', '.join(search_paths(rally, home))))
    done = use(command, name, spec, fix)
    platform = spec['existing@openstack']
    return {'name': name, 'cloud': cloud,
            'auth_url': platform['auth_url'],
            'username': platform['admin'].get('username'),
            'project_name': platform['admin'].get('project_name'),
            'region_name': platform.get('region_name'),
            'environment': done['environment'],
            'replaced': done['replaced'], 'current': True,
            'database': done['database'], 'rally_config': config,
            'wrote': wrote}


# Rally's own exporter plugins of the two reports, imported alone (its CLI
# loads every plugin of every package first: rally.plugins.load)
EXPORTERS = ('rally.plugins.task.exporters.json_exporter',
             'rally.plugins.task.exporters.html')


def rally_api(conf: str) -> Any:
    """Rally's Python API (kvmtune[bench]'s Rally) on the job's
    database, with its JSON and HTML exporters; imported by name: mypy
    runs without the extras."""
    for name in EXPORTERS:
        importlib.import_module(name)
    api = importlib.import_module('rally.api').API(config_file=conf)
    # the API logs through the stderr handler it sets up (oslo.log,
    # use_stderr): its INFO lines ("Building 'json' report ...") would
    # reach the job's screen; the job logs its own line for each report
    logging.getLogger('rally.api').setLevel(logging.WARNING)
    return api
