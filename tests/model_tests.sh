#!/usr/bin/env bash
# `minfer test` over a directory of ONNX test cases: every data set must
# pass, none may be skipped, and the summary must count them all.
#
# usage: model_tests.sh MINFER_CLI MODELS_DIR [minfer test options...]
set -euo pipefail

minfer=$1
models=$2
shift 2
[[ -d $models ]] || { echo "model_tests: $models not found (set MINFER_MODELS_DIR)" >&2; exit 1; }

sets=$(find -L "$models" -type d -name 'test_data_set_*' | wc -l)
if ((sets == 0)); then
    echo "model_tests: no test_data_set_* under $models" >&2
    exit 1
fi

out=$(mktemp "${TMPDIR:-/tmp}/minfer-model-tests.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
"$minfer" test "$@" "$models" | tee "$out" || rc=$?
summary=$(tail -n 1 "$out")
if ((rc != 0)); then
    echo "model_tests: minfer test exited with $rc" >&2
    exit 1
fi
if [[ "$summary" != "$sets passed, 0 failed, 0 skipped" ]]; then
    echo "model_tests: summary '$summary', want '$sets passed, 0 failed, 0 skipped'" >&2
    exit 1
fi
