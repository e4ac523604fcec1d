#!/usr/bin/env bash
# The ONNX backend node suite through compiled files: every node model is
# compiled (CPU provider) and its test case run from the compiled file; the
# cases that fail must be exactly those that fail from the ONNX files (the
# suite's expected failures: tests/conformance_expected.txt), and every
# model must compile (control flow, sequences, optionals, training ops
# included).
#   mfc_node_tests.sh MINFER NODE_DIR
set -u
minfer=$1
nodes=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for d in "$nodes"/*/; do
    name=$(basename "$d")
    [[ -f $d/model.onnx ]] || continue
    mkdir -p "$tmp/mfc/$name"
    if ! "$minfer" compile "$d/model.onnx" -o "$tmp/mfc/$name/model.onnx" --providers cpu >/dev/null 2>"$tmp/err"; then
        echo "FAIL: $name does not compile: $(head -c 400 "$tmp/err")"
        fail=1
        rm -rf "${tmp:?}/mfc/$name"
        continue
    fi
    cp -r "$d"/test_data_set_* "$tmp/mfc/$name/"
    n=$((n + 1))
done
"$minfer" test --providers cpu "$nodes" >"$tmp/onnx.txt" 2>&1
"$minfer" test --providers cpu "$tmp/mfc" >"$tmp/mfc.txt" 2>&1
sed -n 's|^FAIL [^ ]*/\([^/:]*\):.*|\1|p' "$tmp/onnx.txt" | sort -u >"$tmp/onnx.fail"
sed -n 's|^FAIL [^ ]*/\([^/:]*\):.*|\1|p' "$tmp/mfc.txt" | sort -u >"$tmp/mfc.fail"
if ! cmp -s "$tmp/onnx.fail" "$tmp/mfc.fail"; then
    echo "FAIL: the failing cases differ (< from ONNX, > compiled):"
    diff "$tmp/onnx.fail" "$tmp/mfc.fail"
    grep '^FAIL' "$tmp/mfc.txt" | head -20
    fail=1
fi
echo "$n node models compiled; from ONNX: $(tail -1 "$tmp/onnx.txt"); compiled: $(tail -1 "$tmp/mfc.txt")"
[[ $n -gt 500 ]] || { echo "FAIL: only $n node models found under $nodes"; fail=1; }
exit $fail
