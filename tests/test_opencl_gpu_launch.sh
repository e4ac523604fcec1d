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
# fails the test; so does a work-group kernel (gemm_local*, conv_local*,
# forced in test_opencl's gemm=local passes) that did not run. Skipped
# (77) without oclgrind. About 15 s.
#
# usage: test_opencl_gpu_launch.sh TEST_OPENCL TEST_OPENCL_FUSED
set -euo pipefail
command -v oclgrind >/dev/null || {
    echo "test_opencl_gpu_launch: oclgrind not installed (tools/install-deps.sh)" >&2
    exit 77
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-oclgrind-gpu.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export MINFER_OPENCL_LAUNCH=gpu
errors="Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected"
must_log="launch shapes and register tile of a GPU"
# shellcheck source=tests/oclgrind_bin.sh
source "$(dirname "$0")/oclgrind_bin.sh"
for bin in "$@"; do
    oclgrind_bin test_opencl_gpu_launch "$(basename "$bin")" "$bin"
done
# test_opencl's passes with the work-group kernels forced (gemm=local1,
# gemm=local2): their barriers and local memory checked too.
for want in "convolution on local1" "GEMM on local1" "convolution on local2" "GEMM on local2"; do
    if ! grep -q "$want" "$tmp"/*.log; then
        echo "test_opencl_gpu_launch: no node says '$want': the work-group kernels did not run" >&2
        exit 1
    fi
done
echo "test_opencl_gpu_launch: the work-group GEMM and convolution kernels ran"

