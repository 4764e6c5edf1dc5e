# The nested image's level-1 part (kvmtune image build --nested; sourced
# by init.sh, busybox sh). With kvmtune.level=2 on the kernel command line
# this guest (L1) loads the KVM module of its CPU's extension with
# nested=1, checks /dev/kvm, boots its own guest (L2: the benchmark
# image's kernel and initrd, /kvmtune/l2 on the tools disk) with QEMU and
# KVM, hands it the job, and frames L2's verified result on its own
# console under its own instance id. What it found goes on
#     KVMTUNE-NESTED <instance> key=value...
# lines (kvmtune.bench.nested reads them). Every failure is one
# KVMTUNE-STATUS error line that says why; QEMU runs under a hard timeout.

LEVEL=1
CAPTURE=0
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        kvmtune.level=*) LEVEL=${arg#kvmtune.level=} ;;
        kvmtune.capture=1) CAPTURE=1 ;;
    esac
done
# Seconds L2 may take beyond its runtime: its boot under L1's KVM (itself
# under TCG: ~40 s on a 2-core host) and its verdict.
L2_ALLOWANCE=${L2_ALLOWANCE:-600}

nested_say() {
    say "KVMTUNE-NESTED $ID $*"
}

nested_dmesg() {  # the kernel's last word on kvm/svm/vmx, one line
    dmesg | grep -i -e kvm -e svm -e vmx | tail -n 1 | tr -d '\r'
}

nested_prepare() {  # L1: the CPU extension, its module, /dev/kvm
    if grep -qw svm /proc/cpuinfo; then
        FLAG=svm; MODULE=kvm_amd; PAGING=npt
    elif grep -qw vmx /proc/cpuinfo; then
        FLAG=vmx; MODULE=kvm_intel; PAGING=ept
    else
        nested_say "svm=absent vmx=absent"
        fail "no svm or vmx in this guest's CPU: the host offers none" \
            "(nested-host profile: cpu_model_extra_flags svm under TCG," \
            "host-passthrough with the module's nested=1 under KVM)"
    fi
    for ko in $(cat "/lib/modules/kvm/$MODULE.order"); do
        opts=
        case "$ko" in kvm-amd.ko|kvm-intel.ko) opts=nested=1 ;; esac
        out=$(insmod "/lib/modules/kvm/$ko" $opts 2>&1) || {
            nested_say "$FLAG=present module=$MODULE loaded=no"
            fail "insmod ${ko%.ko} refused: $out; kernel: $(nested_dmesg)"
        }
    done
    NESTED=$(cat "/sys/module/$MODULE/parameters/nested" 2>/dev/null)
    PAGED=$(cat "/sys/module/$MODULE/parameters/$PAGING" 2>/dev/null)
    [ -c /dev/kvm ] || {
        nested_say "$FLAG=present module=$MODULE loaded=yes kvm=absent"
        fail "no /dev/kvm after loading $MODULE; kernel: $(nested_dmesg)"
    }
    nested_say "$FLAG=present module=$MODULE loaded=yes" \
        "nested=${NESTED:-unknown} $PAGING=${PAGED:-unknown} kvm=/dev/kvm"
}

