"""kvmtune's Tempest plugin: are the tuned flavors, traits and guests right?

Loaded by Tempest through the ``tempest.test_plugins`` entry point; it
imports tempest, so nothing else in kvmtune imports this package.
"""
