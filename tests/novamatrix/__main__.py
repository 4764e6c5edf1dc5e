"""tools/nova-matrix: build the release venvs, check every shipped
profile's plan on every real capture with each release, print the
release x profile table and the figures.

  python -m tests.novamatrix [--release N ...] [--write-table]
"""

import argparse
import sys
import time

from tests import novamatrix
from tests.novamatrix import run


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nova-matrix')
    parser.add_argument('--release', type=int, action='append',
                        choices=sorted(novamatrix.RELEASES),
                        help='only this Nova release (repeatable)')
    parser.add_argument('--write-table', action='store_true',
                        help='rewrite kvmtune/data/nova_releases.yaml '
                             'from the releases first')
    parser.add_argument('--build-only', action='store_true',
                        help='build the venvs, check nothing')
    args = parser.parse_args(argv)
    majors = sorted(args.release or novamatrix.RELEASES)
    started = time.monotonic()
    if args.build_only:
        novamatrix.build_all(majors)
        print(f'venvs ready in {time.monotonic() - started:.1f} s')
        return 0
    if args.write_table:
        novamatrix.build_all(majors)
        run.write_table({m: run.describe(m) for m in majors})
        print(f'wrote {run.nova_releases.DATA}')
    results, figures = run.run_matrix(majors)
    sys.stdout.write(run.format_table(results))
    for major in majors:
        state = 'reused' if figures['reused'][major] else 'installed'
        print(f'nova-{major}: venv {state} (install '
              f'{figures["install"][major]} s), check '
              f'{figures["check"][major]} s')
    print(f'matrix: {figures["total"]} s in all (venvs '
          f'{figures["install_wall"]} s)')
    failed = [f'Nova {m} {p}: {r["problems"][0]}'
              for m, by in results.items() for p, r in by.items()
              if r['status'] == 'failed']
    for line in failed:
        print('FAILED ' + line)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
