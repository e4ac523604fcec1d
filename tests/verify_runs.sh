#!/usr/bin/env bash
# The issue's second done-when: for every case of the ONNX backend test suite
# that `minfer test` passes, `minfer run` on the case's model and
# test_data_set_0 inputs writes output files that an independent script
# (tests/verify_with_onnx.py: the onnx package's reader, numpy's
# arithmetic, the same tolerances) finds equal to the reference files. This
# checks minfer's .pb writer and `minfer run`'s input binding too, which
# `minfer test` never exercises.
#
# usage: verify_runs.sh MINFER_CLI DATA_DIR [PYTHON]
# Exits 77 (ctest: skipped) when PYTHON (default /usr/bin/python3: a pyenv
# python3 on PATH may lack the Debian packages) cannot import onnx and numpy.
set -euo pipefail

minfer=$1
data=$2
py=${3:-/usr/bin/python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jobs=${VERIFY_JOBS:-2}

[[ -d $data ]] || { echo "verify_runs: $data not found (install libonnx-testdata)" >&2; exit 1; }
if ! "$py" -c 'import onnx, numpy' 2>/dev/null; then
    echo "verify_runs: skipped: $py cannot import onnx and numpy" \
         "(install the Debian packages python3-onnx and python3-numpy)"
    exit 77
fi

# Cases whose `minfer run` is known not to match, each with its reason; one
# that matches again is reported so that it can leave the list.
declare -A known=()

work=$(mktemp -d "${TMPDIR:-/tmp}/minfer-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. The cases minfer test passes (data set 0 is the one `minfer run` reads).
rc=0
"$minfer" test -v --providers cpu "$data" >"$work/test.txt" 2>&1 || rc=$?
summary=$(tail -n 1 "$work/test.txt")
if ! [[ $summary =~ ^[0-9]+\ passed ]]; then
    echo "verify_runs: minfer test gave no summary (exit status $rc)" >&2
    tail -n 5 "$work/test.txt" >&2
    exit 1
fi
sed -n 's#^ok \(.*\)/test_data_set_0$#\1#p' "$work/test.txt" >"$work/cases"
total=$(wc -l <"$work/cases")
((total > 0)) || { echo "verify_runs: minfer test passed no case" >&2; exit 1; }

# 2. minfer run on each, $jobs at a time, into out/N (N: the case's line).
mkdir -p "$work/out"
awk '{ printf "%d\t%s\n", NR, $0 }' "$work/cases" >"$work/numbered"
export minfer work
# shellcheck disable=SC2016
xargs -P "$jobs" -L 1 -d '\n' bash -c '
    n=${0%%	*}
    case=${0#*	}
    if ! "$minfer" run "$case/model.onnx" --providers cpu --inputs "$case/test_data_set_0" \
            --outputs "$work/out/$n" >"$work/out/$n.log" 2>&1; then
        echo "RUNFAIL $case: $(tail -n 1 "$work/out/$n.log")" >"$work/out/$n.fail"
    fi' <"$work/numbered"

# 3. The independent comparison, one python process for every case.
awk -F '\t' -v w="$work/out" '{ printf "%s\t%s/%d\n", $2, w, $1 }' "$work/numbered" \
    >"$work/pairs"
prc=0
"$py" "$here/verify_with_onnx.py" --rtol 1e-3 --atol 1e-7 --list "$work/pairs" \
    >"$work/verify.txt" 2>&1 || prc=$?
if ! grep -q '^verify_with_onnx: ' "$work/verify.txt"; then
    echo "verify_runs: verify_with_onnx.py gave no summary (exit status $prc)" >&2
    tail -n 5 "$work/verify.txt" >&2
    exit 1
fi

# 4. Every run failure or mismatch must be a known one.
bad=0
declare -A failed=()
while IFS= read -r line; do
    [[ $line =~ ^(RUNFAIL|MISMATCH)\ ([^:]*):\ (.*)$ ]] || continue
    name=${BASH_REMATCH[2]#"$data"/}
    [[ -z ${failed[$name]:-} ]] || continue
    failed[$name]=1
    if [[ -n ${known[$name]:-} ]]; then
        echo "verify_runs: known: $name: ${known[$name]}"
    else
        echo "verify_runs: ${BASH_REMATCH[1]} $name: ${BASH_REMATCH[3]}" >&2
        bad=1
    fi
done < <(cat "$work"/out/*.fail 2>/dev/null || true; cat "$work/verify.txt")
for name in "${!known[@]}"; do
    [[ -n ${failed[$name]:-} ]] || echo "verify_runs: $name now matches: remove it from the known list"
done
tail -n 1 "$work/verify.txt"
echo "verify_runs: $total cases that minfer test passes, run with minfer run and compared"
exit $bad
