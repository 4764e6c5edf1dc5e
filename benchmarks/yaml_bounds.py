#!/usr/bin/env python3
"""Hostile YAML and a FIFO: how long kvmtune's input reader takes to refuse.

Times ``kvmtune.yamlinput`` on what the unit tier only checks is refused
(tests/unit/test_yamlinput.py and test_inputs.py, under a hang guard, not
a clock): a "billion laughs" document (10 levels of 10 aliases, 10**10
nodes if expanded), a document nested 300 levels deep, and a FIFO in place
of a profile. Prints
the median of each (target under 1 s each; the refusal must not depend on
what the document would expand to).

  python benchmarks/yaml_bounds.py [-n 5]
"""

import argparse
import os
import statistics
import tempfile
import time

TARGET_S = 1.0


def laughs():
    lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
    for i in range(1, 10):
        refs = ', '.join([f'*a{i - 1}'] * 10)
        lines.append(f'a{i}: &a{i} [{refs}]')
    return '\n'.join(lines) + '\n'


def deep():
    return ''.join(' ' * i + f'k{i}:\n' for i in range(300))


def refused_in(call, runs):
    """Median seconds of ``call()``, which must raise InputError."""
    from kvmtune.errors import InputError

    times, message = [], None
    for _ in range(runs):
        start = time.perf_counter()
        try:
            call()
        except InputError as exc:
            message = exc.line()
        else:
            raise SystemExit(f'not refused: {call}')
        times.append(time.perf_counter() - start)
    return statistics.median(times), message


def main():
    from kvmtune import yamlinput

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-n', type=int, default=5, help='runs (median)')
    args = parser.parse_args()
    cases = [
        ('billion laughs', lambda: yamlinput.parse_yaml(laughs(), 'l.yaml')),
        ('300 levels deep', lambda: yamlinput.parse_yaml(deep(), 'd.yaml')),
    ]
    with tempfile.TemporaryDirectory() as root:
        fifo = os.path.join(root, 'profile.yaml')
        os.mkfifo(fifo)
        cases.append(('a FIFO', lambda: yamlinput.load_yaml(fifo)))
        for name, call in cases:
            seconds, message = refused_in(call, args.n)
            print(f'{name}: refused in {seconds:.4f} s (target < '
                  f'{TARGET_S} s): {message}')


if __name__ == '__main__':
    main()
