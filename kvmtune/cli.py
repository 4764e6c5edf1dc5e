"""The ``kvmtune`` command.

Each sub-command lives in ``kvmtune/cmd/<name>.py`` with two functions:
``add_arguments(parser)`` and ``run(args) -> int``. Those modules are imported
to build the parser, so their top level imports only the standard library and
``kvmtune.errors``; anything heavier (oslo.config, stevedore, openstacksdk) is
imported inside ``run``. ``kvmtune host inspect`` runs on every compute host
and must start fast.

Every registered command is importable, or kvmtune says it is broken: a
command is never left out quietly. A command that needs an optional part
(``kvmtune[bench]``, ``kvmtune[cloud]``: kvmtune.extras) says which
``pip install`` to run when that part is missing, in one line, exit 2.

Plugins: another distribution adds a command with an entry point in the
group ``kvmtune.cli`` (PLUGIN_GROUP): its name is the command words joined
by ``_`` (python-openstackclient's way: ``disk_wipe`` is ``kvmtune disk
wipe``), its value ``module:attribute``, an object with the same
``add_arguments(parser)`` and ``run(args)`` as a kvmtune.cmd module (its
``HELP``, else the first line of its docstring, is the one-line help). The
built-in commands are the COMMANDS table: scanning the installed
distributions for entry points costs about 50 ms, so main() scans only
when the command line names no built-in command (a plugin's command, a
group, ``--help``, no command at all). A plugin command that would shadow
a built-in one (or another plugin's), or does not load, is refused with
one line on stderr and left out; the other commands work as before.
"""

import argparse
from collections.abc import Iterator
from collections.abc import Sequence
import importlib
import sys
from typing import Any
from typing import NamedTuple
from typing import TYPE_CHECKING

import kvmtune
from kvmtune.errors import EXIT_ERROR
from kvmtune.errors import EXIT_OK
from kvmtune.errors import KvmtuneError
from kvmtune import extras

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

# A bug in kvmtune (an exception nobody expected) exits 2, as an error does:
# never 1, which ``verify`` and ``cloud status`` use for "not as planned"
# (doc/design.md 9.5), so a crash never reads as drift.
INTERNAL_ERROR = EXIT_ERROR

DESCRIPTION = """\
Tune KVM compute hosts for near bare-metal guests, and measure it.

  facts   -> host inspect        what this host has (read from /proc and /sys)
  plan    -> plan, profile       what a tuning profile needs here
  apply   -> nova-conf apply     nova.conf, edited in place
             flavor apply        tuned flavors (openstacksdk)
             host tag            Placement traits for EPT/nested/1G/vhost-net
             boot apply          kernel arguments (GRUB), modprobe.d, reboot
  check   -> verify              host, nova-compute, cloud, guests as planned
             capacity            how many more tuned guests fit
  fleet   -> rollout             a profile over an Ansible inventory
             rollout-report      the canary gate's measurements and verdicts
  measure -> image build, bench local, bench nested, baseline
             rally env           Rally's database and environment [bench]
             report              compare runs: table, fit and plots [bench]
             main-job            all of it on the test cloud [bench]
"""

