"""Check nova.conf values against Nova's own option definitions.

kvmtune imports this module when Nova is importable in its own Python, or
runs it as a script under another Python that has Nova (a virtualenv, the
distribution's python3): the changes arrive as JSON on stdin,
``{"changes": {section: {option: value or [values]}}}``, and the answer
leaves as JSON on stdout::

    {"nova": "34.0.0" | null,
     "problems": [{"section", "option", "reason", "fix"}],
     "notices": ["..."],
     "secrets": [[group, option], ...]}

``secrets`` lists every option Nova (and the oslo libraries it loads)
defines with ``secret=True``: the diff masks their values whatever their
names.

``"nova": null`` means Nova is not importable here. Only the standard
library, Nova and the oslo libraries Nova depends on are imported: the
other Python does not have kvmtune.
"""

# It may run under another Python than kvmtune's: annotations stay strings.
from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import json
import sys
from typing import Any
import warnings

# The option namespaces of Nova's sample configuration
# (etc/nova/nova-config-generator.conf): together they define every option
# of the groups a nova.conf may hold.
NAMESPACES = (
    'nova.conf', 'oslo.log', 'oslo.messaging', 'oslo.policy',
    'oslo.privsep', 'oslo.service.periodic_task', 'oslo.service.service',
    'oslo.middleware', 'oslo.concurrency', 'keystonemiddleware.auth_token',
    'osprofiler',
)
CPU_SET_OPTIONS = {('compute', 'cpu_shared_set'),
                   ('compute', 'cpu_dedicated_set'),
                   ('DEFAULT', 'vcpu_pin_set')}
RESERVED_HUGE_PAGES = ('DEFAULT', 'reserved_huge_pages')
REFERENCE = 'https://docs.openstack.org/nova/latest/configuration/config.html'


def _group_key(name: str | None) -> str:
    """oslo.config's folding of section names (DEFAULT is kept)."""
    name = name or 'DEFAULT'
    return name if name == 'DEFAULT' else name.lower()


def _load_options() -> tuple[dict[str, dict[str, Any]],
                             dict[tuple[str, str], tuple[str, Any]]]:
    """{group: {option name: opt}} and {(group, old name): opt}."""
    wanted = set(NAMESPACES)
    options: dict[str, dict[str, Any]] = {}
    deprecated: dict[tuple[str, str], tuple[str, Any]] = {}
    points = importlib.metadata.entry_points(group='oslo.config.opts')
    for point in points:
        if point.name not in wanted:
            continue
        for group, opts in point.load()():
            group = _group_key(getattr(group, 'name', group))
            for opt in opts:
                options.setdefault(group, {})[opt.name] = opt
                for old in opt.deprecated_opts or ():
                    old_group = _group_key(old.group or group)
                    deprecated[(old_group, old.name or opt.name)] = (
                        group, opt)
    return options, deprecated


def _nova_semantics(section: str, option: str,
                    values: list[Any]) -> str | None:
    """Nova's own parsers for options whose type is a plain string."""
    from nova import exception
    from nova.virt import hardware

    import nova.conf

    if (section, option) in CPU_SET_OPTIONS:
        for value in values:
            try:
                hardware.parse_cpu_spec(value)
            except exception.Invalid as exc:
                return str(exc)
    if (section, option) == RESERVED_HUGE_PAGES:
        conf = nova.conf.CONF
        for value in values:  # one at a time, to name the bad one
            try:
                conf.set_override(option, [value])
                hardware.numa_get_reserved_huge_pages()
            except exception.Invalid as exc:
                return f'{value!r}: {exc}'
            finally:
                conf.clear_override(option)
    return None


def _problem(section: str, option: str, reason: str,
             fix: str) -> dict[str, str]:
    return {'section': section, 'option': option, 'reason': reason,
            'fix': fix}


def _check_option(options: dict[str, dict[str, Any]],
                  deprecated: dict[tuple[str, str], tuple[str, Any]],
                  section: str, option: str, value: Any,
                  notices: list[str]) -> dict[str, str] | None:
    group = _group_key(section)
    if group not in options:
        notices.append(f'[{section}] is not a group Nova defines; '
                       f'{option} was not checked against Nova')
        return None
    opt = options[group].get(option)
    if opt is None and (group, option) in deprecated:
        new_group, opt = deprecated[(group, option)]
        notices.append(f'[{section}] {option} is deprecated in Nova; it '
                       f'is now [{new_group}] {opt.name}')
    if opt is None:
        close = difflib.get_close_matches(option, options[group], n=1)
        hint = f'did you mean {close[0]}? ' if close else ''
        return _problem(section, option, 'Nova has no such option',
                        f'{hint}use an option of [{section}] from '
                        f'{REFERENCE}')
    multi = getattr(opt, 'multi', False)
    if multi and not isinstance(value, list):
        return _problem(section, option, 'Nova reads this option as a list '
                        '(one line per value)', 'give the values as a list')
    if not multi and isinstance(value, list):
        return _problem(section, option, 'Nova reads one value for this '
                        'option, not a list', 'give a single value')
    values = value if multi else [value]
    for item in values:
        try:
            opt.type(item)
        except (ValueError, TypeError) as exc:
            return _problem(section, option, f'Nova rejects {item!r}: {exc}',
                            f'give a value [{section}] {option} accepts '
                            f'(see {REFERENCE})')
    reason = _nova_semantics(group, option, values)
    if reason:
        return _problem(section, option, f'Nova rejects it: {reason}',
                        f'give a value Nova can parse (see {REFERENCE})')
    return None


def secret_options(options: dict[str, dict[str, Any]]) -> list[list[str]]:
    """[[group, option]] of every option defined with secret=True."""
    return sorted([group, name] for group, opts in options.items()
                  for name, opt in opts.items()
                  if getattr(opt, 'secret', False))


def nova_version() -> str | None:
    if importlib.util.find_spec('nova') is None:
        return None
    return importlib.metadata.version('nova')


def check(changes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Check {section: {option: value}} against the Nova importable here."""
    version = nova_version()
    if version is None:
        return {'nova': None, 'problems': [], 'notices': [], 'secrets': []}
    with warnings.catch_warnings():
        # Nova's imports warn about eventlet; nothing for the operator.
        warnings.simplefilter('ignore')
        options, deprecated = _load_options()
        problems: list[dict[str, str]] = []
        notices: list[str] = []
        for section, values in changes.items():
            for option, value in values.items():
                problem = _check_option(options, deprecated, section,
                                        option, value, notices)
                if problem:
                    problems.append(problem)
    return {'nova': version, 'problems': problems, 'notices': notices,
            'secrets': secret_options(options)}


def main() -> int:
    request = json.load(sys.stdin)
    json.dump(check(request['changes']), sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
