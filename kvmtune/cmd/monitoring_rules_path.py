"""Print where the installed Prometheus alert rules of kvmtune are.

    kvmtune monitoring rules-path
    cp "$(kvmtune monitoring rules-path)" /etc/prometheus/rules/
    promtool check rules "$(kvmtune monitoring rules-path)"

The rules (kvmtune.rules.yml: drift, stale verify, pending reboot, hosts
left disabled, low tuned capacity) are installed with kvmtune as package
data; copy them into Prometheus's rule_files (admin guide, "Monitoring
with Prometheus"). Exit 0, or 2 when the file is missing from this
install (reinstall kvmtune).
"""

import argparse
import os

from kvmtune.errors import InputError

# kvmtune/data/prometheus/kvmtune.rules.yml, relative to the package
RULES = os.path.join('data', 'prometheus', 'kvmtune.rules.yml')


def rules_path() -> str:
    """The absolute path of the installed alert rules file."""
    import kvmtune

    return os.path.join(os.path.dirname(os.path.abspath(kvmtune.__file__)),
                        RULES)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int | None:
    path = rules_path()
    if not os.path.isfile(path):
        raise InputError('the alert rules are not installed', source=path,
                         fix='reinstall kvmtune (pip install --force-'
                             'reinstall kvmtune)')
    print(path)
    return 0
