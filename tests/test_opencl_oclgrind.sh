#!/usr/bin/env bash
# The OpenCL provider's kernels under oclgrind (Debian package oclgrind), a
# simulator that checks every memory access of every work-item: a few small
# ONNX node cases covering each kernel family run through `minfer test
# --providers opencl,cpu` with oclgrind as the only OpenCL platform, first
# with the own GEMM kernels, then with GEMM forced onto CLBlast (when the
# provider was built with it). The test fails when a case fails, when the
# provider did not run on the simulator, or when oclgrind reports an
# out-of-bounds access, a data race (--data-races), a barrier divergence or
# an OpenCL API error (--check-api).
#
# oclgrind 21.10's uninitialised-value plugin (--uninitialized) is not used:
# on optimised code it stops at LLVM's freeze instruction ("Unsupported
# instruction: freeze") and leaves outputs unwritten, and with -cl-opt-disable
# it reports the inputs written through mapped buffers (docs/opencl.md).
#
# Cost: about 2 s on the CI machine (the cases are a few hundred elements).
#
# usage: test_opencl_oclgrind.sh MINFER_CLI NODE_DATA_DIR
set -euo pipefail

minfer=$1
node_dir=$2
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

# run NAME GEMM_MODE CASE_DIR...
run() {
    local name=$1 mode=$2 rc=0
    shift 2
    MINFER_OPENCL_GEMM=$mode oclgrind --data-races --check-api \
        "$minfer" test --providers opencl,cpu "$@" >"$tmp/$name.out" 2>"$tmp/$name.log" || rc=$?
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
    if grep -Eq "Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected|Uninitialized" \
        "$tmp/$name.log"; then
        grep -E -A8 "Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected|Uninitialized" \
            "$tmp/$name.log" | head -60 >&2
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
