"""libvirt and QEMU versions, asked of the binaries themselves.

Only ``kvmtune host inspect --versions`` calls this: the default inspection
runs no program.
"""

import os
import re
import shutil
import subprocess
from typing import cast

from kvmtune.facts.types import Versions

COMMANDS = {
    'libvirt': ['libvirtd', '--version'],
    'qemu': ['qemu-system-x86_64', '--version'],
}
# "libvirtd (libvirt) 9.0.0", "QEMU emulator version 7.2.19 (Debian)"
_VERSION = re.compile(r'\b(\d+\.\d+(?:\.\d+)?)\b')
TIMEOUT = 10
# libvirtd lives in sbin, which a non-root PATH often lacks.
EXTRA_PATH = ('/usr/sbin', '/usr/local/sbin')


def _version(argv: list[str]) -> str | None:
    search = os.pathsep.join([os.environ.get('PATH', ''), *EXTRA_PATH])
    binary = shutil.which(argv[0], path=search)
    if binary is None:
        return None
    try:
        out = subprocess.run([binary, *argv[1:]], capture_output=True,
                             text=True, timeout=TIMEOUT, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    first_line = out.splitlines()[0] if out else ''
    match = _VERSION.search(first_line)
    return match.group(1) if match else None


def probe() -> Versions:
    """{'libvirt': '9.0.0' | None, 'qemu': '7.2.19' | None}."""
    return cast(Versions, {name: _version(argv)
                           for name, argv in COMMANDS.items()})
