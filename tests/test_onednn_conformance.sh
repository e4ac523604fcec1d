#!/usr/bin/env bash
# The whole ONNX backend node suite, once with --providers cpu and once with
# --providers onednn,cpu: every case that passes on the CPU provider must
# pass with the oneDNN provider in front of it.
#
# usage: test_onednn_conformance.sh MINFER_CLI NODE_DATA_DIR
set -euo pipefail

minfer=$1
node_dir=$2
[[ -d $node_dir ]] || { echo "test_onednn_conformance: $node_dir not found" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-onednn-conf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Cases that did not pass: FAIL and SKIP lines name the case directory.
not_passed() {
    "$minfer" test --providers "$1" "$node_dir" >"$tmp/$2.log" 2>&1 || true
    grep -E '^(FAIL|SKIP) ' "$tmp/$2.log" | awk '{ print $2 }' | sed 's/:$//' | sort -u >"$tmp/$2.bad"
    tail -n 1 "$tmp/$2.log"
}
echo "cpu:        $(not_passed cpu cpu)"
echo "onednn,cpu: $(not_passed onednn,cpu onednn)"
regressed=$(comm -13 "$tmp/cpu.bad" "$tmp/onednn.bad")
if [[ -n $regressed ]]; then
    echo "test_onednn_conformance: cases that pass on cpu but not with onednn,cpu:" >&2
    for c in $regressed; do
        grep -F "$c" "$tmp/onednn.log" | head -n 2 >&2
    done
    exit 1
fi
