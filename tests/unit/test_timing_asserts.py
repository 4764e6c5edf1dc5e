"""No test asserts a speed: timed figures are benchmarks (benchmarks/).

A shared 2-core CI host runs anything as slowly as it likes, so an
``assert took < 5`` is a coin toss there and proves nothing about a hang
(which never returns to reach it). What may stay is a generous bound that
only catches a hang or a wait that never ends (a polling deadline), or a
lower bound that load cannot break; each says so in a comment on or just
above the assert, ``# hang bound: ...`` or ``# lower bound: ...``. Code that
could block forever runs under tests/hang.py instead.

The check reads every test module of tests/unit and tests/functional: an
assert is timed when it reads a clock (time.monotonic, time.time,
time.perf_counter) or uses a name its function assigned a reading (or
arithmetic on readings: ``took = time.monotonic() - start``).
"""

import ast
import pathlib

import pytest

from tests import paths

CLOCKS = {'monotonic', 'monotonic_ns', 'perf_counter', 'perf_counter_ns',
          'time', 'time_ns'}
MARKERS = ('hang bound', 'lower bound')
TIERS = ('tests/unit', 'tests/functional')


def _is_clock_call(node):
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in CLOCKS and isinstance(func.value, ast.Name) \
            and func.value.id == 'time'
    return isinstance(func, ast.Name) and func.id in CLOCKS - {'time'}


def _uses_clock(node, names):
    return any(_is_clock_call(sub) or
               (isinstance(sub, ast.Name) and sub.id in names)
               for sub in ast.walk(node))


def _is_reading(node, names):
    """Whether an expression is a clock reading, or arithmetic on one: a
    value passed on to another call (a job's start time) is not."""
    if _is_clock_call(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.BinOp):
        return _is_reading(node.left, names) or \
            _is_reading(node.right, names)
    if isinstance(node, ast.UnaryOp):
        return _is_reading(node.operand, names)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ('int', 'float', 'round', 'abs', 'min', 'max'):
        return any(_is_reading(arg, names) for arg in node.args)
    return False


def _clock_names(tree):
    """Names assigned a clock reading, or arithmetic on such names."""
    assigns = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        # a name bound by the assignment (not the object of obj.attr = ...)
        names = set()
        for target in targets:
            elements = target.elts if isinstance(
                target, (ast.Tuple, ast.List)) else [target]
            names |= {e.id for e in elements if isinstance(e, ast.Name)}
        if node.value is not None and names:
            assigns.append((names, node.value))
    found = set()
    while True:
        more = {name for names, value in assigns
                if _is_reading(value, found) for name in names}
        if more <= found:
            return found
        found |= more


def _marked(lines, node):
    """A marker inline on the assert, or in the comment block above it."""
    for number in range(node.lineno, node.end_lineno + 1):
        if any(marker in lines[number - 1] for marker in MARKERS):
            return True
    number = node.lineno - 1
    while number >= 1 and lines[number - 1].strip().startswith('#'):
        if any(marker in lines[number - 1] for marker in MARKERS):
            return True
        number -= 1
    return False


def timed_asserts(source):
    """(line, marked) of each timed assert of a module's source; a name is
    a clock's within the function that assigns it."""
    tree = ast.parse(source)
    lines = source.splitlines()
    scopes = [tree] + [node for node in ast.walk(tree) if isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    timed = set()
    for scope in scopes:
        names = _clock_names(scope)
        timed |= {node for node in ast.walk(scope)
                  if isinstance(node, ast.Assert) and
                  _uses_clock(node.test, names)}
    return sorted((node.lineno, _marked(lines, node)) for node in timed)


def _test_modules():
    repo = pathlib.Path(paths.REPO)
    for tier in TIERS:
        yield from sorted((repo / tier).rglob('*.py'))


def test_no_timing_assertion_outside_the_hang_bounds():
    unmarked, marked = [], []
    for path in _test_modules():
        name = path.relative_to(paths.REPO)
        for line, ok in timed_asserts(path.read_text()):
            (marked if ok else unmarked).append(f'{name}:{line}')
    assert unmarked == [], (
        'timed asserts: make each a printed figure (benchmarks/), a guard '
        '(tests/hang.py), or say "# hang bound: why" if it only catches a '
        'hang')
    # the ones that stay (the polling deadlines) are found and marked
    assert 'tests/unit/testcloud/test_netstub.py' in ' '.join(marked)


@pytest.mark.parametrize('source, expected', [
    ('import time\n'
     'def test():\n'
     '    start = time.monotonic()\n'
     '    work()\n'
     '    took = time.monotonic() - start\n'
     '    assert took < 5\n', [(6, False)]),
    ('import time\n'
     'def test():\n'
     '    start = time.perf_counter()\n'
     '    end = time.perf_counter()\n'
     '    took = end - start\n'
     '    assert took < 5, took\n', [(6, False)]),
    ('import time\n'
     'def test():\n'
     '    deadline = time.monotonic() + 600\n'
     '    while not ready():\n'
     '        # hang bound: it is ready in a second\n'
     '        assert time.monotonic() < deadline\n', [(6, True)]),
    ('from time import monotonic\n'
     'def test():\n'
     '    assert monotonic() > 0  # lower bound: a clock never goes back\n',
     [(3, True)]),
    ('def test(row):\n'
     '    wall = row["wall"]\n'
     '    assert wall < 5\n', []),
])
def test_the_check_finds_timed_asserts(source, expected):
    assert timed_asserts(source) == expected


def test_a_time_handed_to_other_code_is_not_a_reading():
    source = ('import time\n'
              'def test():\n'
              '    start_at = int(time.time()) + 45\n'
              '    job = build(start_at=start_at)\n'
              '    assert job["at"] == start_at\n'
              '    assert "address" not in job\n')
    # only the assert that compares with the reading itself is timed
    assert timed_asserts(source) == [(5, False)]
