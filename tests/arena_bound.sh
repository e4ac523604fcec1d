#!/usr/bin/env bash
# The planner's arena is within 2% of the lower bound (the largest total of
# buffers alive at one step) on every model in the directory, at
# optimization levels 0 and 3, and `minfer info` prints the three figures.
#
# usage: arena_bound.sh MINFER_CLI MODELS_DIR
set -u
cli=$1
dir=$2
fail=0
count=0
for level in 0 3; do
    for model in "$dir"/*/model.onnx; do
        [[ -f $model ]] || continue
        count=$((count + 1))
        name=$(basename "$(dirname "$model")")
        out=$(MINFER_OPT_LEVEL=$level "$cli" info "$model" --providers cpu) ||
            { echo "FAIL $name level $level: minfer info failed"; fail=1; continue; }
        arena=$(awk '/^  arena /{print $2}' <<<"$out")
        sum=$(awk '/^  all intermediates /{print $3}' <<<"$out")
        bound=$(awk '/^  lower bound /{print $3}' <<<"$out")
        if [[ -z $arena || -z $sum || -z $bound || $bound -eq 0 ]]; then
            echo "FAIL $name level $level: memory figures missing from minfer info"
            fail=1
            continue
        fi
        ratio=$(awk -v a="$arena" -v b="$bound" 'BEGIN{printf "%.4f", a / b}')
        echo "$name level $level: arena $arena, all intermediates $sum, lower bound $bound, ratio $ratio"
        if awk -v a="$arena" -v b="$bound" 'BEGIN{exit !(a > 1.02 * b)}'; then
            echo "FAIL $name level $level: arena $arena is more than 1.02 x the lower bound $bound"
            fail=1
        fi
    done
done
if [[ $count -eq 0 ]]; then
    echo "FAIL: no models under $dir"
    exit 1
fi
exit $fail
