"""Find a Nova to check nova.conf values against, and ask it.

Where Nova is looked for, first found wins:

1. the Python named by ``--nova-python``, ``$KVMTUNE_NOVA_PYTHON`` or
   ``[nova] python_executable`` (kvmtune.conf), in that order: it must be
   able to import nova, else that is an error (the operator asked for it);
2. kvmtune's own Python, when ``import nova`` works there (in process);
3. the distribution's ``/usr/bin/python3`` (Nova from packages).

With none, one notice says so and only kvmtune's own rules apply.
"""

import json
import os
import subprocess
import sys
from typing import Any

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune.tuning.novaconf import nova_check

ENV_PYTHON = 'KVMTUNE_NOVA_PYTHON'
SYSTEM_PYTHON = '/usr/bin/python3'
CHECK_TIMEOUT = 300  # importing Nova takes seconds on a busy host
NO_NOVA = ('Nova is not importable here (set KVMTUNE_NOVA_PYTHON to a '
           'Python that has it); checked with kvmtune\'s own rules only')


def run_checker(python: str, changes: Any) -> dict[str, Any]:
    """Run nova_check.py under ``python``; return its JSON answer."""
    request = json.dumps({'changes': changes})
    try:
        done = subprocess.run(
            [python, nova_check.__file__], input=request, cwd='/',
            capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f'cannot run it to check nova.conf values: {exc}',
                         source=python, fix='give a working Python with '
                         f'--nova-python or ${ENV_PYTHON}')
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines()
                or [f'exit status {done.returncode}, no output'])[-1]
        raise InputError(f'the Nova option check failed: {last}',
                         source=python, fix='give a Python that can import '
                         f'nova with --nova-python or ${ENV_PYTHON}')
    fix = f'give a Python that can import nova with --nova-python or ' \
        f'${ENV_PYTHON}'
    try:
        answer = inputs.parse_json(done.stdout, python)
    except InputError as exc:
        raise InputError(f'the Nova option check answered no usable JSON '
                         f'({exc.problem})', source=python, fix=fix) from None
    if (not isinstance(answer, dict)
            or not isinstance(answer.get('problems'), list)
            or not isinstance(answer.get('notices'), list)
            or 'nova' not in answer):
        raise InputError('the Nova option check answered something else '
                         'than nova, problems and notices', source=python,
                         fix=fix)
    return answer


def configured_python(cli_value: str | None = None,
                      conf_value: str | None = None) -> str | None:
    return cli_value or os.environ.get(ENV_PYTHON) or conf_value or None


def check_with_nova(changes: Any,
                    python: str | None = None) -> dict[str, Any]:
    """Nova's answer for ``changes``: {"nova", "problems", "notices", "via"}.

    ``python`` is the operator's choice (see configured_python); without
    it ``$KVMTUNE_NOVA_PYTHON``, then kvmtune's own Python, then the
    system one, are tried.
    """
    python = python or os.environ.get(ENV_PYTHON)
    if python:
        answer = run_checker(python, changes)
        if answer['nova'] is None:
            raise InputError('this Python cannot import nova', source=python,
                             fix='give the Python of the virtualenv Nova '
                             f'runs in with --nova-python or ${ENV_PYTHON}')
        return dict(answer, via=python)
    if nova_check.nova_version() is not None:
        return dict(nova_check.check(changes), via=sys.executable)
    in_virtualenv = sys.prefix != sys.base_prefix
    if in_virtualenv and os.path.exists(SYSTEM_PYTHON):
        answer = run_checker(SYSTEM_PYTHON, changes)
        if answer['nova'] is not None:
            return dict(answer, via=SYSTEM_PYTHON)
    return {'nova': None, 'problems': [], 'notices': [NO_NOVA], 'via': None}