# What kvmtune host inspect reads (kvmtune/facts: /proc, /sys, /dev), a
# superset; the host keeps only what kvmtune reads (kvmtune.facts.capture
# on the unpacked tree). cat, not tar: /proc and /sys files say size 0.
CAPTURE_GLOBS='/proc/cpuinfo /proc/meminfo /proc/cmdline
/proc/sys/kernel/osrelease /proc/sys/kernel/hostname
/sys/kernel/mm/hugepages/*/*_hugepages
/sys/module/kvm/parameters/* /sys/module/kvm_amd/parameters/*
/sys/module/kvm_intel/parameters/* /sys/module/kvm_pvm/parameters/*
/sys/module/vhost_net/parameters/*
/sys/devices/system/node/node*/meminfo /sys/devices/system/node/node*/cpulist
/sys/devices/system/node/node*/hugepages/*/*_hugepages
/sys/devices/system/cpu/online /sys/devices/system/cpu/cpu*/online
/sys/devices/system/cpu/cpu*/topology/*
/sys/devices/system/clocksource/clocksource0/*
/sys/hypervisor/type'

nested_capture() {  # L1's files, a gzip tar in base64 framed on the console
    dir=/tmp/capture
    for path in $CAPTURE_GLOBS; do
        [ -f "$path" ] && [ -r "$path" ] || continue
        mkdir -p "$dir$(dirname "$path")"
        cat "$path" > "$dir$path" 2>/dev/null || rm -f "$dir$path"
    done
    for dev in /dev/kvm /dev/vhost-net; do
        [ -e "$dev" ] && mkdir -p "$dir/dev" && : > "$dir$dev"
    done
    tar -C "$dir" -czf /tmp/capture.tgz . || fail "capture: tar failed"
    {
        echo "KVMTUNE-CAPTURE-BEGIN $ID $(wc -c < /tmp/capture.tgz)" \
            "$(sha256sum /tmp/capture.tgz | cut -d ' ' -f 1)"
        base64 < /tmp/capture.tgz
        echo "KVMTUNE-CAPTURE-END $ID"
    } > /dev/console
}

nested_l2_verdict() {  # the L2 console's last final status: state words
    grep -a "^KVMTUNE-STATUS $L2ID " /tmp/l2.txt |
        grep -a -e " ok" -e " late" -e " error" | tail -n 1 | cut -d ' ' -f 3-
}

nested_reframe() {  # nested_reframe L2ID ID FILE
    # L2's verified result in FILE (its console, CRs removed), framed as
    # ID's on stdout; else the reason on stdout and status 1.
    out=${TMPDIR:-/tmp}/l2.payload
    set -- "$1" "$2" "$3" $(grep -a "^KVMTUNE-RESULT-BEGIN $1 " "$3" |
        tail -n 1)
    [ $# -eq 9 ] || { echo "L2 said ok but framed no result"; return 1; }
    awk -v b="KVMTUNE-RESULT-BEGIN $1 " -v e="KVMTUNE-RESULT-END $1" '
        index($0, e) == 1 { p = 0 }
        p { print }
        index($0, b) == 1 { p = 1 }' "$3" | head -c "$8" > "$out"
    [ "$(sha256sum "$out" | cut -d ' ' -f 1)" = "$9" ] || {
        echo "L2's result failed its sha256 on L2's console"
        return 1
    }
    echo "KVMTUNE-RESULT-BEGIN $2 $6 $7 $8 $9"
    cat "$out"
    echo
    echo "KVMTUNE-RESULT-END $2"
}

nested_run() {  # L1: run the job in L2, frame its result as ours
    L2ID=$(cat /proc/sys/kernel/random/uuid)
    # L2 starts at once (L1 got the start signal), and stops after it.
    sed -e 's/"start": *"nmi"/"start": null/' \
        -e 's/"start_at": *[0-9][0-9]*/"start_at": null/' \
        -e 's/"hold": *true/"hold": false/' /tmp/job.json > /tmp/l2job.json
    job=$(base64 < /tmp/l2job.json | tr -d '\n')
    # L2 gets half of L1's memory (at most 1 GiB) and all its vCPUs.
    mem=$(awk '/^MemTotal:/ { m = int($2 / 2048); if (m > 1024) m = 1024;
        print m }' /proc/meminfo)
    l2=/media/kvmtune/l2
    disk_dev=${TOOLS_DEV%%[0-9]*}
    set -- -drive "file=$disk_dev,format=raw,if=none,id=tools,readonly=on" \
        -device virtio-blk-pci,drive=tools,addr=0x4
    if [ -n "$TARGET" ] && [ "$TARGET" != null ]; then
        # L1's data disk is L2's, at the same name (vdb after vda).
        set -- "$@" -drive "file=$TARGET,format=raw,if=none,id=data,cache=none" \
            -device virtio-blk-pci,drive=data,addr=0x5
    fi
    limit=$((RUNTIME + L2_ALLOWANCE))
    nested_say "l2=starting l2_instance=$L2ID l2_ram_mb=$mem" \
        "l2_vcpus=$(nproc) timeout=$limit"
    t0=$(uptime_s)
    timeout -s KILL "$limit" /media/kvmtune/bin/qemu-system-x86_64 \
        -L /media/kvmtune/qemu -name kvmtune-l2 \
        -machine pc,accel=kvm -cpu host -m "$mem" -smp "$(nproc)" \
        -nodefaults -display none -no-reboot -monitor none \
        -serial file:/tmp/l2.log -smbios "type=1,uuid=$L2ID" "$@" \
        -kernel $l2/vmlinuz -initrd $l2/initrd.img \
        -append "console=ttyS0,115200 quiet panic=-1 kvmtune.job=$job" \
        > /tmp/l2.qemu 2>&1
    rc=$?
    t1=$(uptime_s)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    tr -d '\r' < /tmp/l2.log > /tmp/l2.txt 2>/dev/null
    said=$(grep -a "^KVMTUNE-GUEST $L2ID " /tmp/l2.txt | tail -n 1 |
        sed -n 's/.* accel=\([a-z]*\).*/\1/p')
    verdict=$(nested_l2_verdict)
    if [ -z "$verdict" ]; then
        if [ $rc -eq 137 ]; then
            why="timed out after $limit s"
        else
            why="QEMU exited $rc: $(grep -v -i warning /tmp/l2.qemu |
                tail -n 1)"
        fi
        nested_say "l2=no-result l2_accel=${said:-none} l2_seconds=$secs"
        fail "L2 gave no verdict: $why; L2 console ends:" \
            "$(grep -a . /tmp/l2.txt | tail -n 1 | cut -c 1-120)"
    fi
    state=${verdict%% *}
    if [ "$state" != ok ]; then
        nested_say "l2=$state l2_accel=${said:-none} l2_seconds=$secs"
        fail "L2 $verdict"
    fi
    nested_reframe "$L2ID" "$ID" /tmp/l2.txt > /tmp/frame ||
        fail "$(cat /tmp/frame)"
    nested_say "l2=ok l2_accel=${said:-none} l2_seconds=$secs"
    cat /tmp/frame > /dev/console
    status ok "ready=$READY" "start=$STARTED" "start_time=$STARTED_TIME" \
        "end=$(uptime_s)" level=2
    # After L2 ran: the capture shows the host kvmtune inspects in L1.
    [ "$CAPTURE" = 1 ] && nested_capture
}
