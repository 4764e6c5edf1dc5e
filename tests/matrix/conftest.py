"""The Nova release matrix tier (tools/run-tests, ``tox -e matrix``).

The tests fill FIGURES and RESULTS; the terminal summary prints the release
x profile table and the times, so a CI log shows them.
"""

FIGURES = {}
RESULTS = {}


def pytest_terminal_summary(terminalreporter):
    from tests.novamatrix import run

    write = terminalreporter.write_line
    if RESULTS:
        terminalreporter.section('Nova release x profile')
        for line in run.format_table(RESULTS).splitlines():
            write(line)
    if FIGURES:
        terminalreporter.section('Nova release matrix: figures')
        for name, value in FIGURES.items():
            write(f'{name}: {value}')
