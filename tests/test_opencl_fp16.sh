#!/usr/bin/env bash
# The OpenCL provider with half storage (MINFER_OPENCL_FP16=1) on the model
# test cases: every data set must pass `minfer test --providers opencl,cpu`
# within rtol 1e-2, atol 1e-2 of the reference outputs (the largest error
# measured on the shared models was 6.6e-3, mobilenet_v2; docs/opencl.md),
# and the provider must say that it stores float tensors as half, so a
# pass cannot come from the option being ignored.
#
# usage: test_opencl_fp16.sh MINFER_CLI MODELS_DIR
set -euo pipefail

minfer=$1
models=$2
[[ -d $models ]] || { echo "test_opencl_fp16: $models not found (set MINFER_MODELS_DIR)" >&2; exit 1; }

sets=$(find -L "$models" -type d -name 'test_data_set_*' | wc -l)
((sets > 0)) || { echo "test_opencl_fp16: no test_data_set_* under $models" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-ocl-fp16.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rc=0
MINFER_OPENCL_FP16=1 MINFER_LOG=info \
    "$minfer" test --providers opencl,cpu --rtol 1e-2 --atol 1e-2 "$models" \
    >"$tmp/out" 2>"$tmp/log" || rc=$?
cat "$tmp/out"
summary=$(tail -n 1 "$tmp/out")
if ((rc != 0)) || [[ "$summary" != "$sets passed, 0 failed, 0 skipped" ]]; then
    grep -v "^minfer info" "$tmp/log" >&2 || true
    echo "test_opencl_fp16: exit $rc, summary '$summary', want '$sets passed, 0 failed, 0 skipped'" >&2
    exit 1
fi
if ! grep -q "opencl: float tensors stored as half" "$tmp/log"; then
    echo "test_opencl_fp16: the provider did not report half storage" >&2
    exit 1
fi
if grep -q "skipping provider 'opencl'" "$tmp/log"; then
    echo "test_opencl_fp16: the opencl provider was skipped" >&2
    exit 1
fi
echo "test_opencl_fp16: $sets data sets within rtol 1e-2, atol 1e-2 with half storage"
