"""The one error operators see: a single line naming what, where and the fix.

Every expected failure (bad input, a cloud that says no) is raised as
KvmtuneError; the CLI prints it as one line and exits 2, with no traceback
and nothing written.
"""


class KvmtuneError(Exception):
    """An expected failure with a one-line message.

    :param problem: what is wrong, e.g. "not a valid page size '3M'"
    :param source: the file, URL or object it came from (optional)
    :param key: the key, option or field inside it (optional)
    :param fix: what the operator should do about it (optional)
    """

    exit_code = 2

    def __init__(self, problem, source=None, key=None, fix=None):
        self.problem = str(problem)
        self.source = source
        self.key = key
        self.fix = fix
        super().__init__(self.line())

    def line(self):
        where = ': '.join(str(p) for p in (self.source, self.key) if p)
        text = f'{where}: {self.problem}' if where else self.problem
        if self.fix:
            text += f' (fix: {self.fix})'
        # One line, always: fold anything multi-line a library handed us.
        return ' '.join(text.split())


class InputError(KvmtuneError):
    """A file, option or value given to kvmtune is wrong."""


class CloudError(KvmtuneError):
    """The cloud refused, failed or could not be reached."""
