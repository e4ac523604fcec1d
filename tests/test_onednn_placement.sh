#!/usr/bin/env bash
# `minfer info --providers onednn,cpu` on the CNN models: every convolution,
# Gemm and pooling node (and their fused forms) must be placed on onednn,
# and at least one node of each model must be.
#
# usage: test_onednn_placement.sh MINFER_CLI MODELS_DIR
set -euo pipefail

minfer=$1
models=$2
status=0
for m in resnet18 mobilenet_v2 squeezenet1_1; do
    model=$models/$m/model.onnx
    [[ -f $model ]] || { echo "test_onednn_placement: $model not found" >&2; exit 1; }
    info=$("$minfer" info --providers onednn,cpu "$model")
    # Node lines: "  #K  NAME  OP  PROVIDER".
    nodes=$(awk '$1 ~ /^#[0-9]+$/ { print $(NF-1), $NF }' <<<"$info")
    heavy=$(grep -E '^(Conv|FusedConv|Gemm|FusedGemm|MaxPool|AveragePool|GlobalAveragePool|GlobalMaxPool) ' <<<"$nodes" || true)
    if [[ -z $heavy ]]; then
        echo "test_onednn_placement: $m: no Conv, Gemm or pooling node listed" >&2
        status=1
        continue
    fi
    wrong=$(awk '$2 != "onednn"' <<<"$heavy")
    if [[ -n $wrong ]]; then
        echo "test_onednn_placement: $m: not on onednn:" >&2
        echo "$wrong" | sort | uniq -c >&2
        status=1
    else
        echo "$m: $(wc -l <<<"$heavy") Conv/Gemm/pool nodes on onednn"
    fi
done
exit $status
