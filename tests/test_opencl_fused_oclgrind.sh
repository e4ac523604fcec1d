#!/usr/bin/env bash
# test_opencl_fused (minfer:RMSNormalization and Attention on the OpenCL
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
errors="Invalid (read|write)|data race|divergence|OCLGRIND FATAL|runtime error detected|Uninitialized|uninitialized"
# shellcheck source=tests/oclgrind_bin.sh
source "$(dirname "$0")/oclgrind_bin.sh"

oclgrind_bin test_opencl_fused_oclgrind checks "$test_bin"
MINFER_OPENCL_KERNEL_COPIES=1 oclgrind_bin test_opencl_fused_oclgrind uninit "$test_bin" \
    --uninitialized --build-options -cl-opt-disable