# (command words, module under kvmtune.cmd, one-line help[, extra[,
# modules]]): a command that needs an optional part of kvmtune (setup.cfg
# [extras], kvmtune.extras) names it, and the modules of it it imports
# (default: all of the extra's), and says which pip install to run when
# they are missing.
COMMANDS: list[tuple[Any, ...]] = [
    (('host', 'inspect'), 'host_inspect',
     'Read this host\'s (or a captured tree\'s) KVM, NUMA, hugepage facts.'),
    (('host', 'capture'), 'host_capture',
     'Copy the /proc and /sys files kvmtune reads into a directory.'),
    (('host', 'tag'), 'host_tag',
     'Set kvmtune traits on the compute node\'s resource provider.'),
    (('profile', 'list'), 'profile_list', 'List the tuning profiles.'),
    (('profile', 'show'), 'profile_show', 'Show one tuning profile.'),
    (('profile', 'validate'), 'profile_validate',
     'Check a profile YAML file.'),
    (('plan',), 'plan',
     'Show the nova.conf, kernel, modprobe and flavor changes for a profile.'),
    (('nova-conf', 'apply'), 'nova_conf_apply',
     'Write a profile\'s options into nova.conf, in place.'),
    (('pages', 'apply'), 'pages_apply',
     'Set huge page pools per NUMA node and page size, now.'),
    (('boot', 'apply'), 'boot_apply',
     'Write the kernel arguments and module options a profile needs at '
     'boot.'),
    (('rollout',), 'rollout',
     'Roll a profile out over an inventory: drain, apply, reboot, verify.'),
    (('verify',), 'verify',
     'Check that the host, nova-compute, cloud and guests run as planned.'),
    (('capacity',), 'capacity',
     'Count how many more guests of each flavor fit, per host and in all.'),
    (('rollout-step',), 'rollout_step',
     'One rollout step on one host: preflight, disable, drain, gate, '
     'enable.'),
    (('rollout-report',), 'rollout_report',
     'The canary gate\'s measurements in a rollout state file: table, '
     'page.'),
    (('export',), 'export',
     'Write a profile\'s plan as a deployment tool\'s override files.'),
    (('flavor', 'apply'), 'flavor_apply',
     'Create or update the tuned flavor for a profile.'),
    (('flavor', 'diff'), 'flavor_diff',
     'Show how a flavor differs from what a profile wants.'),
    (('flavor', 'remove'), 'flavor_remove',
     'Remove a profile\'s extra specs, or its tuned flavor.'),
    (('image', 'build'), 'image_build',
     'Build the benchmark guest image.'),
    (('baseline',), 'baseline',
     'Run a workload on the bare host and save the result.'),
    (('bench', 'local'), 'bench_local',
     'Boot N benchmark guests with QEMU here and run a workload.'),
    (('bench', 'nested'), 'bench_nested',
     'One workload on the host, in a guest (L1) and in its guest (L2).'),
    (('cloud',), 'cloud',
     'The single-host test cloud: install, up, down, status, env.'),
    (('rally', 'task-path'), 'rally_task_path',
     'Print where an installed Rally task file is (disk-scaling, ...).'),
    (('monitoring', 'rules-path'), 'monitoring_rules_path',
     'Print where the installed Prometheus alert rules are.'),
    (('rally', 'env'), 'rally_env',
     'Give plain rally a database and an environment for a cloud.',
     'bench', ('rally', 'rally_openstack')),
    (('report',), 'report',
     'Compare result files (sweeps, bench runs, baselines): table, plot.',
     'bench',
     ('numpy', 'matplotlib')),
    (('main-job',), 'main_job',
     'Image, cloud, default and tuned flavors, Rally sweep, report.',
     'bench'),
]


# The entry point group a plugin adds its commands to (see the docstring).
PLUGIN_GROUP = 'kvmtune.cli'

# The global options that take a value (the next word, or after "="), so
# _names_builtin can step over it.
_VALUE_OPTIONS = ('--config-file',)
_FLAG_OPTIONS = ('--debug',)


class CommandImportError(Exception):
    """A registered command's module does not import: a broken install or
    a bug, never a command to leave out quietly."""


class Command(NamedTuple):
    """One command of the parser: its words, the object with
    add_arguments() and run() (a kvmtune.cmd module, or what a plugin's
    entry point names), its one-line help and (extra, modules) or None."""

    words: tuple[str, ...]
    module: Any
    help: str
    extra: tuple[str, Any] | None


