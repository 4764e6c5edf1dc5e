"""How the main job runs its steps and what it says.

The job's own lines (one per step, with its time, and the summary) go to
stdout through say() and step(). Everything else (the commands it runs,
apt, pip, Rally, the cloud, kvmtune's library output) goes to the log file
the job names at its start; with --verbose it is shown as well. Every
line of stdout is in the log too, so the log alone tells the whole run.
"""
from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import os
import shutil
import sys
import time
from typing import TextIO
from typing import TYPE_CHECKING
from typing import TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar('T')

PREFIX = 'main-job: '


class _Output:
    """Where the job writes: stdout, the log, or both (verbose)."""

    def __init__(self) -> None:
        self.log: TextIO | None = None
        self.log_path: str | None = None
        self.verbose = True     # no log configured: show everything
        # the real stdout, while quiet() redirects
        self.stdout: TextIO | None = None

    def open(self, log_path: str, verbose: bool) -> None:
        self.close()
        os.makedirs(os.path.dirname(log_path) or '.', exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     0o600)
        self.log = os.fdopen(fd, 'a', buffering=1)
        self.log_path = log_path
        self.verbose = verbose
        self.stdout = sys.stdout

    def close(self) -> None:
        if self.log:
            self.log.close()
        self.log, self.log_path, self.verbose = None, None, True
        self.stdout = None

    def isatty(self) -> bool:
        out = self.stdout or sys.stdout
        return hasattr(out, 'isatty') and out.isatty()

    def show(self, text: str) -> None:
        out = self.stdout or sys.stdout
        out.write(text)
        out.flush()

    def to_log(self, text: str) -> None:
        if self.log:
            self.log.write(text)
            self.log.flush()

    def detail(self, text: str) -> None:
        """What only the log (and --verbose) shows."""
        self.to_log(text)
        if self.verbose:
            self.show(text)


OUT = _Output()


def configure(log_path: str, verbose: bool = False) -> None:
    """Send details to log_path (appended), shown too when verbose."""
    OUT.open(log_path, verbose)


def say(text: str) -> None:
    """One line of the job's own output (stdout, and the log)."""
    OUT.to_log(f'{PREFIX}{text}\n')
    OUT.show(f'{PREFIX}{text}\n')


def detail(text: str) -> None:
    """One line for the log (and --verbose) only."""
    OUT.detail(f'{PREFIX}{text}\n')


class _Writer:
    """A file-like object for redirect_stdout: lines go to detail."""

    def write(self, text: str) -> int:
        OUT.detail(text)
        return len(text)

    def flush(self) -> None:
        pass


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """What library code prints inside goes to the log (and --verbose)."""
    writer = _Writer()
    with contextlib.redirect_stdout(writer), \
            contextlib.redirect_stderr(writer):
        yield


class Step:
    """A step of the job: says its name and result with its time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.result = 'done'
        self.started = time.monotonic()

    def done(self, result: str) -> None:
        self.result = result

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


def elapsed_label(seconds: float) -> str:
    if seconds < 60:
        return f'{seconds:.0f} s'
    return f'{int(seconds // 60)} min {seconds % 60:02.0f} s'


@contextlib.contextmanager
def step(name: str) -> Iterator[Step]:
    """`with step('image') as s: ...; s.done('built')` prints one line,
    `main-job: image: built (12 s)`; a failure says where it stopped."""
    current = Step(name)
    detail(f'== {name}')
    try:
        with quiet():
            yield current
    except BaseException:
        say(f'{name}: FAILED ({elapsed_label(current.elapsed)})')
        raise
    say(f'{name}: {current.result} ({elapsed_label(current.elapsed)})')


def beside(name: str, work: Callable[[], T]) -> 'Future[T]':
    """Start ``work`` in a thread of its own, named ``name``, while the
    job's next steps run (the cloud's install beside the image build,
    Rally's environment beside the compute tuning); the future's result()
    is its result, or re-raises what it raised."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    future = pool.submit(work)
    pool.shutdown(wait=False)
    return future


def bin_path(name: str) -> str:
    """A console script of this venv (kvmtune, rally)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else shutil.which(name) or name
