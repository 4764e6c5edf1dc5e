"""Boot-time changes on one host: what a plan needs at the next boot.

``kvmtune boot apply`` (kvmtune/cmd/boot_apply.py) writes a plan's kernel
arguments the way the host's distribution expects (loader.py: a GRUB
drop-in and update-grub on Debian/Ubuntu, /etc/default/grub and
grub2-mkconfig on RHEL-likes without BLS, grubby on BLS systems) and its
modprobe.d options (apply.py), and keeps a record that a reboot is needed
and why (record.py: ``cmdline``, ``hugepages``, ``module``), which the
fleet rollout and the monitoring textfile read.
"""
