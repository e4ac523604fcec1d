#!/usr/bin/env bash
# test_opencl_fused (minfer::RMSNormalization and Attention on the OpenCL
# provider against the CPU provider) under oclgrind, the simulator that
# checks every memory access of every work-item: out-of-bounds accesses,
# data races, barrier divergence and OpenCL API errors fail the test, then,
# as test_opencl_oclgrind.sh does for the other kernels, uninitialised reads
# (unoptimised kernels, every device write a kernel). Skipped (77) without
# oclgrind. About 3 s and 5 s on the CI machine.
#
# usage: test_opencl_fused_oclgrind.sh TEST_OPENCL_FUSED
set -euo pipefail
test_bin=$1
command -v oclgrind >/dev/null || {
    echo "test_opencl_fused_oclgrind: oclgrind not installed (tools/install-deps.sh)" >&2
    exit 77
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-oclgrind-fused.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export MINFER_LOG=info
if [[ -n ${ASAN_OPTIONS:-} ]]; then # as in test_opencl_oclgrind.sh
    export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
fi
errors="Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected|Uninitialized|uninitialized"

# run NAME OCLGRIND_FLAGS...
run() {
    local name=$1 rc=0
    shift
    XDG_CACHE_HOME=$tmp/cache-$name oclgrind --data-races --check-api "$@" "$test_bin" \
        >"$tmp/$name.log" 2>&1 || rc=$?
    if ((rc != 0)); then
        tail -40 "$tmp/$name.log" >&2
        echo "test_opencl_fused_oclgrind: $name: exit $rc" >&2
        exit 1
    fi
    if ! grep -q "opencl: using device .*'Oclgrind Simulator'" "$tmp/$name.log"; then
        echo "test_opencl_fused_oclgrind: $name: the provider did not run on oclgrind" >&2
        exit 1
    fi
    if grep -Eq "$errors" "$tmp/$name.log"; then
        grep -E -A8 "$errors" "$tmp/$name.log" | head -60 >&2
        echo "test_opencl_fused_oclgrind: $name: oclgrind reported errors (above)" >&2
        exit 1
    fi
    echo "test_opencl_fused_oclgrind: $name: $(grep -c 'OK \]' "$tmp/$name.log") cases, no oclgrind errors"
}

run checks
MINFER_OPENCL_KERNEL_COPIES=1 run uninit --uninitialized --build-options -cl-opt-disable
