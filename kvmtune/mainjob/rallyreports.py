"""A Rally task's two reports, JSON and static HTML, written from
Rally's own record through its Python API and its own exporters (what
`rally task report --json` and `--html-static` run), in one process of
its own: ``python -m kvmtune.mainjob.rallyreports CONF UUID JSON HTML``
prints the task's status and, for a task that ended, writes both.

A process of its own because Rally's API keeps one database engine per
process (rally.common.db.api), bound to the first database it opened: a
process that runs sweeps on several Rally databases (the functional
tier does) would read the wrong one. One process instead of Rally's
status, two reports and sla-check: 19 s of the fresh main job's 7 min
19 s went to starting those four (sweep.Rally.reports).
"""
import os
import sys

from kvmtune import fileio
from kvmtune.mainjob import rallyenv

# the states of a task whose workloads ran (`rally task status`)
ENDED = ('finished', 'aborted')
REPORTS = ('json', 'html-static')


def write(conf: str, uuid: str, out_json: str, out_html: str) -> str:
    """Task ``uuid``'s status in the Rally database of ``conf``; when it
    ended, its reports written (atomically) to ``out_json``, ``out_html``."""
    api = rallyenv.rally_api(conf)
    task = api.task.get(task_id=uuid, detailed=True)
    state = str(task.get('status'))
    if state in ENDED:
        for output_type, path in zip(REPORTS, (out_json, out_html)):
            report = api.task.export(tasks=[task], output_type=output_type,
                                     output_dest=path)
            for dest, text in report.get('files', {}).items():
                fileio.write_atomic(os.path.expanduser(dest),
                                    text.encode('utf-8'))
    return state


def main(argv: list[str] | None = None) -> int:
    conf, uuid, out_json, out_html = argv if argv is not None \
        else sys.argv[1:]
    print(write(conf, uuid, out_json, out_html))
    return 0


if __name__ == '__main__':
    sys.exit(main())
