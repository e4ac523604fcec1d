#!/usr/bin/env bash
# `minfer run` end to end: runs CASE/model.onnx on CASE/test_data_set_0 with
# --outputs, checks that exactly the expected output_K.pb files are written
# and that each matches the reference (rtol 1e-3, atol 1e-4).
#
# usage: run_model.sh MINFER_CLI MAKE_BAD_MODELS CASE_DIR
set -euo pipefail

minfer=$1
compare=$2
case_dir=$3
data=$case_dir/test_data_set_0
[[ -f $case_dir/model.onnx && -d $data ]] || { echo "run_model: no test case in $case_dir" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-run-model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

MINFER_PROVIDERS=cpu "$minfer" run "$case_dir/model.onnx" --inputs "$data" --outputs "$tmp/out"

want=$(cd "$data" && ls output_*.pb | sort)
got=$(cd "$tmp/out" && ls | sort)
if [[ "$want" != "$got" ]]; then
    echo "run_model: wrote [$got], want [$want]" >&2
    exit 1
fi
for f in $want; do
    "$compare" compare "$tmp/out/$f" "$data/$f" 1e-3 1e-4
done
echo "run_model: $(echo $want | wc -w) output(s) match the reference"
