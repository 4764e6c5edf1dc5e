"""kvmtune's cloud side: tuned Nova flavors and Placement traits.

Everything here talks to a cloud through openstacksdk (``clouds.yaml``) and
turns every failure into one :class:`kvmtune.errors.CloudError` line.
"""
