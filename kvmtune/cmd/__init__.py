"""Sub-commands of ``kvmtune``; see kvmtune.cli for the contract."""