def _load_commands(plugins: bool = False) -> Iterator[Command]:
    """Yield every built-in command of COMMANDS, then (``plugins``) the
    commands plugins add through PLUGIN_GROUP."""
    taken = []
    for words, module, help_, *needs in COMMANDS:
        name = 'kvmtune.cmd.' + module
        try:
            mod = importlib.import_module(name)
        except Exception as exc:
            raise CommandImportError(
                f'command "{" ".join(words)}": {name} does not import: '
                f'{type(exc).__name__}: {exc}') from exc
        extra = (needs[0], needs[1] if len(needs) > 1 else None) \
            if needs else None
        taken.append(tuple(words))
        yield Command(tuple(words), mod, help_, extra)
    if plugins:
        yield from _load_plugins(taken)


def registered(plugins: bool = False) -> list[Command]:
    """The commands build_parser() makes a parser of: the built-in ones,
    and with ``plugins`` the ones plugins add (the CLI reference shows
    both)."""
    return list(_load_commands(plugins))


def _plugin_entry_points() -> list['EntryPoint']:
    """The entry points of PLUGIN_GROUP, in a stable order (the first of
    two that clash wins, and the other is refused)."""
    from importlib import metadata

    return sorted(metadata.entry_points(group=PLUGIN_GROUP),
                  key=lambda ep: (ep.name, ep.value))


def _refuse(what: str, fix: str) -> None:
    print(f'kvmtune: warning: {what}; refused (fix: {fix})',
          file=sys.stderr)


def _load_plugins(taken: list[tuple[str, ...]]) -> Iterator[Command]:
    """Yield the plugins' commands; refuse, with one line each, one that
    names no words, shadows a command in ``taken`` (the same words, a
    group of it or one of its sub-commands: argparse would give the
    command line to one of them silently), or does not load."""
    for ep in _plugin_entry_points():
        words = tuple(ep.name.replace('_', ' ').split())
        dist = (f'{ep.dist.name} {ep.dist.version}' if ep.dist is not None
                else 'an unknown distribution')
        name = ' '.join(words) or repr(ep.name)
        what = f'plugin command "{name}" ({ep.value}, from {dist})'
        fix = (f'rename it in the {PLUGIN_GROUP} entry points of {dist}, '
               'or uninstall it')
        clash = next((t for t in taken if t[:len(words)] == words
                      or words[:len(t)] == t), None)
        if not words:
            _refuse(f'{what} names no command words', fix)
            continue
        if clash is not None:
            _refuse(f'{what} would shadow "kvmtune {" ".join(clash)}"', fix)
            continue
        try:
            obj = ep.load()
            if not (callable(getattr(obj, 'add_arguments', None))
                    and callable(getattr(obj, 'run', None))):
                raise TypeError('it has no add_arguments(parser) and '
                                'run(args)')
            # its options, once, where a failure cannot break the parser
            obj.add_arguments(_Parser(prog='kvmtune ' + name))
        except Exception as exc:
            msg = ' '.join(f'{type(exc).__name__}: {exc}'.split())
            _refuse(f'{what} does not load: {msg}',
                    f'reinstall or uninstall {dist}')
            continue
        doc = (getattr(obj, '__doc__', None) or '').strip()
        help_ = getattr(obj, 'HELP', None) or \
            (doc.splitlines()[0] if doc else '')
        taken.append(words)
        yield Command(words, obj, f'{help_} [{dist}]'.lstrip(), None)


