#!/usr/bin/env bash
# Peak resident memory of running each model with the CPU provider stays
# within the model file's size (the weights) + the planned arena + 40 MiB.
# minfer bench reports both figures for its own process.
#
# usage: peak_rss.sh MINFER_CLI MODELS_DIR
set -u
cli=$1
dir=$2
fail=0
count=0
for model in "$dir"/*/model.onnx; do
    [[ -f $model ]] || continue
    count=$((count + 1))
    name=$(basename "$(dirname "$model")")
    json=$("$cli" bench "$model" --providers cpu --runs 2 --warmup 1 --json 2>/dev/null) ||
        { echo "FAIL $name: minfer bench failed"; fail=1; continue; }
    arena=$(sed -n 's/.*"arena_bytes": *\([0-9]*\).*/\1/p' <<<"$json")
    rss=$(sed -n 's/.*"peak_rss_bytes": *\([0-9]*\).*/\1/p' <<<"$json")
    weights=$(stat -c %s "$model")
    limit=$((weights + arena + 40 * 1024 * 1024))
    echo "$name: peak RSS $((rss / 1024)) KiB, weights $((weights / 1024)) KiB + arena $((arena / 1024)) KiB + 40 MiB = $((limit / 1024)) KiB"
    if [[ -z $rss || -z $arena ]]; then
        echo "FAIL $name: figures missing from minfer bench --json"
        fail=1
    elif ((rss > limit)); then
        echo "FAIL $name: peak RSS above the limit"
        fail=1
    fi
done
((count > 0)) || { echo "FAIL: no models under $dir"; exit 1; }
exit $fail
