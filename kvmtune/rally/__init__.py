"""Rally plugins of kvmtune (imported wholesale by Rally: plugins only)."""
