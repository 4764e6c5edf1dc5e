"""The accelerator this host gives stock guests, as the tests expect it.

The guest tier used to assert "emulated (TCG)" everywhere, true on the CI
machine (a guest whose /dev/kvm is PVM, without vmx/svm) and false on every
compute host the project is for. Tests now expect what the host has:
``kvm`` where /dev/kvm creates a VM and the CPU has hardware virtualization
(vmx or svm), ``tcg`` otherwise, and the labels that go with it.

This is the tests' own reading of the host, kept apart from kvmtune's
(kvmtune.bench.qemu.choose_accel, kvmtune.testcloud.system.detect_virt_type):
tests/unit/test_accel.py checks that the two agree, here and on the
captured hosts.
"""

import fcntl
import os
import re

KVM_GET_API_VERSION = 0xAE00      # _IO(KVMIO, 0x00)
KVM_CREATE_VM = 0xAE01            # _IO(KVMIO, 0x01)
KVM_API_VERSION = 12
HARDWARE = frozenset({'vmx', 'svm'})
# what kvmtune prints and records for a guest on each accelerator
LABELS = {'kvm': 'KVM', 'tcg': 'emulated (TCG)'}
# libvirt's [libvirt] virt_type for each
VIRT_TYPES = {'kvm': 'kvm', 'tcg': 'qemu'}


def cpu_flags(cpuinfo_text):
    """The CPU flags of /proc/cpuinfo's text (of its first CPU)."""
    match = re.search(r'^flags\s*:(.*)$', cpuinfo_text, re.M)
    return frozenset(match.group(1).split()) if match else frozenset()


def kvm_creates_vm(dev='/dev/kvm'):
    """Whether ``dev`` is a KVM of the stable API that creates a VM."""
    try:
        fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if fcntl.ioctl(fd, KVM_GET_API_VERSION) != KVM_API_VERSION:
            return False
        os.close(fcntl.ioctl(fd, KVM_CREATE_VM, 0))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def expected_accel(flags, creates_vm):
    """'kvm' with hardware virtualization and a working /dev/kvm, else
    'tcg' (a PVM /dev/kvm creates VMs, but the CPU shows no vmx/svm)."""
    return 'kvm' if creates_vm and HARDWARE & set(flags) else 'tcg'


def host_accel(dev='/dev/kvm', cpuinfo='/proc/cpuinfo'):
    """The accelerator of this host: 'kvm' or 'tcg'."""
    with open(cpuinfo) as f:
        flags = cpu_flags(f.read())
    return expected_accel(flags, kvm_creates_vm(dev))


def emulated(accel=None):
    """Whether guests on ``accel`` (default: this host's) are emulated."""
    return (accel or host_accel()) == 'tcg'


def label(accel=None):
    """kvmtune's label for guests on ``accel`` (default: this host's)."""
    return LABELS[accel or host_accel()]
