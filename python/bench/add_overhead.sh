#!/usr/bin/env bash
# Per-call overhead of a Python run on a tiny model (one Add of two [1,10]
# float tensors), against ONNX Runtime's per-call time on the same case.
#
#   add_overhead.sh BUILD_DIR [RUNS] [PEER]
#
# PEER is ONNX Runtime's runner (default ../shared/peer/ort-bench beside the
# repository: onnxruntime-node, CPU provider; there is no Python onnxruntime
# on this machine). Both print their median and minimum per run in ms; the
# figures are in docs/PERFORMANCE.md and docs/python.md.
set -euo pipefail
build=$(cd "$1" && pwd)
runs=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
peer=${3:-$here/../../../shared/peer/ort-bench}
case_dir=$(mktemp -d "${TMPDIR:-/tmp}/minfer-add.XXXXXX")
trap 'rm -rf "$case_dir"' EXIT
mkdir -p "$case_dir/test_data_set_0"
/usr/bin/python3 - "$case_dir" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
g = helper.make_graph([helper.make_node("Add", ["A", "B"], ["C"])], "add",
                      [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 10]) for n in "AB"],
                      [helper.make_tensor_value_info("C", TensorProto.FLOAT, [1, 10])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.save(m, d + "/model.onnx")
a = np.arange(10, dtype=np.float32).reshape(1, 10)
for i, v in enumerate((a, a + 1)):
    open("%s/test_data_set_0/input_%d.pb" % (d, i), "wb").write(numpy_helper.from_array(v, "AB"[i]).SerializeToString())
PY
for providers in cpu onednn,cpu; do
    echo "== minfer, Python InferenceSession.run, providers $providers, $runs runs"
    PYTHONPATH=$build/python /usr/bin/python3 -m minfer bench "$case_dir/model.onnx" \
        --inputs "$case_dir/test_data_set_0" --runs "$runs" --warmup 1000 --providers "$providers" --threads 1
done
echo "== ONNX Runtime (onnxruntime-node, CPU), $runs runs, 1 thread"
"$peer" "$case_dir" "$runs" 1
