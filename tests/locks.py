"""Another program holding a file's lock, for the tests of a second writer.

flock(1) takes the lock as a program other than the test would (an
operator's second ``kvmtune verify``, a cron job) and says so on its
standard output only once it holds it.
"""

import contextlib
import os
import pathlib
import subprocess
from typing import Iterator


@contextlib.contextmanager
def held(path: 'str | os.PathLike[str]') -> Iterator[None]:
    """Hold ``path``'s exclusive flock in another process for the block."""
    holder = subprocess.Popen(
        ['flock', '-x', '-o', str(pathlib.Path(path)), 'sh', '-c',
         'echo held; exec sleep 60'],
        stdout=subprocess.PIPE, start_new_session=True)
    try:
        # flock(1) prints only once it holds the lock (or exits: b'')
        assert holder.stdout is not None
        assert holder.stdout.readline() == b'held\n'
        yield
    finally:
        os.killpg(holder.pid, 9)    # flock(1) (-o: only it holds the lock)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
