# Functions of the benchmark guest's init (sourced by init.sh; busybox sh,
# no jq). Kept apart so unit tests run them with busybox or sh on the host.

json_flat() {  # stdin: JSON; stdout: one path=value per scalar
    # {"links": [{"mtu": 1450}]} gives links.0.mtu=1450; strings lose their
    # quotes, null stays null. Any layout: the newlines go first.
    tr -d '\n\r' | awk '
    { s = s $0 }
    END { n = length(s); i = 1; value("") }
    function ws() {
        while (i <= n && index(" \t", substr(s, i, 1))) i++
    }
    function str(   out, c) {
        i++; out = ""
        while (i <= n) {
            c = substr(s, i, 1)
            if (c == "\\") {
                c = substr(s, i + 1, 1); i += 2
                out = out (c == "n" || c == "t" ? " " : c)
                continue
            }
            i++
            if (c == "\"") return out
            out = out c
        }
        return out
    }
    function key(p, k) { return p == "" ? k : p "." k }
    function value(p,   c, k, idx, v) {
        ws(); c = substr(s, i, 1)
        if (c == "{" || c == "[") {
            i++; ws(); idx = 0
            if (substr(s, i, 1) == (c == "{" ? "}" : "]")) { i++; return }
            while (i <= n) {
                if (c == "{") {
                    ws(); k = str(); ws(); i++
                    value(key(p, k))
                } else
                    value(key(p, idx++))
                ws(); v = substr(s, i, 1); i++
                if (v != ",") return
            }
        } else if (c == "\"") {
            print p "=" str()
        } else {
            v = ""
            while (i <= n && !index(",}] \t", substr(s, i, 1))) {
                v = v substr(s, i, 1); i++
            }
            print p "=" v
        }
    }'
}

flat_get() {  # flat_get PATH < json_flat output
    sed -n "s/^$(echo "$1" | sed 's/\./\\./g')=//p" | head -n 1
}

mask_prefix() {  # mask_prefix 255.255.255.0 -> 24
    bits=0
    for octet in $(echo "$1" | tr '.' ' '); do
        while [ "$octet" -gt 0 ]; do
            bits=$((bits + (octet & 1)))
            octet=$((octet >> 1))
        done
    done
    echo "$bits"
}

netdata_eth() {  # netdata_eth NETWORK_DATA_JSON MAC
    # How Nova's network_data.json configures the NIC with this MAC:
    # "static <ip/prefix> <mtu> <gateway>" or "dhcp - <mtu> -", "-" where
    # not given. The link whose ethernet_mac_address is MAC, else the only
    # link; static from its "ipv4" network, else DHCP ("ipv4_dhcp", no
    # entry, or no file).
    [ -s "$1" ] || { echo "dhcp - - -"; return 0; }
    flat=$(json_flat < "$1")
    mac=$(echo "$2" | tr 'A-F' 'a-f')
    links=$(echo "$flat" |
        sed -n 's/^links\.\([0-9]*\)\.ethernet_mac_address=.*/\1/p')
    link=
    for l in $links; do
        seen=$(echo "$flat" | flat_get "links.$l.ethernet_mac_address" |
            tr 'A-F' 'a-f')
        [ "$seen" = "$mac" ] && link=$l
    done
    [ -z "$link" ] && [ "$(echo "$links" | wc -w)" -eq 1 ] && link=$links
    [ -n "$link" ] || { echo "dhcp - - -"; return 0; }
    id=$(echo "$flat" | flat_get "links.$link.id")
    mtu=$(echo "$flat" | flat_get "links.$link.mtu")
    case "$mtu" in ''|null) mtu=- ;; esac
    nets=$(echo "$flat" | sed -n 's/^networks\.\([0-9]*\)\.link=.*/\1/p')
    for n in $nets; do
        [ "$(echo "$flat" | flat_get "networks.$n.link")" = "$id" ] ||
            continue
        [ "$(echo "$flat" | flat_get "networks.$n.type")" = ipv4 ] ||
            continue
        ip=$(echo "$flat" | flat_get "networks.$n.ip_address")
        mask=$(echo "$flat" | flat_get "networks.$n.netmask")
        if [ -z "$ip" ] || [ -z "$mask" ]; then
            continue
        fi
        gw=-
        routes=$(echo "$flat" |
            sed -n "s/^networks\.$n\.routes\.\([0-9]*\)\.gateway=.*/\1/p")
        for r in $routes; do
            [ "$(echo "$flat" | flat_get "networks.$n.routes.$r.network")" \
                = 0.0.0.0 ] &&
            [ "$(echo "$flat" | flat_get "networks.$n.routes.$r.netmask")" \
                = 0.0.0.0 ] &&
            gw=$(echo "$flat" | flat_get "networks.$n.routes.$r.gateway")
        done
        echo "static $ip/$(mask_prefix "$mask") $mtu $gw"
        return 0
    done
    echo "dhcp - $mtu -"
}

cpuid_signature() {  # the hypervisor's CPUID 0x40000000 vendor, or nothing
    # /dev/cpu/0/cpuid (module cpuid): the file offset is the leaf. Only
    # with the CPUID hypervisor bit: else the leaf does not exist.
    grep -qw hypervisor /proc/cpuinfo 2>/dev/null || return 0
    [ -e /dev/cpu/0/cpuid ] || return 0
    dd if=/dev/cpu/0/cpuid bs=16 skip=$((0x40000000 / 16)) count=1 \
        2>/dev/null | tail -c 12 | tr -cd 'A-Za-z0-9'
}

guest_accel() {  # guest_accel CLOCKSOURCES DMESG_LINE CPUID_SIGNATURE
    # kvm | tcg | unknown, from what the guest sees: KVM's paravirtual
    # clock or the kernel's "Hypervisor detected: KVM" (KVM's CPUID
    # signature) mean KVM; QEMU under TCG offers no kvm-clock and answers
    # the hypervisor CPUID leaf with "TCGTCGTCGTCG".
    case " $1 " in *" kvm-clock "*) echo kvm; return 0 ;; esac
    case "$2" in *"Hypervisor detected: KVM"*) echo kvm; return 0 ;; esac
    case "$3" in
        KVMKVMKVM) echo kvm ;;
        TCGTCGTCGTCG) echo tcg ;;
        *) echo unknown ;;
    esac
}

console_safe() {  # stdin: tool output; stdout: what survives Nova's console
    # Nova's console-output API deletes bytes 0x00-0x08 and 0x0B-0x1F (its
    # sanitizer in nova/api/openstack/compute/console_output.py), so a
    # payload holding them (sockperf colours its lines) would fail its
    # byte count. Drop terminal escape sequences whole, then the rest.
    esc=$(printf '\033')
    sed "s/${esc}\[[0-9;]*[A-Za-z]//g" | tr -d '\000-\010\013-\037\177'
}

nmi_count() {  # nmi_count [INTERRUPTS_FILE]: NMIs taken, summed over CPUs
    # The start signal of a job with "start": "nmi" (design.md 6): Nova's
    # trigger_crash_dump injects an NMI into every vCPU, and the kernel
    # counts it on the NMI: row of /proc/interrupts.
    awk '$1 == "NMI:" {
        for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i
    } END { print n + 0 }' "${1:-/proc/interrupts}"
}

uptime_s() {  # uptime_s [UPTIME_FILE]: seconds since boot, centiseconds
    read -r up _ < "${1:-/proc/uptime}"
    echo "$up"
}
