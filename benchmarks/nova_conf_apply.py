"""nova-conf apply on large and repetitive files: wall time per size.

A nova.conf with 4,000 duplicate lines once took 47 s (the
diff used difflib's SequenceMatcher without autojunk, quadratic on repeated
lines). The targets: 4,000 duplicates applied within 2 s, and linear
growth: the time per line at the largest size at most twice that at 4,000
(the Nova check's constant start-up cost is in both). Each case writes a
file with N copies of an option the profile sets and N other duplicate
lines, applies some pinned-hugepages-ept options to it (edit, diff, fileio
write and backup) and prints the seconds, and those of a dry run.

  python benchmarks/nova_conf_apply.py [--lines 4000 40000 ...]
"""

import argparse
import os
import sys
import tempfile
import time

from kvmtune.tuning.novaconf import update

CHANGES = {
    'DEFAULT': {'reserved_host_memory_mb': '4096'},
    'compute': {'cpu_shared_set': '0,20,40,60',
                'cpu_dedicated_set': '1-19,21-39,41-59,61-79'},
}
TARGET_S = 2.0          # for 4,000 duplicates
MAX_GROWTH = 2.0        # seconds per line, largest size / 4,000


def _file(lines):
    return ('[DEFAULT]\n' + 'debug = true\n' * lines + '[compute]\n'
            + 'cpu_shared_set = 0-1\n' * lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--lines', type=int, nargs='+',
                        default=[4000, 20000, 40000])
    args = parser.parse_args(argv)
    os.environ.pop('KVMTUNE_NOVA_PYTHON', None)
    times = {}
    print(f'{"duplicates":>10} {"lines":>7} {"bytes":>9} '
          f'{"apply s":>8} {"dry run s":>9} {"us/line":>8}')
    with tempfile.TemporaryDirectory() as top:
        for count in args.lines:
            path = os.path.join(top, f'nova-{count}.conf')
            text = _file(count)
            with open(path, 'w') as handle:
                handle.write(text)
            start = time.perf_counter()
            update.apply(path, CHANGES, dry_run=True)
            dry = time.perf_counter() - start
            start = time.perf_counter()
            result = update.apply(path, CHANGES)
            wet = time.perf_counter() - start
            assert result.written
            lines = text.count('\n')
            times[count] = (wet, lines)
            print(f'{count:>10} {lines:>7} {len(text):>9} {wet:>8.2f} '
                  f'{dry:>9.2f} {wet / lines * 1e6:>8.1f}')
    ok = True
    if 4000 in times:
        met = times[4000][0] <= TARGET_S
        ok &= met
        print(f'target: 4,000 duplicates applied in <= {TARGET_S} s: '
              f'{"met" if met else "MISSED"} ({times[4000][0]:.2f} s)')
        largest = max(times)
        if largest != 4000:
            per_line = {c: t / n for c, (t, n) in times.items()}
            growth = per_line[largest] / per_line[4000]
            met = growth <= MAX_GROWTH
            ok &= met
            print(f'target: time per line at {largest:,} duplicates <= '
                  f'{MAX_GROWTH}x that at 4,000: '
                  f'{"met" if met else "MISSED"} ({growth:.2f}x)')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
