"""kvmtune: tune KVM compute hosts for near bare-metal guests, and measure it."""
