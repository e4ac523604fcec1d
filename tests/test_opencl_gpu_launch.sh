#!/usr/bin/env bash
# The OpenCL kernels with a GPU's launch shapes, under oclgrind. On a GPU
# the provider pads dimension 0 of a grid to whole work-groups (warps of
# 32) and uses the 4 x 8 register tile; on PoCL and oclgrind it launches
# groups of 1 or 8 and never pads, so no test here saw a GPU's bounds.
# On an NVIDIA H200 conv_tile read past its packed weights from the padded
# rows of dimension 1 and global_pool wrote past its output: the driver
# reported CL_OUT_OF_RESOURCES and then refused the process every new
# context. MINFER_OPENCL_LAUNCH=gpu gives oclgrind those launches, and
# test_opencl and test_opencl_fused (every kernel family against the CPU
# provider) run under it: an out-of-bounds access, a race or an API error
# fails the test. Skipped (77) without oclgrind. About 5 s.
#
# usage: test_opencl_gpu_launch.sh TEST_OPENCL TEST_OPENCL_FUSED
set -euo pipefail
command -v oclgrind >/dev/null || {
    echo "test_opencl_gpu_launch: oclgrind not installed (tools/install-deps.sh)" >&2
    exit 77
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-oclgrind-gpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export MINFER_LOG=info MINFER_OPENCL_LAUNCH=gpu
if [[ -n ${ASAN_OPTIONS:-} ]]; then # as in test_opencl_oclgrind.sh
    export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
fi
errors="Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected"
for bin in "$@"; do
    name=$(basename "$bin") rc=0
    XDG_CACHE_HOME=$tmp/cache-$name oclgrind --data-races --check-api "$bin" \
        >"$tmp/$name.log" 2>&1 || rc=$?
    if ((rc != 0)); then
        tail -40 "$tmp/$name.log" >&2
        echo "test_opencl_gpu_launch: $name: exit $rc" >&2
        exit 1
    fi
    if ! grep -q "opencl: using device .*'Oclgrind Simulator'" "$tmp/$name.log" ||
        ! grep -q "launch shapes and register tile of a GPU" "$tmp/$name.log"; then
        echo "test_opencl_gpu_launch: $name: did not run on oclgrind with a GPU's launches" >&2
        exit 1
    fi
    if grep -Eq "$errors" "$tmp/$name.log"; then
        grep -E -A8 "$errors" "$tmp/$name.log" | head -60 >&2
        echo "test_opencl_gpu_launch: $name: oclgrind reported errors (above)" >&2
        exit 1
    fi
    echo "test_opencl_gpu_launch: $name: $(grep -c 'OK \]' "$tmp/$name.log") cases, no oclgrind errors"
done
