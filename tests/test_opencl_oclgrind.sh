#!/usr/bin/env bash
# The OpenCL provider's kernels under oclgrind (Debian package oclgrind), a
# simulator that checks every memory access of every work-item: a few small
# ONNX node cases covering each kernel family run through `minfer test
# --providers opencl,cpu` with oclgrind as the only OpenCL platform, first
# with the own GEMM kernels, then with GEMM forced onto CLBlast (when the
# provider was built with it). The test fails when a case fails, when the
# provider did not run on the simulator, or when oclgrind reports an
# out-of-bounds access, a data race (--data-races), a barrier divergence,
# an OpenCL API error (--check-api) or a use of uninitialised memory.
#
# The uninitialised-value check (--uninitialized) runs as a third pass, on
# the same cases with float32 and with half storage, with two settings
# oclgrind 21.10 needs: --build-options -cl-opt-disable, as the plugin
# stops at LLVM's freeze instruction in optimised code ("Unsupported
# instruction: freeze"); and the provider option kernel_copies=1, as the
# plugin loses track of a buffer that a host command (a write, a copy, a
# fill) writes at an offset (it replaces its record of the whole buffer by
# one the size of the write), which reported every input of every kernel
# reading the session's arena; with kernel_copies=1 those writes are
# kernels, which it tracks. CLBlast's own copies cannot be routed so, and
# its pass runs without --uninitialized.
#
# First, oclgrind_canary (tests/oclgrind_canary.c) runs kernels with an
# out-of-bounds read, an uninitialised read and a data race under the same
# flags: each must be reported through the patterns below, and a clean one
# must not, so a checker that stopped seeing one of them fails the test.
#
# Cost: about 2 s on the CI machine for the first two passes, 10 s for the
# third (unoptimised kernels), 20-30 s in all under ASan.
#
# usage: test_opencl_oclgrind.sh MINFER_CLI NODE_DATA_DIR OCLGRIND_CANARY
set -euo pipefail

minfer=$1
node_dir=$2
canary=$3
command -v oclgrind >/dev/null || {
    echo "test_opencl_oclgrind: oclgrind not installed (tools/install-deps.sh)" >&2
    exit 77
}
[[ -d $node_dir ]] || { echo "test_opencl_oclgrind: $node_dir not found (install libonnx-testdata)" >&2; exit 1; }

cases=(test_add_bcast test_relu test_batchnorm_example test_conv_with_strides_padding
       test_maxpool_2d_pads test_globalaveragepool test_gemm_default_matrix_bias
       test_matmul_3d test_softmax_axis_1 test_layer_normalization_2d_axis0
       test_transpose_default test_concat_2d_axis_0 test_gather_0
       test_reduce_sum_default_axes_keepdims_example)
dirs=()
for c in "${cases[@]}"; do
    [[ -d $node_dir/$c ]] || { echo "test_opencl_oclgrind: no case $c in $node_dir" >&2; exit 1; }
    dirs+=("$node_dir/$c")
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-oclgrind.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A cache of its own: program binaries of the simulator, and its tuning.
export XDG_CACHE_HOME=$tmp/cache MINFER_LOG=info
# Under ASan (the CI's sanitizer pass) oclgrind's preloaded runtime comes
# before libasan, and the simulator's own allocations are not the
# provider's: the other OpenCL tests check the provider's leaks.
if [[ -n ${ASAN_OPTIONS:-} ]]; then
    export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
fi

# What oclgrind prints for each error it finds.
errors="Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected|Uninitialized|uninitialized"

# The canaries: each kind of error must be seen, and nothing in a clean kernel.
for mode in oob uninit race clean; do
    oclgrind --data-races --check-api --uninitialized "$canary" $mode >"$tmp/canary.log" 2>&1 || true
    found=0 want=1
    grep -Eq "$errors" "$tmp/canary.log" && found=1
    [[ $mode == clean ]] && want=0
    grep -q "oclgrind_canary $mode: ran" "$tmp/canary.log" || found=-1
    if ((found != want)); then
        cat "$tmp/canary.log" >&2
        echo "test_opencl_oclgrind: canary '$mode': oclgrind's report is not what it must be" >&2
        exit 1
    fi
done
echo "test_opencl_oclgrind: oclgrind reports an out-of-bounds read, an uninitialised read and a race"

# run NAME GEMM_MODE CASE_DIR... (OCLGRIND_FLAGS: more oclgrind options;
# TOL: minfer test's tolerances, when not its defaults)
run() {
    local name=$1 mode=$2 rc=0
    shift 2
    # shellcheck disable=SC2086
    MINFER_OPENCL_GEMM=$mode oclgrind --data-races --check-api ${OCLGRIND_FLAGS:-} \
        "$minfer" test --providers opencl,cpu ${TOL:-} "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" ||
        rc=$?
    local want="$# passed, 0 failed, 0 skipped" got
    got=$(tail -n 1 "$tmp/$name.out")
    if ((rc != 0)) || [[ $got != "$want" ]]; then
        cat "$tmp/$name.out" >&2
        echo "test_opencl_oclgrind: $name: exit $rc, summary '$got', want '$want'" >&2
        exit 1
    fi
    if ! grep -q "opencl: using device .*'Oclgrind Simulator'" "$tmp/$name.log"; then
        grep -v "^minfer info: \(node\|value\)" "$tmp/$name.log" | head -20 >&2
        echo "test_opencl_oclgrind: $name: the provider did not run on oclgrind" >&2
        exit 1
    fi
    if grep -Eq "$errors" "$tmp/$name.log"; then
        grep -E -A8 "$errors" "$tmp/$name.log" | head -60 >&2
        echo "test_opencl_oclgrind: $name: oclgrind reported errors (above)" >&2
        exit 1
    fi
    echo "test_opencl_oclgrind: $name: $# cases, no oclgrind errors"
}

run own own "${dirs[@]}"
# CLBlast's GEMM, when the provider has it: the log names each node it took.
run clblast clblast "$node_dir/test_gemm_default_matrix_bias" "$node_dir/test_matmul_3d"
if grep -q "GEMM on CLBlast" "$tmp/clblast.log"; then
    echo "test_opencl_oclgrind: CLBlast's GEMM checked too"
else
    echo "test_opencl_oclgrind: provider built without CLBlast; its GEMM not checked"
fi
# Uninitialised reads: unoptimised kernels (their own program cache), every
# device write a kernel; float32, then half storage.
export XDG_CACHE_HOME=$tmp/cache-unopt MINFER_OPENCL_KERNEL_COPIES=1
OCLGRIND_FLAGS="--uninitialized --build-options -cl-opt-disable" run uninit own "${dirs[@]}"
# (half storage: the tolerance of opencl_models_fp16)
MINFER_OPENCL_FP16=1 TOL="--rtol 1e-2 --atol 1e-2" \
    OCLGRIND_FLAGS="--uninitialized --build-options -cl-opt-disable" run uninit-fp16 own "${dirs[@]}"
if ! grep -q "float tensors stored as half" "$tmp/uninit-fp16.log"; then
    echo "test_opencl_oclgrind: the fp16 pass did not store half" >&2
    exit 1
fi
