"""Host trees that boot: a copy of a real capture (tests/fixtures/hosts)
with a distribution's boot files laid over it (tests/fixtures/boot).

Captures hold /proc, /sys and /dev only; ``kvmtune boot apply`` also reads
how the host boots (etc/os-release, etc/default/grub, boot/...). Each
distribution directory is paired with a capture whose booted kernel is of
that distribution (tests/fixtures/boot/README.md).
"""

import os
import pathlib
import re
import shutil

from tests import paths

BOOT = os.path.join(paths.FIXTURES, 'boot')
# distribution files -> the capture they are laid over
CAPTURES = {
    'debian-12': os.path.join('real', '20em64t-hybrid-1p6c2t+2ca4co1t'),
    'rhel-9-bls': 'intel-2s-smt-ept-1g',
    'rhel-7': os.path.join('real', '32intel64-2p8co2t+8ve'),
}


def make(dest, distro, capture=None):
    """Copy ``capture`` (default: the one paired with ``distro``) to
    ``dest`` and lay ``distro``'s boot files over it; returns ``dest``."""
    capture = capture or CAPTURES[distro]
    shutil.copytree(os.path.join(paths.HOSTS, capture), dest, symlinks=True)
    shutil.copytree(os.path.join(BOOT, distro), dest, symlinks=True,
                    dirs_exist_ok=True)
    return dest


def snapshot(root):
    """{relative path: bytes} of every file under ``root`` (links not
    followed): what a refused command must leave as it was."""
    found = {}
    for path in sorted(pathlib.Path(root).rglob('*')):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def grubby_bls(options, argvs):
    """An entry's options line after the ``grubby --update-kernel=ALL``
    commands ``argvs``, as grubby-bls edits it (rhboot/grubby, grubby-bls:
    update_args): each --remove-args word removes the first match of
    ``$arg[^ ]*``; each --args key=value replaces the first ``key=[^ ]*``
    when ``key=`` is in the line, else is appended (the test's own model
    of that script, not kvmtune's)."""
    args = options
    for argv in argvs:
        flag, _, value = argv[2].partition('=')
        for arg in value.split():
            if flag == '--remove-args':
                args = re.sub(re.escape(arg) + r'[^ ]*', '', args, count=1)
            elif '=' in arg:
                key = arg.split('=', 1)[0]
                if key + '=' in args:
                    args = re.sub(re.escape(key) + r'=[^ ]*',
                                  lambda _, arg=arg: arg, args, count=1)
                else:
                    args += ' ' + arg
            elif arg not in args.split():
                args += ' ' + arg
        args = ' '.join(args.split())
    return args
