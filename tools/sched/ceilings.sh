#!/bin/bash
# What a schedule could reach at most on this machine (docs/scheduling.md
# "Stop 31"): one- and two-thread sequential times of GoogLeNet and
# Inception V3 (half the one-thread time is the two-thread ceiling), and
# squeezenet1_1's throughput as two one-thread requests at once (the
# ceiling of any schedule on 2 CPUs) beside four sequential callers and the
# pipeline at 2 threads. Processes alternate within each round.
#
# usage: tools/sched/ceilings.sh [ROUNDS]   (MINFER, ZOO, MODELS as in versus.sh)
set -euo pipefail
B=${MINFER:-build/tools/minfer}
Z=${ZOO:-$HOME/.cache/minfer-zoo/77048a7998898825}
S=${MODELS:-../shared/models}
j() { python3 -c 'import json, sys; print(round(json.loads(sys.stdin.read())[sys.argv[1]], 3))' "$1"; }
g=$Z/googlenet_op13
i=$Z/inception_v3_op13
q=$S/squeezenet1_1/model.onnx
uptime
for r in $(seq "${1:-5}"); do
    g1=$("$B" bench "$g/model.onnx" --inputs "$g/test_data_set_0" --threads 1 --runs 200 --warmup 5 --json 2>/dev/null | j median_ms)
    g2=$("$B" bench "$g/model.onnx" --inputs "$g/test_data_set_0" --threads 2 --runs 200 --warmup 5 --json 2>/dev/null | j median_ms)
    i1=$("$B" bench "$i/model.onnx" --inputs "$i/test_data_set_0" --threads 1 --runs 8 --warmup 2 --json 2>/dev/null | j median_ms)
    i2=$("$B" bench "$i/model.onnx" --inputs "$i/test_data_set_0" --threads 2 --runs 15 --warmup 2 --json 2>/dev/null | j median_ms)
    s12=$("$B" bench "$q" --threads 1 --concurrency 2 --runs 100 --warmup 5 --json 2>/dev/null | j runs_per_s)
    s24=$("$B" bench "$q" --threads 2 --concurrency 4 --runs 50 --warmup 5 --json 2>/dev/null | j runs_per_s)
    p24=$("$B" --scheduler pipeline bench "$q" --threads 2 --concurrency 4 --runs 50 --warmup 5 --json 2>/dev/null | j runs_per_s)
    echo "round $r  googlenet ms: 1t $g1 2t $g2 | inception ms: 1t $i1 2t $i2 | squeezenet runs/s: 1t x 2 callers $s12, sequential 2t x 4 callers $s24, pipeline 2t x 4 in flight $p24"
done
uptime
