"""Run in one Nova release's Python: check plans with that Nova's own code.

Standard library, Nova and its libraries only (the release's venv has no
kvmtune). The request arrives as JSON on stdin::

    {"plans": [{"id", "nova_conf": {section: {option: value}},
                "extra_specs": {name: value}}],
     "options": [[section, option], ...],
     "specs": [name, ...]}

and the answer leaves as JSON on stdout::

    {"nova": "29.4.0",
     "plans": {id: {"problems": [...], "deprecated": [...]}},
     "options": {"section.option": {"exists", "deprecated_for_removal",
                 "deprecated_since", "choices", "default",
                 "replaced_by"}},
     "specs": {name: {"validated", "enum"}},
     "filters": [every scheduler filter class name],
     "features": {name: bool}}

Each plan's nova.conf is written to a file and loaded as a Nova service
loads it: oslo.config with every option Nova registers
(nova/conf/__init__.py), then every planned value is read through its
option (its type and choices convert it), then Nova's own start-up parsers
run on it: nova.virt.hardware's CPU set and reserved huge page readers,
and the scheduler's filter lookup (nova/scheduler/host_manager.py,
_choose_host_filters). Each extra spec goes through
nova/api/validation/extra_specs/validators.py's validate() (Nova >= 23).
"""

import importlib.metadata
import json
import os
import sys
import tempfile
import warnings


def _ini(nova_conf):
    lines = []
    for section, options in nova_conf.items():
        lines.append(f'[{section}]')
        for option, value in options.items():
            for item in (value if isinstance(value, list) else [value]):
                lines.append(f'{option} = {item}')
    return '\n'.join(lines) + '\n'


def _load(conf, nova_conf):
    with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                     delete=False) as handle:
        handle.write(_ini(nova_conf))
    try:
        conf.clear()
        conf(args=['--config-file', handle.name], project='nova',
             default_config_files=[])
    finally:
        os.unlink(handle.name)


def _opt(conf, section, option):
    group = None if section == 'DEFAULT' else section
    try:
        return conf._get_opt_info(option, group)['opt']
    except Exception:  # oslo.config's NoSuchOptError/NoSuchGroupError
        return None


def _check_plan(conf, plan):
    from nova import exception
    from nova.scheduler import filters
    from nova.virt import hardware

    problems, deprecated = [], []
    try:
        _load(conf, plan['nova_conf'])
    except Exception as exc:
        return {'problems': [f'oslo.config refuses the file: {exc}'],
                'deprecated': []}
    for section, options in plan['nova_conf'].items():
        for option in options:
            where = f'[{section}] {option}'
            opt = _opt(conf, section, option)
            if opt is None:
                problems.append(f'{where}: no such option')
                continue
            if opt.name != option:
                deprecated.append(f'{where}: an old name of {opt.name}')
            if opt.deprecated_for_removal:
                deprecated.append(f'{where}: deprecated for removal since '
                                  f'{opt.deprecated_since}')
            try:
                group = conf if section == 'DEFAULT' else conf[section]
                getattr(group, option)
            except Exception as exc:
                problems.append(f'{where}: {exc}')
    for reader in ('get_cpu_shared_set', 'get_cpu_dedicated_set',
                   'numa_get_reserved_huge_pages'):
        try:
            getattr(hardware, reader)()
        except exception.Invalid as exc:
            problems.append(f'nova.virt.hardware.{reader}: {exc}')
    known = {cls.__name__ for cls in filters.all_filters()}
    for name in conf.filter_scheduler.enabled_filters:
        if name not in known:
            problems.append(f'[filter_scheduler] enabled_filters: this '
                            f'Nova has no filter {name}')
    problems.extend(_check_specs(plan.get('extra_specs', {})))
    return {'problems': problems, 'deprecated': deprecated}


def _validators():
    try:
        from nova.api.validation.extra_specs import validators
    except ImportError:     # Nova < 23 validates no extra spec
        return None
    if not validators.VALIDATORS:
        validators.load_validators()
    return validators


def _validator_for(validators, name):
    import re

    if name in validators.VALIDATORS:
        return validators.VALIDATORS[name]
    for validator in validators.VALIDATORS.values():
        if re.fullmatch(validator.name_regex, name):
            return validator
    return None


