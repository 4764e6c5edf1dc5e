"""Running workloads: on the bare host (baseline) and in local QEMU
guests (bench local)."""
