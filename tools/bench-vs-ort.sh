#!/usr/bin/env bash
# minfer against ONNX Runtime (the peer, ../shared/peer/ort-bench) on the
# same models and inputs, alternately in one run. For each case and thread
# count, R rounds; each round runs `minfer bench` with the given providers,
# then ORT with spinning threads, then ORT without (--nospin), each the
# median of RUNS runs on the case's test_data_set_0. A figure is the median
# of its R round medians; the faster ORT figure counts. Alternating within
# a round lets load from other processes hit both runtimes alike.
#
# Prints a Markdown table: medians, the ratio minfer / ORT (<= 1.00: minfer
# at least as fast), minfer's peak RSS (the highest of its rounds, from
# `minfer bench --json`), the RSS bound of issue 18 (the model file's size
# + the planned arenas, host and device, + 40 MiB; the weights counted as
# tests/peak_rss.sh counts them), ORT's peak RSS when the peer reports one
# ("-" otherwise), and the session creation times; then every round's
# figures in a second table.
#
# usage: tools/bench-vs-ort.sh [options] DIR...
#   DIR: a test case (model.onnx and test_data_set_0/) or a folder of cases
#   --minfer PATH     the CLI (default build/tools/minfer)
#   --providers LIST  minfer's provider list (default onednn,cpu)
#   --runs N          runs per figure, median (default 20)
#   --rounds R        alternating rounds (default $ROUNDS, else 3)
#   --threads LIST    thread counts, e.g. "1 2 4" or 1,2,4 (default $THREADS, else "1 2")
#   --ort PATH        the peer (default $ORT_BENCH, else ../shared/peer/ort-bench)
#   --load N          N busy processes of its own (spinning loops, 0..64) run
#                     beside both runtimes for the whole measurement, started
#                     before the first round and stopped on exit (issue 37:
#                     speed on a busy machine); the table's header says N
#   --before PATH     a second minfer CLI (the build before a change, or a
#                     wrapper setting an environment variable), run in every
#                     round right before --minfer with the same arguments: the
#                     table adds its median and the median of the rounds'
#                     minfer / before ratios, the fair comparison of two
#                     builds on a loaded machine
# The older form still works: tools/bench-vs-ort.sh [MINFER_CLI] [MODELS_DIR]
# [PROVIDERS] [RUNS] (defaults: build/tools/minfer, ../shared/models,
# onednn,cpu, 20), thread counts from THREADS.
# Environment: BUSY_CPU=N keeps CPU N busy with a spinning shell loop while
# measuring, to see both runtimes with another process on one of the CPUs.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
minfer=$here/build/tools/minfer
providers=onednn,cpu
runs=20
rounds=${ROUNDS:-3}
threads_list=${THREADS:-1 2}
ort=${ORT_BENCH:-$here/../shared/peer/ort-bench}
load=0
before=
dirs=()

# The usage lines of the header above; exits with $1.
usage() {
    sed -n '/^# usage:/,/^set /{/^#/s/^# \{0,1\}//p}' "$0"
    exit "$1"
}
die() { echo "bench-vs-ort: $*" >&2; exit 2; }

if [[ $# -eq 0 || ($1 != -* && -f $1 && -x $1) ]]; then
    # The older positional form.
    minfer=${1:-$minfer}
    dirs=("${2:-$here/../shared/models}")
    providers=${3:-$providers}
    runs=${4:-$runs}
    (($# <= 4)) || usage 2 >&2
else
    while (($#)); do
        case $1 in
        --minfer | --providers | --runs | --rounds | --threads | --ort | --load | --before)
            (($# >= 2)) || die "$1 takes a value"
            case $1 in
            --minfer) minfer=$2 ;;
            --providers) providers=$2 ;;
            --runs) runs=$2 ;;
            --rounds) rounds=$2 ;;
            --threads) threads_list=$2 ;;
            --ort) ort=$2 ;;
            --load) load=$2 ;;
            --before) before=$2 ;;
            esac
            shift 2
            ;;
        -h | --help) usage 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *)
            dirs+=("$1")
            shift
            ;;
        esac
    done
