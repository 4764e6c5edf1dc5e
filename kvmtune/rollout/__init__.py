"""The fleet rollout: a profile's host changes, batch by batch, over an
Ansible inventory (doc/source/admin/rollout.md).

``kvmtune rollout`` (kvmtune/cmd/rollout.py) is the front door. The host
side lives here: ``inventory`` reads the inventory through Ansible's own
parser, ``check`` plans every host (changes, reboot or restart, and why)
for ``--check``. The cloud side (disable, drain, enable, the preflight
capacity, the run's state) is in the modules beside them, run per host by
``kvmtune rollout-step``. The Ansible collection ``kvmtune.fleet`` that
runs the steps ships as package data (kvmtune/data/ansible_collections/
kvmtune/fleet).
"""

import os

# Where the collection is, in the checkout and in the installed package:
# ANSIBLE_COLLECTIONS_PATH takes the directory above ansible_collections/.
COLLECTIONS_PATH = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'data')
COLLECTION = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'kvmtune',
                          'fleet')
PLAYBOOK = os.path.join(COLLECTION, 'playbooks', 'rollout.yml')
# The rollout's modes: migrate the guests away first; reboot with the
# guests on the host (Nova restarts them); write and stop before the reboot.
MODES = ('drain', 'in-place', 'stage')
