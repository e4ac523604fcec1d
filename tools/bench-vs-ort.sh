#!/usr/bin/env bash
# minfer against ONNX Runtime (the peer, ../shared/peer/ort-bench) on the
# same models, alternately in one run: per model and thread count, `minfer
# bench` with the given providers, ORT with spinning threads and ORT without
# (--nospin), each the median of RUNS runs; the faster ORT figure counts.
# Prints a Markdown table of medians and ratios (minfer / ORT; <= 1.00 means
# minfer is at least as fast), and the session creation times.
#
# usage: tools/bench-vs-ort.sh [MINFER_CLI] [MODELS_DIR] [PROVIDERS] [RUNS]
#   defaults: build/tools/minfer, ../shared/models, onednn,cpu, 20
# Environment: THREADS (default "1 2"), ORT_BENCH (default ../shared/peer/ort-bench),
# BUSY_CPU=N (keep CPU N busy with a spinning shell loop while measuring, to
# see both runtimes with another process on one of the CPUs).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
minfer=${1:-$here/build/tools/minfer}
models=${2:-$here/../shared/models}
providers=${3:-onednn,cpu}
runs=${4:-20}
threads_list=${THREADS:-1 2}
ort=${ORT_BENCH:-$here/../shared/peer/ort-bench}
((runs >= 20)) || echo "bench-vs-ort: $runs runs (fewer than 20: figures are rough)" >&2
[[ -x $minfer ]] || { echo "bench-vs-ort: $minfer is not executable" >&2; exit 2; }
[[ -x $ort ]] || { echo "bench-vs-ort: $ort is not executable" >&2; exit 2; }

# The value of "key": NUMBER in a one-line JSON object.
json_num() { sed -n "s/.*\"$1\": *\\([0-9.eE+-]*\\).*/\\1/p" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
min2() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

if [[ -n ${BUSY_CPU:-} ]]; then
    taskset -c "$BUSY_CPU" sh -c 'while :; do :; done' &
    busy_pid=$!
    trap 'kill $busy_pid 2>/dev/null' EXIT
    echo "a busy loop holds CPU $BUSY_CPU while measuring"
fi
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "minfer providers: $providers; $runs runs per figure (median), ORT = faster of spin / no-spin"
echo
echo "| model | threads | minfer ms | ORT spin ms | ORT no-spin ms | ratio | minfer create ms | ORT create ms |"
echo "|---|---|---|---|---|---|---|---|"
for dir in "$models"/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    [[ -f $dir/model.onnx && -d $dir/test_data_set_0 ]] || continue
    for t in $threads_list; do
        m=$("$minfer" bench "$dir/model.onnx" --providers "$providers" --threads "$t" \
            --runs "$runs" --warmup 3 --inputs "$dir/test_data_set_0" --json)
        spin=$("$ort" "$dir" "$runs" "$t" 2>/dev/null | tail -n 1)
        nospin=$("$ort" "$dir" "$runs" "$t" --nospin 2>/dev/null | tail -n 1)
        mm=$(json_num median_ms "$m")
        mc=$(json_num create_ms "$m")
        os=$(sed -n 's/.*"median_ms":\([0-9.]*\).*/\1/p' <<<"$spin")
        on=$(sed -n 's/.*"median_ms":\([0-9.]*\).*/\1/p' <<<"$nospin")
        oc=$(sed -n 's/.*"load_ms":\([0-9.]*\).*/\1/p' <<<"$spin")
        best=$(min2 "${os:-1e9}" "${on:-1e9}")
        printf "| %s | %s | %.2f | %.2f | %.2f | %s | %.0f | %.0f |\n" "$name" "$t" "$mm" \
            "${os:-0}" "${on:-0}" "$(ratio "$mm" "$best")" "$mc" "${oc:-0}"
    done
done