def _names_builtin(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs a built-in command (its words come first,
    after the global options): then the parser needs no plugin. Help
    before the command, no command, a group's name alone or any word no
    built-in has all need them (argparse lists or runs plugin commands
    there)."""
    words: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        if token == '--':
            words.extend(tokens)
            break
        if token.startswith('-'):
            if words:
                break  # the command's own options
            option, eq, _ = token.partition('=')
            # argparse takes any unique prefix of a long option
            if len(option) > 2 and not eq and any(
                    full.startswith(option) for full in _VALUE_OPTIONS):
                next(tokens, None)
                continue
            if len(option) > 2 and any(
                    full.startswith(option)
                    for full in _VALUE_OPTIONS + _FLAG_OPTIONS):
                continue
            return False  # -h, --help, or an option argparse refuses
        words.append(token)
    return any(tuple(words[:len(command[0])]) == tuple(command[0])
               for command in COMMANDS)


class _StoreOnce(argparse._StoreAction):
    """A single-valued option given twice is refused, not silently the last one
    (``--target kolla --target helm`` exported for helm only;
    tests/unit/test_hostile.py). Repeatable options say so with
    action='append'."""

    def __call__(self, parser: argparse.ArgumentParser,
                 namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string is not None:
            # Which options this parse has set (a Namespace is not
            # hashable: the record lives on it, like _run and _extra).
            seen = vars(namespace).setdefault('_given', set())
            if self.dest in seen:
                raise argparse.ArgumentError(
                    self, 'given more than once (it takes one value; '
                          'give it once)')
            seen.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _Parser(argparse.ArgumentParser):
    """kvmtune's parsers (and their sub-parsers): plain options once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register('action', None, _StoreOnce)
        self.register('action', 'store', _StoreOnce)


def build_parser(commands: Sequence[Command] | None = None
                 ) -> argparse.ArgumentParser:
    """The parser of ``commands`` (default: the built-in ones)."""
    if commands is None:
        commands = registered()
    parser = _Parser(
        prog='kvmtune', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='PATH',
                        help='kvmtune.conf to read (repeatable); default '
                             '/etc/kvmtune/kvmtune.conf when it exists.')
    parser.add_argument('--debug', action='store_true',
                        help='Show tracebacks for unexpected errors.')
    parser.add_argument('--version', action='store_true',
                        help='Print kvmtune\'s version and exit.')
    top = parser.add_subparsers(dest='command', metavar='COMMAND')
    groups: dict[tuple[str, ...], Any] = {}
    for words, mod, help_, extra in commands:
        subparsers = top
        for depth, word in enumerate(words[:-1]):
            key = words[:depth + 1]
            if key not in groups:
                group = subparsers.add_parser(word, help=f'{word} commands')
                groups[key] = group.add_subparsers(
                    dest='_'.join(key), metavar='SUBCOMMAND')
                groups[key].required = True
            subparsers = groups[key]
        sub = subparsers.add_parser(
            words[-1], help=help_, description=(mod.__doc__ or help_),
            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sub)
        sub.set_defaults(_run=mod.run, _extra=extra,
                         _name='kvmtune ' + ' '.join(words))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        parser = build_parser(registered(
            plugins=not _names_builtin(argv)))
    except CommandImportError as exc:
        print(f'kvmtune: internal error: {exc} (reinstall kvmtune, or '
              'report it)', file=sys.stderr)
        return INTERNAL_ERROR
    args = parser.parse_args(argv)
    if args.version:            # pbr's, looked up only now
        print(f'kvmtune {kvmtune.__version__}')
        return EXIT_OK
    if not getattr(args, '_run', None):
        parser.print_help()
        return EXIT_ERROR
    try:
        from kvmtune.cmd import output
        output.take_renamed(args)
        if args._extra:
            # _extra is (extra, modules): two positionals
            extras.require(*args._extra, what=args._name)  # type: ignore[misc]
        return args._run(args) or EXIT_OK
    except ModuleNotFoundError as exc:
        extra = extras.extra_of(exc.name)
        if extra is None:
            return _internal_error(args, exc)
        print(f'kvmtune: error: {args._name} needs the {extra} extra '
              f'(missing: {exc.name}) (fix: {extras.install_hint(extra)})',
              file=sys.stderr)
        return EXIT_ERROR
    except KvmtuneError as exc:
        print(f'kvmtune: error: {exc.line()}', file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print('kvmtune: interrupted', file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # never a traceback unless asked for
        return _internal_error(args, exc)


def _internal_error(args: argparse.Namespace, exc: BaseException) -> int:
    if args.debug:
        raise exc
    msg = ' '.join(f'{type(exc).__name__}: {exc}'.split())
    print(f'kvmtune: internal error: {msg} (run with --debug for the '
          'traceback, and report it)', file=sys.stderr)
    return INTERNAL_ERROR


if __name__ == '__main__':
    sys.exit(main())
