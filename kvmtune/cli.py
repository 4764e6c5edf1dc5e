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
"""

import argparse
import importlib
import sys
from collections.abc import Iterator
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from kvmtune import extras
from kvmtune.errors import KvmtuneError

# A bug in kvmtune (an exception nobody expected) exits 2, as an error does:
# never 1, which ``verify`` and ``cloud status`` use for "not as planned"
# (doc/design.md 9.5), so a crash never reads as drift.
INTERNAL_ERROR = 2

DESCRIPTION = """\
Tune KVM compute hosts for near bare-metal guests, and measure it.

  facts   -> host inspect        what this host has (read from /proc and /sys)
  plan    -> plan, profile       what a tuning profile needs here
  apply   -> nova-conf apply     nova.conf, edited in place
             flavor apply        tuned flavors (openstacksdk)
             host tag            Placement traits for EPT/nested/1G/vhost-net
  check   -> verify              host, nova-compute, cloud, guests as planned
             capacity            how many more tuned guests fit
  measure -> image build, bench local, bench nested, baseline
             rally env           Rally's database and environment [bench]
             report              compare runs: table, fit and plots [bench]
             main-job            all of it on the embedded cloud [bench]
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
    (('verify',), 'verify',
     'Check that the host, nova-compute, cloud and guests run as planned.'),
    (('capacity',), 'capacity',
     'Count how many more guests of each flavor fit, per host and in all.'),
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
     'The embedded single-host test cloud: install, up, down, status, env.'),
    (('rally', 'task-path'), 'rally_task_path',
     'Print where an installed Rally task file is (disk-scaling, ...).'),
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


class CommandImportError(Exception):
    """A registered command's module does not import: a broken install or
    a bug, never a command to leave out quietly."""


def _load_commands() -> Iterator[tuple[Any, ModuleType, str, Any]]:
    """Yield (words, module, help, (extra, modules) or None) of every
    registered command."""
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
        yield words, mod, help_, extra


class _StoreOnce(argparse._StoreAction):
    """A single-valued option given twice is refused, not silently the
    last one (``--target kolla --target helm`` exported for helm only;
    issue 26). Repeatable options say so with action='append'."""

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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog='kvmtune', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='PATH',
                        help='kvmtune.conf to read (repeatable); default '
                             '/etc/kvmtune/kvmtune.conf when it exists.')
    parser.add_argument('--debug', action='store_true',
                        help='Show tracebacks for unexpected errors.')
    top = parser.add_subparsers(dest='command', metavar='COMMAND')
    groups: dict[tuple[str, ...], Any] = {}
    for words, mod, help_, extra in _load_commands():
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
    try:
        parser = build_parser()
    except CommandImportError as exc:
        print(f'kvmtune: internal error: {exc} (reinstall kvmtune, or '
              'report it)', file=sys.stderr)
        return INTERNAL_ERROR
    args = parser.parse_args(argv)
    if not getattr(args, '_run', None):
        parser.print_help()
        return 2
    try:
        from kvmtune.cmd import output
        output.take_renamed(args)
        if args._extra:
            # _extra is (extra, modules): two positionals
            extras.require(*args._extra, what=args._name)  # type: ignore[misc]
        return args._run(args) or 0
    except ModuleNotFoundError as exc:
        extra = extras.extra_of(exc.name)
        if extra is None:
            return _internal_error(args, exc)
        print(f'kvmtune: error: {args._name} needs the {extra} extra '
              f'(missing: {exc.name}) (fix: {extras.install_hint(extra)})',
              file=sys.stderr)
        return 2
    except KvmtuneError as exc:
        print(f'kvmtune: error: {exc.line()}', file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print('kvmtune: interrupted', file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
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
