"""`python -m kvmtune.mainjob` (what tools/main-job runs)."""
import sys

from kvmtune.mainjob import job

sys.exit(job.main())
