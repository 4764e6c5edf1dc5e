#!/bin/busybox sh
# kvmtune benchmark guest: find the job, wait for its start, run the tool,
# print the result framed for kvmtune.workloads.console (doc/design.md 6).
# The job JSON is written by kvmtune.workloads.guestjob.build: one line, and its
# string values hold no quote or backslash, so sed can read it.

/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt/config /media /lib64 /sbin \
    /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/media/kvmtune/bin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Kernel messages on the console would land inside result frames.
echo 1 > /proc/sys/kernel/printk

for ko in $(cat /lib/modules/load.order); do
    insmod "/lib/modules/$ko" 2>/dev/null
done

. /etc/kvmtune/guestlib.sh

say() { echo "$*" > /dev/console; }

# With hold the guest stays up after its verdict, also a failed or late
# one: Nova's console log API answers 404 once a guest is off, and the
# reason would be lost. The scenarios delete held guests.
finish() {
    sync
    if [ "$HOLD" = true ]; then
        while :; do sleep 3600; done
    fi
    poweroff -f
}

status() {  # status ok|ready|serving <key=value>... | late|error <why>
    say "KVMTUNE-STATUS $ID $*"
}

fail() {
    status error "$*"
    finish
}

jget() {  # jget KEY: a top-level scalar of the job JSON
    sed -n -e "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" \
        -e "t" -e "s/.*\"$1\": *\([-0-9a-z.]*\).*/\1/p" /tmp/job.json
}

# Block devices appear a little after their driver loads.
settle() {
    i=0
    while [ $i -lt 50 ]; do
        [ -n "$(findfs "$1" 2>/dev/null)" ] && return 0
        i=$((i + 1))
        sleep 0.1
    done
    return 1
}

ID=
if settle LABEL=config-2; then
    dev=$(findfs LABEL=config-2)
    mount -o ro -t iso9660 "$dev" /mnt/config 2>/dev/null ||
        mount -o ro -t vfat "$dev" /mnt/config
    meta=/mnt/config/openstack/latest/meta_data.json
    [ -f "$meta" ] && ID=$(tr -d '\n' < "$meta" |
        sed -n 's/.*"uuid": *"\([^"]*\)".*/\1/p')
    [ -f /mnt/config/openstack/latest/user_data ] &&
        tr -d '\n' < /mnt/config/openstack/latest/user_data > /tmp/job.json
fi
[ -z "$ID" ] && ID=$(cat /sys/class/dmi/id/product_uuid 2>/dev/null |
    tr 'A-F' 'a-f')
[ -z "$ID" ] && ID=unknown

# How this guest is virtualized, in its own words (design.md 6).
clocks=/sys/devices/system/clocksource/clocksource0
CPUID_SIG=$(cpuid_signature)
ACCEL=$(guest_accel "$(cat $clocks/available_clocksource 2>/dev/null)" \
    "$(dmesg | grep -m 1 'Hypervisor detected')" "$CPUID_SIG")
say "KVMTUNE-GUEST $ID accel=$ACCEL" \
    "clocksource=$(cat $clocks/current_clocksource 2>/dev/null ||
        echo unknown)" "hypervisor=${CPUID_SIG:-none}"
if [ ! -s /tmp/job.json ]; then
    for arg in $(cat /proc/cmdline); do
        case "$arg" in
            kvmtune.job=*) echo "${arg#kvmtune.job=}" | base64 -d \
                > /tmp/job.json ;;
        esac
    done
fi
[ -s /tmp/job.json ] || fail "no job: no config drive user_data and no" \
    "kvmtune.job= on the kernel command line"

