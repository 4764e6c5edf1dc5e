#!/bin/bash
# plugin.sh - DevStack plugin for kvmtune.
#
# DevStack sources this file as "plugin.sh MODE [PHASE]" from stack.sh,
# unstack.sh and clean.sh, as the stack user (never root). The work is done
# by "python -m kvmtune.devstack", which records every change it makes in
# $KVMTUNE_STATE_DIR/changes.json; unstack and clean undo exactly those.
#
#   stack install      setup_develop $KVMTUNE_DIR
#   stack post-config  profiles' options into $NOVA_CONF (DevStack copies it
#                      to $NOVA_CPU_CONF when it starts nova-compute);
#                      modprobe files and huge page pools when
#                      KVMTUNE_ENABLE_NESTED / KVMTUNE_ALLOCATE_HUGEPAGES
#                      allow them (through sudo)
#   stack extra        tuned flavors, benchmark image (controller only),
#                      host traits (KVMTUNE_TAG_HOST)
#   stack test-config  [kvmtune] options in $TEMPEST_CONFIG
#   unstack            flavors, traits and image the plugin made (the cloud
#                      is still up when unstack.sh calls plugins)
#   clean              [kvmtune] options, nova.conf and nova-cpu.conf
#                      options (earlier values back), modprobe files, pools

# The Python that setup_develop installed kvmtune into, found as DevStack
# finds it (inc/python): stack.sh exports PYTHON, the global virtualenv's
# python3 when GLOBAL_VENV=True, else python$PYTHON3_VERSION. unstack.sh
# and clean.sh do not set PYTHON and .stackenv does not save it, so the
# same rule is applied to what stackrc gives them.
function _kvmtune_python {
    if [[ -n "${PYTHON:-}" ]]; then
        echo "$PYTHON"
    elif [[ "${GLOBAL_VENV:-True}" == "True" && \
            -x "${DEVSTACK_VENV:-}/bin/python3" ]]; then
        echo "$DEVSTACK_VENV/bin/python3"
    else
        echo "python${PYTHON3_VERSION:-3}"
    fi
}

function _kvmtune {
    local python
    python=$(_kvmtune_python)
    "$python" -m kvmtune.devstack --state-dir "$KVMTUNE_STATE_DIR" "$@"
}

# A node that runs nova-api is the controller: flavors, the image and the
# Tempest options are made there. A compute-only subnode tunes its own
# nova.conf and host only.
function _kvmtune_is_controller {
    is_service_enabled n-api
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
        args+=(--hugepages "$KVMTUNE_HUGEPAGES")
    fi
    if [[ -n "$KVMTUNE_NOVA_PYTHON" ]]; then
        args+=(--nova-python "$KVMTUNE_NOVA_PYTHON")
    fi
    _kvmtune post-config "${args[@]}" || die $LINENO "kvmtune post-config failed"
}

function init_kvmtune {
    local args=(--os-cloud "$KVMTUNE_OS_CLOUD" --profiles "$KVMTUNE_PROFILES"
                --base-flavor "$KVMTUNE_BASE_FLAVOR"
                --image-dir "$KVMTUNE_IMAGE_DIR"
                --image-name "$KVMTUNE_IMAGE_NAME")
    if ! _kvmtune_is_controller; then
        args+=(--compute-only)
    fi
    if [[ "$KVMTUNE_TAG_HOST" == "True" ]]; then
        args+=(--tag-host)
    fi
    if [[ "$KVMTUNE_BUILD_IMAGE" == "True" ]]; then
        args+=(--build-image)
    fi
    _kvmtune extra "${args[@]}" || die $LINENO "kvmtune extra failed"
}

function configure_tempest_kvmtune {
    _kvmtune test-config --tempest-config "$TEMPEST_CONFIG" \
        || die $LINENO "kvmtune test-config failed"
}

function unstack_kvmtune {
    _kvmtune unstack --os-cloud "$KVMTUNE_OS_CLOUD" \
        || die $LINENO "kvmtune unstack failed"
}

# clean.sh does not source lib/tempest: the tempest.conf to clean is the
# one test-config recorded.
function clean_kvmtune {
    _kvmtune clean --nova-cpu-conf "${NOVA_CPU_CONF:-}" \
        || die $LINENO "kvmtune clean failed"
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
        if is_service_enabled tempest && _kvmtune_is_controller; then
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
