#!/usr/bin/env bash
# No OpenCL platform at all (OCL_ICD_VENDORS pointing at an empty
# directory): `MINFER_PROVIDERS=opencl,cpu minfer run` must still write the
# right outputs, and warn exactly once that opencl is unavailable and why.
#
# usage: test_opencl_fallback.sh MINFER_CLI MAKE_BAD_MODELS CASE_DIR
set -euo pipefail

minfer=$1
compare=$2
case_dir=$3
data=$case_dir/test_data_set_0
[[ -f $case_dir/model.onnx && -d $data ]] || { echo "test_opencl_fallback: no test case in $case_dir" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-ocl-fallback.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/vendors"

OCL_ICD_VENDORS=$tmp/vendors MINFER_PROVIDERS=opencl,cpu \
    "$minfer" run "$case_dir/model.onnx" --inputs "$data" --outputs "$tmp/out" 2>"$tmp/err"
cat "$tmp/err" >&2
for f in $(cd "$data" && ls output_*.pb); do
    "$compare" compare "$tmp/out/$f" "$data/$f" 1e-3 1e-4
done
n=$(grep -c "opencl" "$tmp/err" || true)
if ((n != 1)); then
    echo "test_opencl_fallback: want one warning about opencl, got $n lines" >&2
    exit 1
fi
grep -q "no OpenCL platform" "$tmp/err" || {
    echo "test_opencl_fallback: the warning does not say why" >&2
    exit 1
}
echo "test_opencl_fallback: outputs match on cpu; one warning: $(grep opencl "$tmp/err")"