WORKLOAD=$(jget workload)
ROLE=$(jget role)
[ -z "$ROLE" ] || [ "$ROLE" = null ] && ROLE=client
HOLD=$(jget hold)
START_AT=$(jget start_at)
START=$(jget start)
START_TIMEOUT=$(jget start_timeout)
case "$START_TIMEOUT" in ''|null|*[!0-9]*) START_TIMEOUT=900 ;; esac
TARGET=$(jget target)
PEER=$(jget peer)
RUNTIME=$(jget runtime)
[ -z "$RUNTIME" ] || [ "$RUNTIME" = null ] && RUNTIME=10
COMMAND=$(jget command)
if [ -z "$COMMAND" ]; then
    # A job with only the design.md keys: the image's own command line
    # for this workload and role (kvmtune.workloads.guestjob.templates).
    template=/etc/kvmtune/workloads/$WORKLOAD.$ROLE
    [ -f "$template" ] || fail "unknown workload or role: $WORKLOAD $ROLE"
    COMMAND=$(sed -e "s|@TARGET@|$TARGET|g" -e "s|@PEER@|$PEER|g" \
        -e "s|@RUNTIME@|$RUNTIME|g" "$template")
fi
TOOL=$(jget tool)
[ -z "$TOOL" ] && TOOL=${COMMAND%% *}
[ -n "$WORKLOAD" ] || fail "job without workload"

LABEL=$(cat /etc/kvmtune-tools-label)
settle "LABEL=$LABEL" || fail "tools disk (label $LABEL) not found"
TOOLS_DEV=$(findfs "LABEL=$LABEL")
mount -o ro -t vfat "$TOOLS_DEV" /media || fail "cannot mount $TOOLS_DEV"
ln -sf /media/kvmtune/lib/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2
export LD_LIBRARY_PATH=/media/kvmtune/lib

# eth0: the job's address, else the static ipv4 of the config drive's
# network_data.json (Nova writes one when the subnet has no DHCP server),
# else DHCP. The MTU of its link there applies in every case.
if [ -e /sys/class/net/eth0 ]; then
    ip link set lo up
    set -- $(netdata_eth /mnt/config/openstack/latest/network_data.json \
        "$(cat /sys/class/net/eth0/address)")
    gateway=${4:--}
    case "${3:--}" in
        -) ;;
        *) ip link set eth0 mtu "$3" ||
            fail "cannot set MTU $3 on eth0 (network_data.json)" ;;
    esac
    ip link set eth0 up
    ADDRESS=$(jget address)
    if [ -n "$ADDRESS" ] && [ "$ADDRESS" != null ]; then
        FROM=job
        gateway=-
    elif [ "$1" = static ]; then
        ADDRESS=$2
        FROM=network_data
    else
        FROM=dhcp
        # 40 discovers 3 s apart: 2 minutes, inside the sweep's
        # ready_timeout (kvmtune/rally/tasks/*.yaml). The test cloud's
        # answer comes from the OVS agent (packet-in, then packet-out: see
        # kvmtune/testcloud/neutron.py), late when TCG guests hold both
        # cores; 30 s was once too short (a network sweep, "no DHCP
        # lease on eth0").
        udhcpc -i eth0 -n -q -t 40 -T 3 -s /etc/udhcpc.script \
            >/dev/null 2>&1 || fail "no DHCP lease on eth0 after 120 s"
        ADDRESS=$(ip -4 -o addr show dev eth0 |
            sed -n 's/.* inet \([0-9.\/]*\).*/\1/p' | head -n 1)
    fi
    if [ "$FROM" != dhcp ]; then
        ip addr add "$ADDRESS" dev eth0 ||
            fail "cannot set $ADDRESS on eth0 ($FROM)"
        [ "$gateway" = - ] || ip route add default via "$gateway" dev eth0 ||
            fail "cannot route via $gateway (network_data.json)"
    fi
    say "KVMTUNE-NET $ID eth0 ${ADDRESS:-none} from=$FROM" \
        "mtu=$(cat /sys/class/net/eth0/mtu)"
fi

# Never benchmark the disk the image booted from: writes would destroy
# it, reads may never reach the device (doc/design.md section 6).
case "$TARGET" in
    "${TOOLS_DEV%%[0-9]*}"*) fail "refusing $TARGET: it holds this image" ;;
