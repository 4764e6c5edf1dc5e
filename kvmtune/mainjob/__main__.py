"""`python -m kvmtune.mainjob` (what tools/main-job runs)."""
import sys

from kvmtune import mainjob

sys.exit(mainjob.main())