def _check_specs(specs):
    from nova import exception

    validators = _validators()
    if validators is None:
        return []
    problems = []
    for name, value in specs.items():
        if _validator_for(validators, name) is None:
            problems.append(f'extra spec {name}: this Nova has no '
                            'validator for it (an unknown spec)')
            continue
        try:
            validators.validate(name, value)
        except exception.ValidationError as exc:
            problems.append(f'extra spec {name}={value}: {exc}')
    return problems


def _nova_sources():
    """{relative path: text} of Nova's own modules, tests and option
    definitions left out: where the services read their options."""
    import nova

    root = os.path.dirname(nova.__file__)
    sources = {}
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel.split(os.sep)[0] in ('tests', 'conf'):
            dirs[:] = []
            continue
        for name in files:
            if name.endswith('.py') and not name.startswith('kvmtune'):
                path = os.path.join(folder, name)
                with open(path, encoding='utf-8') as handle:
                    sources['nova/' + os.path.relpath(path, root)] = \
                        handle.read()
    return sources


def _read_in(sources, section, option):
    """Nova modules that read the option (CONF.group.option, or
    CONF.option for [DEFAULT])."""
    import re

    group = '' if section == 'DEFAULT' else re.escape(section) + r'\.'
    pattern = re.compile(r'\bCONF\.' + group + re.escape(option) + r'\b',
                         re.IGNORECASE)
    return sorted(path for path, text in sources.items()
                  if pattern.search(text))


def _describe_options(conf, wanted):
    # Names that are an old spelling of another option: the new one is
    # the non-deprecated equivalent.
    renamed = {}
    for group_name, group in [('DEFAULT', None)] + [
            (name, name) for name in conf.list_all_sections()
            if name != 'DEFAULT']:
        opts = conf._groups[group]._opts if group else conf._opts
        for info in opts.values():
            for old in info['opt'].deprecated_opts or ():
                old_group = old.group or group_name
                renamed[(old_group, old.name or info['opt'].name)] = \
                    f'[{group_name}] {info["opt"].name}'
    answer = {}
    sources = _nova_sources()
    for section, option in wanted:
        opt = _opt(conf, section, option)
        key = f'{section}.{option}'
        if opt is None or opt.name != option:
            answer[key] = {'exists': False,
                           'replaced_by': renamed.get((section, option))}
            continue
        choices = getattr(opt.type, 'choices', None)
        default = opt.default
        answer[key] = {
            'exists': True,
            'deprecated_for_removal': bool(opt.deprecated_for_removal),
            'deprecated_since': opt.deprecated_since,
            'choices': sorted(str(c) for c in choices) if choices else None,
            'default': default if isinstance(
                default, (str, int, bool, list, type(None))) else str(
                    default),
            'replaced_by': renamed.get((section, option)),
            'read_in': _read_in(sources, section, option),
        }
    return answer


def _describe_specs(names):
    validators = _validators()
    answer = {}
    for name in names:
        validator = validators and _validator_for(validators, name)
        answer[name] = {
            'validated': bool(validator),
            'enum': (sorted(validator.value.get('enum') or []) or None)
            if validator else None,
        }
    return answer


def _features():
    """Behaviour kvmtune's notes depend on, found in Nova's source:
    ``libvirt_guest_iothread``, every libvirt guest gets an I/O thread
    (LibvirtDriver._get_guest_iothread, nova/virt/libvirt/driver.py)."""
    import nova

    path = os.path.join(os.path.dirname(nova.__file__), 'virt', 'libvirt',
                        'driver.py')
    with open(path, encoding='utf-8') as handle:
        driver = handle.read()
    return {'libvirt_guest_iothread': 'def _get_guest_iothread(' in driver}


def main():
    request = json.load(sys.stdin)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        import nova.conf
        from nova.scheduler import filters

        conf = nova.conf.CONF
        plans = {plan['id']: _check_plan(conf, plan)
                 for plan in request.get('plans', [])}
        _load(conf, {})
        answer = {
            'nova': importlib.metadata.version('nova'),
            'plans': plans,
            'options': _describe_options(conf, request.get('options', [])),
            'specs': _describe_specs(request.get('specs', [])),
            'filters': sorted(cls.__name__
                              for cls in filters.all_filters()),
            'features': _features(),
        }
    json.dump(answer, sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
