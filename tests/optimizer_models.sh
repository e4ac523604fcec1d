#!/bin/bash
# The shared models at optimization levels 0..3: run by sessions at each
# level (minfer test --opt-level N), and written by `minfer optimize --level N`
# then loaded and tested (the saved file must give the same outputs). Also
# checks the fusion counts the optimizer issue asks for at level 3.
# Usage: optimizer_models.sh MINFER MODELS_DIR
set -u
minfer=$1
models=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # description, command...
    local what=$1
    shift
    if ! out=$("$@" 2>&1); then
        echo "FAIL: $what"
        echo "$out" | tail -5
        fail=1
    fi
}
for level in 0 1 2 3; do
    check "models at --opt-level $level" "$minfer" test --opt-level "$level" --rtol 1e-3 \
        --atol 1e-4 --providers cpu "$models"
    for dir in "$models"/*/; do
        name=$(basename "$dir")
        [ -f "$dir/model.onnx" ] || continue
        case_dir="$tmp/$name-$level"
        mkdir -p "$case_dir"
        for d in "$dir"/test_data_set_*; do ln -s "$(cd "$d" && pwd)" "$case_dir/"; done
        check "optimize $name --level $level" "$minfer" optimize "$dir/model.onnx" \
            -o "$case_dir/model.onnx" --level "$level"
        check "saved $name at level $level" "$minfer" test --opt-level 0 --rtol 1e-3 \
            --atol 1e-4 --providers cpu "$case_dir"
    done
done
# Fusion counts at level 3 (op counts "after" from minfer optimize).
count() { # model op
    "$minfer" optimize "$models/$1/model.onnx" -o "$tmp/count.onnx" --force --level 3 |
        awk -v op="$2" '$1 == op { print $3 }'
}
expect() { # model op expected
    local got
    got=$(count "$1" "$2")
    if [ "${got:-0}" != "$3" ]; then
        echo "FAIL: $1: $3 x $2 expected after level 3, got ${got:-0}"
        fail=1
    fi
}
if [ -f "$models/tiny_encoder/model.onnx" ]; then
    expect tiny_encoder minfer:LayerNormalization 9
    expect tiny_encoder minfer:Gelu 0 # fused into the MatMuls before them (fuse_matmul_gelu)
    expect tiny_encoder minfer:FusedMatMul 12
    expect tiny_encoder Identity 0
    expect tiny_encoder Erf 0
fi
if [ -f "$models/mobilenet_v2/model.onnx" ]; then
    expect mobilenet_v2 Clip 0
fi
if [ -f "$models/resnet18/model.onnx" ]; then
    expect resnet18 Relu 0
    expect resnet18 Add 0
fi
[ $fail = 0 ] && echo "optimizer models: all levels passed"
exit $fail