esac
[ -z "$TARGET" ] || [ "$TARGET" = null ] || [ -b "$TARGET" ] ||
    fail "target $TARGET is not a block device here"

# The nested image (kvmtune image build --nested) runs the job in its own
# guest with kvmtune.level=2; its checks come before ready (nested.sh).
LEVEL=1
[ -f /etc/kvmtune/nested.sh ] && . /etc/kvmtune/nested.sh
[ "$LEVEL" = 2 ] && nested_prepare

# @VCPUS@ becomes this guest's vCPU count (fio numjobs).
COMMAND=$(echo "$COMMAND" | sed "s/@VCPUS@/$(nproc)/g")

# Ready: everything but the tool is done. A server listens at once. A
# client with "start": "nmi" says ready and waits for its start signal, an
# NMI (Nova's trigger_crash_dump), a client with start_at sleeps until then
# by its clock (set from the RTC at boot), else it runs at once.
READY=$(uptime_s)
if [ "$ROLE" != server ] && [ "$START" = nmi ]; then
    # The hard lockup detector (KVM with a vPMU) also sends NMIs.
    echo 0 > /proc/sys/kernel/nmi_watchdog 2>/dev/null
    seen=$(nmi_count)
    READY=$(uptime_s)
    status ready "uptime=$READY" "time=$(date +%s)"
    deadline=$((${READY%.*} + START_TIMEOUT))
    while [ "$(nmi_count)" -le "$seen" ]; do
        up=$(uptime_s)
        if [ "${up%.*}" -ge "$deadline" ]; then
            status late "no start signal (NMI) within $START_TIMEOUT s" \
                "of ready at uptime $READY"
            finish
        fi
        sleep 0.2
    done
elif [ "$ROLE" != server ] && [ -n "$START_AT" ] && [ "$START_AT" != null ]
then
    now=$(date +%s)
    status ready "uptime=$READY" "time=$now"
    if [ "$now" -gt "$START_AT" ]; then
        status late "ready at $now, start_at $START_AT"
        finish
    fi
    sleep $((START_AT - now))
fi
STARTED=$(uptime_s)
STARTED_TIME=$(date +%s)

if [ "$ROLE" = server ]; then
    # One server process per port of the job's "ports" (iperf3 serves one
    # client at a time: its command holds @PORT@), else one.
    PORTS=$(jget ports)
    [ -z "$PORTS" ] || [ "$PORTS" = null ] && PORTS=-
    pids=
    for port in $(echo "$PORTS" | tr ',' ' '); do
        cmd=$(echo "$COMMAND" | sed "s/@PORT@/$port/g")
        $cmd > "/tmp/out.$port" 2> "/tmp/err.$port" &
        pids="$pids $!"
    done
    sleep 1
    for pid in $pids; do
        kill -0 "$pid" 2>/dev/null ||
            fail "$TOOL server: $(cat /tmp/err.* | tail -n 1)"
    done
    status serving "uptime=$READY" "time=$STARTED_TIME"
    for pid in $pids; do
        wait "$pid"
    done
    status ok "ready=$READY" "start=$STARTED" "start_time=$STARTED_TIME"
    finish
fi

if [ "$LEVEL" = 2 ]; then
    nested_run
    finish
fi
$COMMAND > /tmp/raw 2> /tmp/err
rc=$?
[ $rc -eq 0 ] || fail "$TOOL exited $rc: $(tail -n 1 /tmp/err | tr -d '\r')"
console_safe < /tmp/raw > /tmp/out
size=$(wc -c < /tmp/out)
sum=$(sha256sum /tmp/out | cut -d ' ' -f 1)
{
    echo "KVMTUNE-RESULT-BEGIN $ID $WORKLOAD $TOOL $size $sum"
    cat /tmp/out
    echo
    echo "KVMTUNE-RESULT-END $ID"
} > /dev/console
status ok "ready=$READY" "start=$STARTED" "start_time=$STARTED_TIME" \
    "end=$(uptime_s)"
finish
