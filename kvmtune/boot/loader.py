"""How a host boots: which GRUB, where kvmtune's kernel arguments go, and
the distribution's tool that regenerates the boot entries.

Read from the host tree, never from the machine kvmtune runs on:

- ``grub-debian`` (Debian, Ubuntu and their ID_LIKE=debian kin):
  grub-mkconfig sources /etc/default/grub and then every
  /etc/default/grub.d/*.cfg (Debian's grub2-common,
  /usr/sbin/grub-mkconfig), so the arguments are a drop-in of their own,
  kvmtune.tuning.export.common.GRUB_FILE (the file ``kvmtune export``
  writes too), and ``update-grub`` regenerates /boot/grub/grub.cfg.
- ``grub-rhel`` (RHEL-likes whose /etc/default/grub does not set
  GRUB_ENABLE_BLSCFG=true: RHEL/CentOS 7 and such): their grub2-mkconfig
  reads /etc/default/grub only (no grub.d), so the arguments are a block of
  that file between kvmtune's markers, and ``grub2-mkconfig -o`` rewrites
  each grub.cfg the tree has (/boot/grub2/grub.cfg, /boot/efi/EFI/*/
  grub.cfg), as tripleo-ansible's roles/tripleo_kernel/tasks/kernelargs.yml
  does.
- ``grubby-bls`` (GRUB_ENABLE_BLSCFG=true and /boot/loader/entries/*.conf:
  RHEL 8 and later, Fedora): the entries carry their own options, so
  ``grubby --update-kernel=ALL --remove-args/--args`` edits them; the same
  block in /etc/default/grub keeps the arguments for a later grub2-mkconfig
  and tells the next run what kvmtune added (edpm-ansible's
  roles/edpm_kernel/tasks/kernelargs.yml keeps GRUB_EDPM_KERNEL_ARGS there
  the same way).

Anything else (no /etc/default/grub, another distribution, BLS without
entries) is an unknown bootloader: one InputError line, nothing written.

One argument per key: ``stage`` reads what the boot loader boots now
without kvmtune's own part (GRUB: GRUB_CMDLINE_LINUX and
GRUB_CMDLINE_LINUX_DEFAULT as grub-mkconfig would source them, plain
assignments only, anything else refused as doubtful; BLS: each entry's
``options``) and asks kvmtune.facts.cmdline which of its words kvmtune
replaces (an operator's isolcpus=, the pool of a planned size ...). GRUB
files are not edited: kvmtune's drop-in (or block) sets the two variables
to their value without those words, guarded by the value it read (an
operator who edits them later wins, and the next run sees it), then
appends the plan's arguments; grubby removes the words and adds the
arguments. The line the next boot gets is then read again by the kernel's
rules (cmdline.check_staged) before anything is written.
"""

from collections.abc import Sequence
import dataclasses
import glob
import os
import re

from kvmtune.errors import InputError
from kvmtune.facts import cmdline
from kvmtune import inputs
from kvmtune.tuning.export import common

DEFAULT_GRUB = 'etc/default/grub'
OS_RELEASE = ('etc/os-release', 'usr/lib/os-release')
BLS_ENTRIES = 'boot/loader/entries'
# The grub.cfg files a RHEL-like without BLS may boot from (BIOS, EFI).
RHEL_GRUB_CFGS = ('boot/grub2/grub.cfg', 'boot/efi/EFI/*/grub.cfg')
BEGIN = '# BEGIN kvmtune: kernel arguments (kvmtune boot apply; do not edit)'
END = '# END kvmtune'
_DEBIAN_IDS = {'debian', 'ubuntu'}
_RHEL_IDS = {'rhel', 'centos', 'fedora', 'rocky', 'almalinux', 'ol'}
_ARGS_LINE = re.compile(
    r'^GRUB_CMDLINE_LINUX="\$GRUB_CMDLINE_LINUX (?P<args>[^"]*)"$', re.M)
GRUB_D = 'etc/default/grub.d'
GRUBENV = ('boot/grub2/grubenv', 'boot/efi/EFI/redhat/grubenv')
CMDLINE_VARS = ('GRUB_CMDLINE_LINUX', 'GRUB_CMDLINE_LINUX_DEFAULT')
_ASSIGN = re.compile(r'^\s*(?:export\s+)?(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)='
                     r'(.*?)\s*\Z')
_REF = re.compile(r'\$(?:\{(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)\}|'
                  r'(GRUB_CMDLINE_LINUX(?:_DEFAULT)?)(?![A-Za-z0-9_]))')
_FIX = ('set the kernel arguments by hand (kvmtune plan shows them); '
        'kvmtune boot apply knows GRUB on Debian/Ubuntu and RHEL-likes')


