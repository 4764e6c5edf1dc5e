"""Emulation of the DevStack functions the kvmtune plugin calls."""
