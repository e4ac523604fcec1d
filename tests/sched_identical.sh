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
# Each case runs SCHED_RUNS times (default 2) in one parallel session
# (tests/sched_runs.c) and every run's outputs are compared: a plan's first
# run is a probe that starts one step at a time, the second goes through the
# ready queue (later ones go the way that was faster). A case whose plan is
# concurrent must have taken the ready queue (queue_runs > 0 in
# minfer_schedule_info): otherwise the test would compare sequential with
# sequential. The cases that ran two steps at once (overlapped_runs > 0:
# the queue starts a step beside another when the measured times say it
# gains) are counted; with SCHED_REQUIRE_OVERLAP=1 (the shared models,
# whose branches overlap) there must be one.
#
# usage: [SCHED_THREADS="2 8"] [SCHED_RUNS=N] [SCHED_REQUIRE_OVERLAP=1]
#        sched_identical.sh SCHED_RUNS_BIN PROVIDERS DIR...
set -uo pipefail

schedulers=(parallel)
runner=$1
providers=$2
shift 2
threads_list=${SCHED_THREADS:-2}
n_runs=${SCHED_RUNS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/minfer-sched.XXXXXX")
trap 'rm -rf "$work"' EXIT
same=0 differ=0 both_fail=0 cases=0 random=0 concurrent=0 overlapped=0

# Whether directories $1 and $2 hold the same files, byte for byte.
same_outputs() { diff -rq "$1" "$2" >/dev/null 2>&1; }
# run SCHEDULER THREADS MODEL DATA OUT RUNS: the exit status of RUNS runs in
# one session (outputs in OUT/1 .. OUT/RUNS, the schedule line in OUT.info).
run() {
    rm -rf "$5" "$5.info"
    "$runner" "$3" "$4" "$5" "$providers" "$2" "$1" "$6" >"$5.info" 2>"$5.err"
}
for dir in "$@"; do
    [[ -d $dir ]] || { echo "sched_identical: $dir not found" >&2; exit 1; }
    while IFS= read -r model; do
        case_dir=$(dirname "$model")
        for data in "$case_dir"/test_data_set_*; do
            [[ -d $data ]] || continue
            for threads in $threads_list; do
                run sequential "$threads" "$model" "$data" "$work/seq" 1
                rs=$?
                for sched in "${schedulers[@]}"; do
                    cases=$((cases + 1))
                    what="$data ($sched, $threads threads)"
                    run "$sched" "$threads" "$model" "$data" "$work/other" "$n_runs"
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
                    # "runs N concurrent C queue_runs Q overlapped_runs O"
                    read -r _ _ _ conc _ queue _ overlap <"$work/other.info"
                    if [[ $conc == 1 ]]; then
                        concurrent=$((concurrent + 1))
                        if [[ $queue == 0 ]]; then
                            echo "DIFFER $what: a concurrent plan never went through the" \
                                "ready queue in $n_runs runs" >&2
                            differ=$((differ + 1))
                            continue
                        fi
                        [[ $overlap == 0 ]] || overlapped=$((overlapped + 1))
                    fi
                    bad_run=
                    for ((k = 1; k <= n_runs; k++)); do
                        same_outputs "$work/seq/1" "$work/other/$k" || { bad_run=$k; break; }
                    done
                    if [[ -z $bad_run ]]; then
                        same=$((same + 1))
                        continue
                    fi
                    # An unseeded random op can repeat its draw by chance
                    # (Bernoulli on ten elements did): up to three more runs.
                    nondet=0
                    for _ in 1 2 3; do
                        run sequential "$threads" "$model" "$data" "$work/seq2" 1
                        if ! same_outputs "$work/seq/1" "$work/seq2/1"; then
                            nondet=1
                            break
                        fi
                    done
                    if ((nondet)); then
                        random=$((random + 1))
                    else
                        echo "DIFFER $what: run $bad_run of $n_runs: outputs not identical" >&2
                        differ=$((differ + 1))
                    fi
                done
            done
        done
    done < <(find -L "$dir" -name model.onnx | sort)
done
echo "sched_identical: $cases comparisons (${schedulers[*]} against sequential, $n_runs runs" \
    "each; threads: $threads_list): $same identical, $differ differ, $both_fail fail under" \
    "both, $random nondeterministic under the sequential scheduler too; $concurrent" \
    "concurrent plans, $overlapped of them ran two steps at once"
if [[ ${SCHED_REQUIRE_OVERLAP:-0} == 1 && $overlapped -eq 0 ]]; then
    echo "sched_identical: no case ran two steps at once: the overlapping way was never" \
        "compared" >&2
    exit 1
fi
[[ $cases -gt 0 && $differ -eq 0 && $same -gt 0 ]]
