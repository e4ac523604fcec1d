#!/usr/bin/env bash
# The parallel scheduler gives results identical, byte for byte, to the
# sequential scheduler's (docs/scheduling.md): every test case under the given
# directories (a directory holding model.onnx and test_data_set_*/input_*.pb:
# the ONNX backend suite, the shared models, the model corpus) is run with
# each scheduler of the list below and with the sequential one, at each
# thread count of SCHED_THREADS (default 2; more threads than CPUs is
# allowed), on the provider list PROVIDERS, and every output file is
# compared with cmp. A case both fail the same way is counted apart (it is
# another test's business); one failing under only one is a failure. A case
# whose outputs differ is run sequentially once more: when two sequential
# runs differ too (Bernoulli and other unseeded random ops), the case is
# counted as nondeterministic, not as a difference.
#
# usage: [SCHED_THREADS="2 8"] sched_identical.sh MINFER_CLI PROVIDERS DIR...
set -uo pipefail

schedulers=(parallel)
minfer=$1
providers=$2
shift 2
threads_list=${SCHED_THREADS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/minfer-sched.XXXXXX")
trap 'rm -rf "$work"' EXIT
same=0 differ=0 both_fail=0 cases=0 random=0

# Whether every output file of directory $1 equals the one of $2.
same_outputs() {
    local f
    [[ $(ls "$1" | wc -l) -eq $(ls "$2" | wc -l) ]] || return 1
    for f in "$1"/*; do
        cmp -s "$f" "$2/$(basename "$f")" || return 1
    done
}
# run SCHEDULER THREADS MODEL DATA OUT: the exit status of one run.
run() {
    rm -rf "$5"
    "$minfer" --scheduler "$1" run "$3" --providers "$providers" --threads "$2" \
        --inputs "$4" --outputs "$5" >/dev/null 2>"$5.err"
}
for dir in "$@"; do
    [[ -d $dir ]] || { echo "sched_identical: $dir not found" >&2; exit 1; }
    while IFS= read -r model; do
        case_dir=$(dirname "$model")
        for data in "$case_dir"/test_data_set_*; do
            [[ -d $data ]] || continue
            for threads in $threads_list; do
                run sequential "$threads" "$model" "$data" "$work/seq"
                rs=$?
                for sched in "${schedulers[@]}"; do
                    cases=$((cases + 1))
                    what="$data ($sched, $threads threads)"
                    run "$sched" "$threads" "$model" "$data" "$work/other"
                    ro=$?
                    if [[ $rs -ne 0 && $ro -ne 0 ]]; then
                        both_fail=$((both_fail + 1))
                        continue
                    fi
                    if [[ $rs -ne $ro ]]; then
                        echo "DIFFER $what: sequential exit $rs, $sched exit $ro" >&2
                        tail -n 2 "$work/seq.err" "$work/other.err" >&2
                        differ=$((differ + 1))
                        continue
                    fi
                    if same_outputs "$work/seq" "$work/other"; then
                        same=$((same + 1))
                        continue
                    fi
                    # An unseeded random op can repeat its draw by chance
                    # (Bernoulli on ten elements did): up to three more runs.
                    nondet=0
                    for _ in 1 2 3; do
                        run sequential "$threads" "$model" "$data" "$work/seq2"
                        if ! same_outputs "$work/seq" "$work/seq2"; then
                            nondet=1
                            break
                        fi
                    done
                    if ((nondet)); then
                        random=$((random + 1))
                    else
                        echo "DIFFER $what: outputs not identical" >&2
                        differ=$((differ + 1))
                    fi
                done
            done
        done
    done < <(find -L "$dir" -name model.onnx | sort)
done
echo "sched_identical: $cases comparisons (${schedulers[*]} against sequential; threads:" \
    "$threads_list): $same identical, $differ differ, $both_fail fail under both," \
    "$random nondeterministic under the sequential scheduler too"
[[ $cases -gt 0 && $differ -eq 0 && $same -gt 0 ]]