@dataclasses.dataclass(frozen=True)
class Loader:
    """The boot loader of one host tree."""

    name: str           # 'grub-debian' | 'grub-rhel' | 'grubby-bls'
    config: str         # the file holding kvmtune's arguments (tree path)
    os_name: str        # os-release PRETTY_NAME, for messages
    # grub.cfg files grub2-mkconfig rewrites (grub-rhel only)
    grub_cfgs: tuple[str, ...] = ()


def os_release(root: str) -> dict[str, str]:
    """os-release(5) of the tree: KEY=value lines, values unquoted; {}
    when the tree has none."""
    for rel in OS_RELEASE:
        try:
            text = inputs.read_text(os.path.join(root, rel),
                                    max_bytes=64 * 1024)
        except InputError as exc:
            if exc.problem == 'no such file':
                continue
            raise
        fields = {}
        for line in text.splitlines():
            key, eq, value = line.strip().partition('=')
            if eq and key and not key.startswith('#'):
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] \
                        and value[0] in '"\'':
                    value = value[1:-1]
                fields[key] = value
        return fields
    return {}


def _family(fields: dict[str, str]) -> str | None:
    ids = {fields.get('ID', '')} | set(fields.get('ID_LIKE', '').split())
    if ids & _DEBIAN_IDS:
        return 'debian'
    if ids & _RHEL_IDS:
        return 'rhel'
    return None


def _bls_enabled(grub_text: str) -> bool:
    """GRUB_ENABLE_BLSCFG=true set in /etc/default/grub (the last
    assignment wins, as when the shell sources it)."""
    values = re.findall(r'^\s*GRUB_ENABLE_BLSCFG=["\']?(\w+)["\']?\s*$',
                        grub_text, re.M)
    return bool(values) and values[-1] == 'true'


