#!/usr/bin/env bash
# The whole ONNX backend test suite (libonnx-testdata) on the CPU provider,
# with the backend tests' default tolerances (rtol 1e-3, atol 1e-7).
#
# Fails when
#  - a case fails or is skipped and is not in EXPECTED (tests/conformance_expected.txt:
#    "<suite>/<case>  <reason>" per line, '#' comments);
#  - the pass count is below the count recorded in COUNT (tests/conformance_count.txt);
#  - minfer itself crashes or times out (no summary line).
# A case of EXPECTED that now passes is reported, so the list can shrink.
#
# usage: conformance.sh MINFER_CLI DATA_DIR EXPECTED COUNT
set -euo pipefail

minfer=$1
data=$2
expected=$3
countfile=$4
[[ -d $data ]] || { echo "conformance: $data not found (install libonnx-testdata)" >&2; exit 1; }

out=$(mktemp "${TMPDIR:-/tmp}/minfer-conformance.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
"$minfer" test --providers cpu --atol 1e-7 "$data" >"$out" 2>&1 || rc=$?
summary=$(tail -n 1 "$out")
if ! [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
    echo "conformance: no summary line (exit status $rc); last lines:" >&2
    tail -n 5 "$out" >&2
    exit 1
fi
passed=${BASH_REMATCH[1]}
echo "conformance: $summary"

declare -A listed=()
while read -r name _; do
    [[ -z $name || $name == \#* ]] && continue
    listed[$name]=1
done <"$expected"

bad=0
declare -A seen=()
while IFS= read -r line; do
    [[ $line =~ ^(FAIL|SKIP)\ (.*)$ ]] || continue
    kind=${BASH_REMATCH[1]}
    rest=${BASH_REMATCH[2]}
    path=${rest%%:*}
    name=${path#"$data"/}
    seen[$name]=1
    if [[ -z ${listed[$name]:-} ]]; then
        echo "conformance: unexpected $kind: $rest" >&2
        bad=1
    fi
done <"$out"

for name in "${!listed[@]}"; do
    [[ -n ${seen[$name]:-} ]] || echo "conformance: $name now passes: remove it from $(basename "$expected")"
done

want=$(grep -Eo '^[0-9]+' "$countfile" | head -n 1)
if ((passed < want)); then
    echo "conformance: $passed passed, fewer than the $want recorded in $(basename "$countfile")" >&2
    bad=1
fi
exit $bad
