#!/usr/bin/env bash
# The parallel scheduler gives results identical, byte for byte, to the
# sequential scheduler's (docs/scheduling.md): every test case under the given
# directories (a directory holding model.onnx and test_data_set_*/input_*.pb:
# the ONNX backend suite, the shared models, the model corpus) is run with
# both, at 2 threads, on the provider list PROVIDERS, and every output file is
# compared with cmp. A case both schedulers fail the same way is counted apart
# (it is another test's business); one failing under only one is a failure.
#
# usage: sched_identical.sh MINFER_CLI PROVIDERS DIR...
set -uo pipefail

minfer=$1
providers=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/minfer-sched.XXXXXX")
trap 'rm -rf "$work"' EXIT
same=0 differ=0 both_fail=0 cases=0
for dir in "$@"; do
    [[ -d $dir ]] || { echo "sched_identical: $dir not found" >&2; exit 1; }
    while IFS= read -r model; do
        case_dir=$(dirname "$model")
        for data in "$case_dir"/test_data_set_*; do
            [[ -d $data ]] || continue
            cases=$((cases + 1))
            rm -rf "$work/seq" "$work/par"
            "$minfer" run "$model" --providers "$providers" --threads 2 --inputs "$data" \
                --outputs "$work/seq" >/dev/null 2>"$work/seq.err"
            rs=$?
            "$minfer" --scheduler parallel run "$model" --providers "$providers" --threads 2 \
                --inputs "$data" --outputs "$work/par" >/dev/null 2>"$work/par.err"
            rp=$?
            if [[ $rs -ne 0 && $rp -ne 0 ]]; then
                both_fail=$((both_fail + 1))
                continue
            fi
            if [[ $rs -ne $rp ]]; then
                echo "DIFFER $data: sequential exit $rs, parallel exit $rp" >&2
                tail -n 2 "$work/seq.err" "$work/par.err" >&2
                differ=$((differ + 1))
                continue
            fi
            ok=1
            for f in "$work"/seq/*; do
                cmp -s "$f" "$work/par/$(basename "$f")" || ok=0
            done
            [[ $(ls "$work/seq" | wc -l) -eq $(ls "$work/par" | wc -l) ]] || ok=0
            if [[ $ok -eq 1 ]]; then
                same=$((same + 1))
            else
                echo "DIFFER $data: outputs not identical" >&2
                differ=$((differ + 1))
            fi
        done
    done < <(find "$dir" -name model.onnx | sort)
done
echo "sched_identical: $cases cases: $same identical, $differ differ, $both_fail fail under both"
[[ $cases -gt 0 && $differ -eq 0 && $same -gt 0 ]]