fi
threads_list=${threads_list//,/ }
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs takes a positive count, not '$runs'"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive count, not '$rounds'"
[[ $load =~ ^[0-9]+$ ]] && ((load <= 64)) || die "--load takes a count of busy processes, 0 to 64, not '$load'"
for t in $threads_list; do
    [[ $t =~ ^[1-9][0-9]*$ ]] || die "thread counts are positive integers, not '$t'"
done
[[ -n ${threads_list// /} ]] || die "no thread counts"
((${#dirs[@]})) || die "no case directories (see --help)"
((runs >= 20)) || echo "bench-vs-ort: $runs runs (fewer than 20: figures are rough)" >&2
((rounds >= 3)) || echo "bench-vs-ort: $rounds rounds (fewer than 3: figures are rough)" >&2
[[ -x $minfer ]] || die "$minfer is not executable"
[[ -z $before || (-f $before && -x $before) ]] || die "$before is not an executable file"
[[ -x $ort ]] || die "$ort is not executable"

# The cases: each DIR that is one, else the cases directly inside it.
is_case() { [[ -f $1/model.onnx && -d $1/test_data_set_0 ]]; }
cases=()
for d in "${dirs[@]}"; do
    d=${d%/}
    if is_case "$d"; then
        cases+=("$d")
    elif [[ -d $d ]]; then
        n=${#cases[@]}
        for c in "$d"/*/; do
            c=${c%/}
            ! is_case "$c" || cases+=("$c")
        done
        ((${#cases[@]} > n)) || die "$d holds no test case (model.onnx and test_data_set_0/)"
    else
        die "$d is not a directory"
    fi
done

# The value of "key": NUMBER in a one-line JSON object ("" when absent).
json_num() { sed -n "s/.*\"$1\": *\\([0-9.eE+-]*\\).*/\\1/p; T; q" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
# The median of the numbers given (the mean of the middle two for an even
# count); "" for none.
median() {
    printf '%s\n' "$@" | awk 'NF' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# The largest and the smallest of the numbers given; "" for none.
max_of() { printf '%s\n' "$@" | awk 'NF && (n++ == 0 || $1 > m) { m = $1 } END { if (n) print m }'; }
min_of() { printf '%s\n' "$@" | awk 'NF && (n++ == 0 || $1 < m) { m = $1 } END { if (n) print m }'; }
# A figure for the table: "-" when missing.
fmt() { [[ -n $2 ]] && awk -v v="$2" "BEGIN { printf \"$1\", v }" || printf -- -; }
mib() { [[ -n $1 ]] && awk -v v="$1" 'BEGIN { printf "%.1f", v / 1048576 }' || printf -- -; }

tmpd=$(mktemp -d)
busy_pid=
load_pids=()
cleanup() {
    [[ -z $busy_pid ]] || kill "$busy_pid" 2>/dev/null
    ((${#load_pids[@]} == 0)) || kill "${load_pids[@]}" 2>/dev/null
    rm -rf "$tmpd"
}
trap cleanup EXIT
if [[ -n ${BUSY_CPU:-} ]]; then
    taskset -c "$BUSY_CPU" sh -c 'while :; do :; done' &
    busy_pid=$!
    echo "a busy loop holds CPU $BUSY_CPU while measuring"
fi
if ((load > 0)); then
    # Busy processes the scheduler may put on any CPU, as other work on a
    # shared machine is; each ends with this script (the trap) or after a
    # day at most, should the script be killed with SIGKILL.
    for ((i = 0; i < load; i++)); do
        timeout 86400 sh -c 'while :; do :; done' &
        load_pids+=($!)
    done
    echo "--load $load: $load busy processes run beside both runtimes"
    sleep 1
fi
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "minfer providers: $providers; $rounds alternating rounds of $runs runs per figure" \
    "(median of the rounds' medians), ORT = faster of spin / no-spin; threads: $threads_list"
echo
[[ -z $before ]] || echo "before: $before, run right before minfer in every round"
bcols= bsep=
[[ -z $before ]] || bcols=" before ms | minfer / before |" bsep="---|---|"
echo "| model | threads | minfer ms | ORT spin ms | ORT no-spin ms | ratio | minfer RSS MiB | RSS bound MiB | ORT RSS MiB | minfer create ms | ORT create ms |$bcols"
echo "|---|---|---|---|---|---|---|---|---|---|---|$bsep"
per_round=()
n_rows=0 n_faster=0 n_bound=0 n_within=0 n_fail=0 ort_rss_seen=0
for dir in "${cases[@]}"; do
    name=$(basename "$dir")
    weights=$(stat -c %s "$dir/model.onnx")
    for t in $threads_list; do
        mms=() sms=() nms=() rss=() ors=() mcs=() ocs=() bms=() brs=()
        bound=
        for ((r = 1; r <= rounds; r++)); do
            bm= bcol=
            if [[ -n $before ]]; then
                b=$("$before" bench "$dir/model.onnx" --providers "$providers" --threads "$t" \
                    --runs "$runs" --warmup 3 --inputs "$dir/test_data_set_0" --json 2>"$tmpd/err") ||
                    { echo "bench-vs-ort: $name, $t threads: before's bench failed: $(tail -n 1 "$tmpd/err")" >&2; b=; }
                bm=$(json_num median_ms "$b")
            fi
            m=$("$minfer" bench "$dir/model.onnx" --providers "$providers" --threads "$t" \
                --runs "$runs" --warmup 3 --inputs "$dir/test_data_set_0" --json 2>"$tmpd/err") ||
                { echo "bench-vs-ort: $name, $t threads: minfer bench failed: $(tail -n 1 "$tmpd/err")" >&2; m=; }
            spin=$("$ort" "$dir" "$runs" "$t" 2>/dev/null | tail -n 1) || spin=
            nospin=$("$ort" "$dir" "$runs" "$t" --nospin 2>/dev/null | tail -n 1) || nospin=
            mm=$(json_num median_ms "$m") os=$(json_num median_ms "$spin") on=$(json_num median_ms "$nospin")
            mr=$(json_num peak_rss_bytes "$m")
            # The peer prints no RSS today (ort_run.js); a later one may.
            orr=$(json_num peak_rss_bytes "$spin")
            [[ -n $orr ]] || orr=$(json_num rss_bytes "$spin")
            mms+=("$mm") sms+=("$os") nms+=("$on") rss+=("$mr") ors+=("$orr")
            mcs+=("$(json_num create_ms "$m")") ocs+=("$(json_num load_ms "$spin")")
            if [[ -n $m && -z $bound ]]; then
                arena=$(json_num arena_bytes "$m") dev=$(json_num device_arena_bytes "$m")
                bound=$((weights + ${arena:-0} + ${dev:-0} + 40 * 1048576))
            fi
            if [[ -n $before ]]; then
                bms+=("$bm")
                br=$(ratio "${mm:-0}" "${bm:-0}")
                [[ $br == - ]] || brs+=("$br")
                bcol=" $(fmt %.2f "$bm") |"
            fi
            per_round+=("| $name | $t | $r | $(fmt %.2f "$mm") | $(fmt %.2f "$os") | $(fmt %.2f "$on") | $(mib "$mr") |$bcol")
            echo "bench-vs-ort: $name, $t threads, round $r/$rounds: minfer $(fmt %.2f "$mm") ms," \
                "ORT spin $(fmt %.2f "$os") ms, no-spin $(fmt %.2f "$on") ms" >&2
        done
        mm=$(median "${mms[@]}") os=$(median "${sms[@]}") on=$(median "${nms[@]}")
        best=$(min_of "$os" "$on")
        peak=$(max_of "${rss[@]}") ort_peak=$(max_of "${ors[@]}")
        [[ -z $ort_peak ]] || ort_rss_seen=1
        n_rows=$((n_rows + 1))
        [[ -n $mm ]] || n_fail=$((n_fail + 1))
        rt=$(ratio "${mm:-0}" "${best:-0}")
        [[ $rt != - ]] && awk -v r="$rt" 'BEGIN { exit !(r <= 1.0) }' && n_faster=$((n_faster + 1))
        if [[ -n $peak && -n $bound ]]; then
            n_bound=$((n_bound + 1))
            ((peak > bound)) || n_within=$((n_within + 1))
        fi
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" "$name" "$t" \
            "$(fmt %.2f "$mm")" "$(fmt %.2f "$os")" "$(fmt %.2f "$on")" "$rt" "$(mib "$peak")" \
            "$(mib "$bound")" "$(mib "$ort_peak")" "$(fmt %.0f "$(median "${mcs[@]}")")" \
            "$(fmt %.0f "$(median "${ocs[@]}")")"
        [[ -z $before ]] ||
            printf " %s | %s |" "$(fmt %.2f "$(median "${bms[@]}")")" "$(fmt %.2f "$(median "${brs[@]}")")"
        printf '\n'
    done
done
echo
echo "$n_rows rows: minfer at least as fast as ORT (ratio <= 1.00) in $n_faster;" \
    "peak RSS within the bound in $n_within of $n_bound; minfer failed in $n_fail."
((ort_rss_seen)) || echo "ORT RSS: the peer (ort-bench) reports none."
echo
echo "Each round's medians (ms) and minfer's peak RSS (MiB):"
echo
bcols= bsep=
[[ -z $before ]] || bcols=" before ms |" bsep="---|"
echo "| model | threads | round | minfer ms | ORT spin ms | ORT no-spin ms | minfer RSS MiB |$bcols"
echo "|---|---|---|---|---|---|---|$bsep"
printf '%s\n' "${per_round[@]}"
