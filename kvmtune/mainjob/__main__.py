"""`python -m kvmtune.mainjob`: the same as `kvmtune main-job` (the CLI
parses, kvmtune.mainjob.job runs)."""
import sys

from kvmtune import cli

sys.exit(cli.main(['main-job', *sys.argv[1:]]))
