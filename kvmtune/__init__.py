"""kvmtune: tune KVM compute hosts for near bare-metal guests, measure it."""