def read_default_grub(root: str) -> str | None:
    """/etc/default/grub of the tree, or None when it has none."""
    try:
        return inputs.read_text(os.path.join(root, DEFAULT_GRUB),
                                max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return None
        raise


def detect(root: str) -> Loader:
    """The boot loader of the tree ``root``; InputError (one line, the
    caller writes nothing) when kvmtune does not know how it boots."""
    fields = os_release(root)
    name = fields.get('PRETTY_NAME') or fields.get('ID') or 'unknown'
    family = _family(fields)
    if family is None:
        raise InputError(
            f'unknown bootloader: the distribution {name!r} is neither '
            'Debian/Ubuntu nor a RHEL-like (etc/os-release ID and ID_LIKE)',
            source=root, key='etc/os-release', fix=_FIX)
    grub = read_default_grub(root)
    if grub is None:
        raise InputError(f'unknown bootloader: {name} without '
                         'etc/default/grub (not booted by GRUB?)',
                         source=root, key=DEFAULT_GRUB, fix=_FIX)
    if family == 'debian':
        return Loader('grub-debian', common.GRUB_FILE, name)
    if _bls_enabled(grub):
        if not glob.glob(os.path.join(root, BLS_ENTRIES, '*.conf')):
            raise InputError(
                'unknown bootloader: GRUB_ENABLE_BLSCFG=true but no '
                f'{BLS_ENTRIES}/*.conf', source=root, key=DEFAULT_GRUB,
                fix='check how this host boots (grubby --info=ALL); '
                    + _FIX)
        return Loader('grubby-bls', DEFAULT_GRUB, name)
    cfgs = tuple(sorted(
        os.path.relpath(path, root) for pattern in RHEL_GRUB_CFGS
        for path in glob.glob(os.path.join(root, pattern))))
    if not cfgs:
        raise InputError(
            f'unknown bootloader: {name} without BLS and without a grub.cfg '
            f'({" or ".join(RHEL_GRUB_CFGS)})', source=root,
            key='boot', fix=_FIX)
    return Loader('grub-rhel', DEFAULT_GRUB, name, cfgs)


def _header(profile: str) -> str:
    return (f'# Written by kvmtune boot apply --profile {profile}: the '
            'kernel arguments\n# of its plan for this host. Regenerate the '
            'boot entries and reboot\n# for them to take effect.\n')


def owned_args(loader: Loader, root: str) -> list[str]:
    """The kernel arguments kvmtune's file (or block) holds now."""
    try:
        text = inputs.read_text(os.path.join(root, loader.config),
                                max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return []
        raise
    if loader.name != 'grub-debian':
        text = _block(text)[1]
    return [arg for match in _ARGS_LINE.finditer(text)
            for arg in match.group('args').split()]


def _block(text: str) -> tuple[str, str]:
    """(/etc/default/grub without kvmtune's block, the block)."""
    start = text.find(BEGIN + '\n')
    if start < 0:
        return text, ''
    stop = text.find(END + '\n', start)
    if stop < 0:
        raise InputError('kvmtune\'s block has a BEGIN line but no END line',
                         source=DEFAULT_GRUB, key=BEGIN,
                         fix=f'put back the line {END!r} after it, or '
                             'remove the block')
    stop += len(END) + 1
    return text[:start] + text[stop:], text[start:stop]


def _resets(resets: dict[str, tuple[str, str]]) -> str:
    """Shell that sets each GRUB variable (name -> (value read, value
    without kvmtune's keys)) only while it still holds the value read."""
    return ''.join(
        f'if [ "${var}" = \'{now}\' ]; then\n    {var}=\'{then}\'\nfi\n'
        for var, (now, then) in resets.items())


def render(loader: Loader, root: str, profile: str,
           args: list[str],
           resets: dict[str, tuple[str, str]] | None = None) -> str:
    """The new content of ``loader.config`` holding ``args`` (and, from
    ``stage``, the ``resets`` that take the keys kvmtune sets out of the
    operator's GRUB variables)."""
    body = _header(profile) + _resets(resets or {}) + (
        common.grub_line(args) if args else
        '# (none: the plan has no kernel argument)\n')
    if loader.name == 'grub-debian':
        return body
    current = read_default_grub(root) or ''
    rest = _block(current)[0]
    if rest and not rest.endswith('\n'):
        rest += '\n'
    return f'{rest}{BEGIN}\n{body}{END}\n'


def commands(loader: Loader, remove: list[str], new: list[str]
             ) -> list[list[str]]:
    """The distribution's commands that put ``new`` (kvmtune's arguments)
    into the boot entries, after the file is written; grubby first
    removes the words ``remove`` (kvmtune's earlier ones the plan dropped,
    and the words of the keys it sets: one argument per key)."""
    if loader.name == 'grub-debian':
        # /usr/sbin/update-grub: grub-mkconfig -o /boot/grub/grub.cfg
        return [['update-grub']]
    if loader.name == 'grub-rhel':
        return [['grub2-mkconfig', '-o', '/' + cfg]
                for cfg in loader.grub_cfgs]
    steps = []
    if remove:
        steps.append(['grubby', '--update-kernel=ALL',
                      '--remove-args=' + ' '.join(remove)])
    if new:
        steps.append(['grubby', '--update-kernel=ALL',
                      '--args=' + ' '.join(new)])
    return steps


# -- what the boot loader boots: one argument per key ---------------------

@dataclasses.dataclass
class Staging:
    """What kvmtune stages on one tree: the words it removes from the
    boot loader's lines, the arguments it adds, each line as the next boot
    gets it, and the GRUB variables it resets (name -> (now, then))."""

    drop: list[str]
    args: list[str]
    lines: list[str]
    resets: dict[str, tuple[str, str]] = dataclasses.field(
        default_factory=dict)
    # grubby --remove-args words (grubby-bls only): see _grubby_remove
    remove: list[str] = dataclasses.field(default_factory=list)


def _value(raw: str, values: dict[str, str]) -> str | None:
    """The value of a plain shell assignment's right side, or None when
    it is shell code kvmtune does not evaluate."""
    if len(raw) >= 2 and raw[0] == raw[-1] == "'" and "'" not in raw[1:-1]:
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        parts = _REF.split(raw[1:-1])
        out = []
        for n, part in enumerate(parts):
            if n % 3 == 0:
                if part and re.search(r'["$`\\]', part):
                    return None
                out.append(part or '')
            elif part:
                out.append(values.get(part, ''))
        return ''.join(out)
    if not re.search(r'[\s"\'$`\\;&|<>()]', raw):
        return raw
    return None


def _evaluate(values: dict[str, str], text: str, source: str) -> None:
    """Source ``text`` for the two variables as the shell would; refuse
    what cannot be told without running it."""
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith('#') \
                or 'GRUB_CMDLINE_LINUX' not in stripped:
            continue
        match = _ASSIGN.match(line)
        value = None if match is None else _value(match.group(2), values)
        if match is None or value is None:
            raise InputError(
                f'line {number} sets or uses the kernel command line in a '
                'way kvmtune does not evaluate, so what GRUB would boot '
                'cannot be told; refused', source=source,
                key=stripped[:60],
                fix='make it a plain assignment (GRUB_CMDLINE_LINUX="..."'
                    ' or "$GRUB_CMDLINE_LINUX ...")')
        values[match.group(1)] = value


def _grub_sources(loader: Loader, root: str
                  ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The files grub-mkconfig sources (path, text), without kvmtune's
    own: those before kvmtune's drop-in (or block) and those after it.
    grub-mkconfig (Debian's /usr/sbin/grub-mkconfig) sources
    /etc/default/grub, then /etc/default/grub.d/*.cfg in glob order."""
    grub = read_default_grub(root) or ''
    if loader.name != 'grub-debian':
        return [('/' + DEFAULT_GRUB, _block(grub)[0])], []
    before = [('/' + DEFAULT_GRUB, grub)]
    after: list[tuple[str, str]] = []
    mine = os.path.basename(loader.config)
    for path in sorted(glob.glob(os.path.join(root, GRUB_D, '*.cfg'))):
        name = os.path.basename(path)
        if name == mine:
            continue
        text = inputs.read_text(path, max_bytes=1 << 20)
        (before if name < mine else after).append(
            ('/' + os.path.join(GRUB_D, name), text))
    return before, after


def _grubenv(root: str) -> dict[str, str]:
    """GRUB's environment block (tuned_params, kernelopts ...), {} when
    the tree has none."""
    for rel in GRUBENV:
        try:
            text = inputs.read_text(os.path.join(root, rel),
                                    max_bytes=64 * 1024)
        except InputError:
            continue
        return {key: value for key, eq, value in
                (line.partition('=') for line in text.splitlines())
                if eq and not key.startswith('#')}
    return {}


def _bls_entries(root: str) -> list[tuple[str, list[str]]]:
    """(entry path, words of its options line) of each BLS entry."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, BLS_ENTRIES, '*.conf'))):
        text = inputs.read_text(path, max_bytes=1 << 20)
        options = [line.split(None, 1)[1] if len(line.split(None, 1)) > 1
                   else '' for line in text.splitlines()
                   if line.split(None, 1)[:1] == ['options']]
        found.append(('/' + os.path.relpath(path, root),
                      cmdline.words(options[-1] if options else '',
                                    init=True)))
    return found


def _expand(words: list[str], env: dict[str, str]) -> list[str]:
    """A BLS options line as GRUB boots it: ``$name`` words from its
    environment block (tuned puts its arguments in $tuned_params)."""
    out: list[str] = []
    for word in words:
        if word.startswith('$') and word[1:] in env:
            out += cmdline.words(env[word[1:]], init=True)
        elif not word.startswith('$'):
            out.append(word)
    return out


def _without(value: str, drop: Sequence[str]) -> str:
    return ' '.join(word for word in cmdline.words(value, init=True)
                    if word not in drop)


def stage(loader: Loader, root: str, planned: Sequence[str],
          old: Sequence[str], booted: str) -> Staging:
    """What boot apply stages on ``root`` for the plan's arguments
    (``planned``; ``old``: kvmtune's earlier ones; ``booted``: the booted
    command line, whose isolcpus flags count as the operator's when the
    boot loader's files show none): one argument per key, proven by
    reading the line each boot entry would get (InputError otherwise)."""
    flags_from = cmdline.read(booted)
    if loader.name == 'grubby-bls':
        env = _grubenv(root)
        entries = _bls_entries(root)
        drop: list[str] = []
        args: list[str] | None = None
        for _, words in entries:
            removed, wanted = cmdline.stage(planned, words, old)
            drop += [word for word in removed if word not in drop]
            if args is None or cmdline.read(words).isolcpus_flags:
                args = wanted
        args = _grubby_order(_with_flags(planned, args or list(planned),
                                         flags_from))
        remove = _grubby_remove(planned, drop, entries)
        lines = []
        for path, words in entries:
            now = _expand(words, env)
            try:
                edited = grubby_update(words, remove, args)
            except ValueError as exc:
                raise InputError(
                    f'grubby would fail to add {exc}: the entry has '
                    f'{cmdline.key_of(str(exc))}= inside another argument, '
                    'and grubby-bls then edits it with a sed the comma '
                    'breaks', source=path, key='options',
                    fix='move that argument out of the entry\'s options '
                        '(tuned keeps its own in $tuned_params), or set the '
                        'kernel arguments by hand') from None
            meant = [w for w in words if w not in drop] + args
            if sorted(edited) != sorted(meant):
                lost = [w for w in meant if w not in edited]
                raise InputError(
                    'grubby would not stage the plan on this entry: it '
                    'replaces the first key= it finds instead of adding '
                    f'another (grubby-bls update_args); {" ".join(lost)} '
                    'would be lost', source=path, key='options',
                    fix='remove the other argument of that key from the '
                        'entries first (grubby --update-kernel=ALL '
                        '--remove-args=...), or set the kernel arguments '
                        'by hand')
            then = _expand(edited, env)
            cmdline.check_staged(planned, cmdline.read(now), ' '.join(then),
                                 path)
            lines.append(' '.join(then))
        return Staging(drop, args, lines, remove=remove)
    before, after = _grub_sources(loader, root)
    values = dict.fromkeys(CMDLINE_VARS, '')
    for source, text in before:
        _evaluate(values, text, source)
    line_now = ' '.join(values[var] for var in CMDLINE_VARS)
    drop, args = cmdline.stage(planned, cmdline.words(line_now, init=True),
                               old)
    args = _with_flags(planned, args, flags_from)
    resets = {}
    for var in CMDLINE_VARS:
        reset = _without(values[var], drop)
        if reset != values[var]:
            for text in (values[var], reset):
                if "'" in text:
                    raise InputError(
                        f'{var} holds a single quote; kvmtune cannot '
                        'rewrite it', source='/' + DEFAULT_GRUB, key=var,
                        fix=f'remove {" ".join(drop)} from it by hand')
            resets[var] = (values[var], reset)
            values[var] = reset
    values['GRUB_CMDLINE_LINUX'] = ' '.join(
        [values['GRUB_CMDLINE_LINUX']] + args).strip()
    for source, text in after:
        _evaluate(values, text, source)
    line = ' '.join(values[var] for var in CMDLINE_VARS).strip()
    cmdline.check_staged(planned, cmdline.read(line_now), line,
                         '/' + loader.config)
    return Staging(drop, args, [line], resets)


def grubby_update(words: Sequence[str], remove: Sequence[str],
                  add: Sequence[str]) -> list[str]:
    """An entry's options after ``grubby --update-kernel=ALL
    --remove-args=REMOVE`` then ``--args=ADD``, as grubby-bls does it
    (rhboot/grubby, grubby-bls: update_args): each removed word takes out
    the first match of ``$arg[^ ]*``; each added key=value replaces the
    first match of ``key=[^ ]*`` when ``key=`` appears anywhere in the
    line (so hugepagesz= also matches inside default_hugepagesz=: see
    _grubby_order), else is appended. ValueError naming the argument when
    that replacement would hold a comma, which breaks the script's sed.
    """
    args = ' '.join(words)
    for arg in remove:
        args = ' '.join(re.sub(re.escape(arg) + r'[^ ]*', '', args,
                               count=1).split())
    for arg in add:
        key, eq, _ = arg.partition('=')
        if eq and key + '=' in args:
            if ',' in arg:
                # its sed (s,key=[^ ]*,arg,) ends at the comma: the
                # script fails and the entry's options are lost
                raise ValueError(arg)
            args = re.sub(re.escape(key) + r'=[^ ]*', lambda _: arg, args,
                          count=1)
        elif arg not in args.split():
            args = f'{args} {arg}'.strip()
    return args.split()


def _grubby_order(args: list[str]) -> list[str]:
    """``args`` with those holding another one's ``key=`` inside
    (default_hugepagesz=1G holds hugepagesz=) last: grubby-bls would take
    an earlier one for the key it looks for (grubby_update)."""
    keys = {cmdline.key_of(arg) for arg in args}

    def late(arg: str) -> bool:
        return any(key != cmdline.key_of(arg) and key + '=' in arg
                   for key in keys)
    return [a for a in args if not late(a)] + [a for a in args if late(a)]


def _grubby_remove(planned: Sequence[str], drop: list[str],
                   entries: list[tuple[str, list[str]]]) -> list[str]:
    """The --remove-args words that take ``drop`` out of the entries.

    grubby-bls (rhboot/grubby, update_args) removes, for each word given,
    the first match of ``sed -e "s,$arg[^ ]*,,"``: a word holding a comma
    (isolcpus=managed_irq,domain,2-7) would break that sed, and a key alone
    also matches inside another word (tuned.non_isolcpus=). So each word
    is given up to its first comma, which the ``[^ ]*`` completes, once
    per time it is in an entry; grubby_update checks the result."""
    remove: list[str] = []
    for word in drop:
        times = max((words.count(word) for _, words in entries), default=1)
        remove += [word.split(',')[0]] * max(times, 1)
    return remove


def _with_flags(planned: Sequence[str], args: list[str],
                booted: cmdline.Line) -> list[str]:
    """``args`` whose isolcpus keeps the booted line's flags when the
    boot loader's files had no isolcpus of their own."""
    if any(arg.startswith('isolcpus=') and arg not in planned
           for arg in args):
        return args
    return cmdline.staged_args(args, booted)
