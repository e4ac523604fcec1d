#!/usr/bin/env bash
# The ONNX backend test suite (or part of it), once with --providers cpu and
# once with PROVIDERS (e.g. onednn,cpu): every case that passes on the CPU
# provider must pass with the other provider in front of it.
#
# usage: provider_conformance.sh MINFER_CLI DATA_DIR PROVIDERS
set -euo pipefail

minfer=$1
node_dir=$2
providers=$3
[[ -d $node_dir ]] || { echo "provider_conformance: $node_dir not found" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-provider-conf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Cases that did not pass: FAIL and SKIP lines name the case directory.
not_passed() {
    "$minfer" test --providers "$1" --atol 1e-7 "$node_dir" >"$tmp/$2.log" 2>&1 || true
    grep -E '^(FAIL|SKIP) ' "$tmp/$2.log" | awk '{ print $2 }' | sed 's/:$//' | sort -u >"$tmp/$2.bad"
    tail -n 1 "$tmp/$2.log"
}
echo "cpu:        $(not_passed cpu cpu)"
echo "$providers: $(not_passed "$providers" other)"
regressed=$(comm -13 "$tmp/cpu.bad" "$tmp/other.bad")
if [[ -n $regressed ]]; then
    echo "provider_conformance: cases that pass on cpu but not with $providers:" >&2
    for c in $regressed; do
        grep -F "$c" "$tmp/other.log" | head -n 2 >&2
    done
    exit 1
fi
