#!/bin/bash
# plugin.sh - DevStack plugin for kvmtune.
#
# DevStack sources this file as "plugin.sh MODE [PHASE]". The work is done
# by "python -m kvmtune.devstack", which records every change it makes in
# $KVMTUNE_STATE_DIR/changes.json; unstack and clean undo exactly those.
#
#   stack install      setup_develop $KVMTUNE_DIR
#   stack post-config  profiles' options into $NOVA_CONF; modprobe and
#                      hugepage settings when KVMTUNE_ENABLE_NESTED /
#                      KVMTUNE_ALLOCATE_HUGEPAGES allow them
#   stack extra        tuned flavors, host traits, benchmark image
#   stack test-config  [kvmtune] options in $TEMPEST_CONFIG
#   unstack            flavors, traits and image the plugin made (the cloud
#                      is still up when unstack.sh calls plugins)
#   clean              [kvmtune] options, nova.conf options (earlier values
#                      back), modprobe and sysctl files, vm.nr_hugepages

function _kvmtune {
    "$PYTHON" -m kvmtune.devstack --state-dir "$KVMTUNE_STATE_DIR" "$@"
}

function install_kvmtune {
    setup_develop "$KVMTUNE_DIR"
}

function configure_kvmtune {
    local args=(--nova-conf "$NOVA_CONF" --profiles "$KVMTUNE_PROFILES")
    if [[ "$KVMTUNE_ENABLE_NESTED" == "True" ]]; then
        args+=(--modprobe-dir "$KVMTUNE_MODPROBE_DIR")
    fi
    if [[ "$KVMTUNE_ALLOCATE_HUGEPAGES" == "True" ]]; then
        args+=(--hugepages-2m "$KVMTUNE_HUGEPAGES_2M"
               --sysctl-dir "$KVMTUNE_SYSCTL_DIR"
               --proc-sys-vm "$KVMTUNE_PROC_SYS_VM")
    fi
    _kvmtune post-config "${args[@]}" || die $LINENO "kvmtune post-config failed"
}

function init_kvmtune {
    local args=(--os-cloud "$KVMTUNE_OS_CLOUD" --profiles "$KVMTUNE_PROFILES"
                --base-flavor "$KVMTUNE_BASE_FLAVOR"
                --image-dir "$KVMTUNE_IMAGE_DIR"
                --image-name "$KVMTUNE_IMAGE_NAME")
    if [[ "$KVMTUNE_TAG_HOST" == "True" ]]; then
        args+=(--tag-host)
    fi
    if [[ "$KVMTUNE_BUILD_IMAGE" == "True" ]]; then
        args+=(--build-image)
    fi
    _kvmtune extra "${args[@]}" || die $LINENO "kvmtune extra failed"
}

function configure_tempest_kvmtune {
    local options option value
    # One "option value" line per [kvmtune] option; recorded for clean.
    options=$(_kvmtune tempest-options --record) \
        || die $LINENO "kvmtune tempest-options failed"
    while read -r option value; do
        if [[ -n "$option" ]]; then
            iniset "$TEMPEST_CONFIG" kvmtune "$option" "$value"
        fi
    done <<< "$options"
}

function unstack_kvmtune {
    _kvmtune unstack --os-cloud "$KVMTUNE_OS_CLOUD" \
        || die $LINENO "kvmtune unstack failed"
}

function clean_kvmtune {
    local option
    if [[ -f "${TEMPEST_CONFIG:-}" ]]; then
        for option in $(_kvmtune tempest-options --recorded-names); do
            inidelete "$TEMPEST_CONFIG" kvmtune "$option"
        done
    fi
    _kvmtune clean || die $LINENO "kvmtune clean failed"
}

if is_service_enabled kvmtune; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing kvmtune"
        install_kvmtune
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring nova.conf for kvmtune profiles"
        configure_kvmtune
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Creating kvmtune flavors, traits and image"
        init_kvmtune
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        if is_service_enabled tempest; then
            echo_summary "Configuring Tempest for kvmtune"
            configure_tempest_kvmtune
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        unstack_kvmtune
    fi

    if [[ "$1" == "clean" ]]; then
        clean_kvmtune
    fi
fi
