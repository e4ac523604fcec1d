#!/bin/bash
# The schedulers against each other in one process (minfer bench --versus),
# the figures of docs/scheduling.md "Stop 31". Each line: the ratio S /
# sequential (latency, or throughput for the pipeline), the median over the
# rounds with their range, and each side's median latency in ms.
#
# usage: tools/sched/versus.sh [SETS]
#   MINFER  the CLI (default build/tools/minfer)
#   ZOO     the corpus cache with googlenet_op13 and inception_v3_op13
#           (default ~/.cache/minfer-zoo/77048a7998898825, see tests/zoo)
#   MODELS  the shared models (default ../shared/models)
set -euo pipefail
B=${MINFER:-build/tools/minfer}
Z=${ZOO:-$HOME/.cache/minfer-zoo/77048a7998898825}
S=${MODELS:-../shared/models}
sets=${1:-2}
v() { # LABEL MINFER-ARGS...
    local label=$1 out
    shift
    out=$("$B" "$@" --json 2>/dev/null)
    python3 -c '
import json, sys
d = json.loads(sys.stdin.read())["versus"]
key = "median_ms" if d["scheduler"] != "pipeline" else "runs_per_s"
r = [x[key][1] / x[key][0] for x in d["rounds"]]
ratio = d["latency_ratio"] if key == "median_ms" else d["throughput_ratio"]
print("%-28s %s/%s %s %.3f (%.3f-%.3f)  ms %s" % (sys.argv[1], d["scheduler"],
      d["base_scheduler"], "latency" if key == "median_ms" else "throughput", ratio,
      min(r), max(r), [round(x, 3) for x in d["median_ms"]]))' "$label" <<<"$out"
}
g=$Z/googlenet_op13
i=$Z/inception_v3_op13
uptime
for _ in $(seq "$sets"); do
    v "googlenet onednn" bench "$g/model.onnx" --inputs "$g/test_data_set_0" --providers onednn,cpu --threads 2 --runs 30 --rounds 20 --warmup 5 --versus parallel
    v "googlenet onednn A/A" bench "$g/model.onnx" --inputs "$g/test_data_set_0" --providers onednn,cpu --threads 2 --runs 30 --rounds 20 --warmup 5 --versus sequential
    v "inception onednn" bench "$i/model.onnx" --inputs "$i/test_data_set_0" --providers onednn,cpu --threads 2 --runs 4 --rounds 14 --warmup 3 --versus parallel
    v "inception onednn A/A" bench "$i/model.onnx" --inputs "$i/test_data_set_0" --providers onednn,cpu --threads 2 --runs 4 --rounds 14 --warmup 3 --versus sequential
    v "resnet18 onednn" bench "$S/resnet18/model.onnx" --providers onednn,cpu --threads 2 --runs 10 --rounds 14 --warmup 3 --versus parallel
    v "googlenet cpu" bench "$g/model.onnx" --inputs "$g/test_data_set_0" --providers cpu --threads 2 --runs 6 --rounds 14 --warmup 2 --versus parallel
    v "inception cpu" bench "$i/model.onnx" --inputs "$i/test_data_set_0" --providers cpu --threads 2 --runs 1 --rounds 12 --warmup 1 --versus parallel
    v "squeezenet c4 onednn" bench "$S/squeezenet1_1/model.onnx" --providers onednn,cpu --threads 2 --runs 25 --concurrency 4 --rounds 8 --warmup 5 --versus pipeline
    v "squeezenet c4 cpu" bench "$S/squeezenet1_1/model.onnx" --providers cpu --threads 2 --runs 4 --concurrency 4 --rounds 6 --warmup 2 --versus pipeline
done
uptime
