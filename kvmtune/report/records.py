"""Moved to kvmtune.results.records (doc/design.md 9.4); this name stays
until kvmtune/mainjob/job.py imports the new one."""

from kvmtune.results.records import *  # noqa: F401,F403
