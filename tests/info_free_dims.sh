#!/usr/bin/env bash
# `minfer info` on a model whose symbolic dimensions cannot be 1 (a 1-D
# convolution with an 80-sample window over [batch,1,samples], as the
# corpus's audio_conv1d): it prints the whole report, says that the memory
# plan needs concrete sizes, names the dimensions to give (--dim NAME=N;
# --shape for an unnamed one) and exits 0; --json says the same; with the
# sizes given the plan is made; sizes that do not fit remain an error.
#
# usage: info_free_dims.sh MINFER_CLI
set -uo pipefail
cli=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-info-dims.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# Two models: x [batch,1,samples] and x [batch,1,?] (unnamed), each a Conv
# with an 80-wide kernel and stride 10 into a ReLU.
/usr/bin/python3 - "$tmp" <<'EOF' || { echo "FAIL: could not write the models (python3-onnx)"; exit 1; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

for name, last in (("named", "samples"), ("unnamed", None)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, last])
    if last is None:
        x.type.tensor_type.shape.dim[2].Clear()
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.full((4, 1, 80), 0.01, np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="wide_conv", strides=[10]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "free_dims", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, f"{sys.argv[1]}/{name}.onnx")
EOF

model=$tmp/named.onnx
out=$("$cli" info --providers cpu "$model" 2>"$tmp/err")
rc=$?
((rc == 0)) || bad "info with free dimensions exits $rc: $(cat "$tmp/err")"
[[ ! -s $tmp/err ]] || bad "info with free dimensions writes to stderr: $(cat "$tmp/err")"
for want in '^inputs (1):' '^nodes (2):' '^op types' '^scheduler:' \
    '^memory plan: not made (the symbolic dimensions set to 1 do not fit the model):$' \
    "node 'wide_conv'.*kernel extent 80 exceeds" \
    "the plan needs concrete sizes: minfer info $model --dim batch=N --dim samples=N\$"; do
    grep -q -- "$want" <<<"$out" || bad "info with free dimensions does not print '$want': $out"
done
grep -q '^  arena ' <<<"$out" && bad "info prints an arena without a plan: $out"

json=$("$cli" info --providers cpu --json "$model") || bad "info --json with free dimensions failed"
/usr/bin/python3 -c '
import json, sys
m = json.loads(sys.argv[1])["memory"]
assert m["planned"] is False, m
assert m["needs"] == "--dim batch=N --dim samples=N", m
assert "kernel extent 80" in m["error"], m
' "$json" || bad "info --json memory: $json"

# An unnamed free dimension: --shape with the known sizes.
out=$("$cli" info --providers cpu "$tmp/unnamed.onnx" 2>&1) || bad "info, unnamed dimension: $out"
grep -q -- "--dim batch=N --shape x=Nx1xN\$" <<<"$out" || bad "info, unnamed dimension: $out"

# The sizes given: a plan.
out=$("$cli" info --providers cpu --dim samples=16000 "$model" 2>&1) ||
    bad "info --dim samples=16000: $out"
grep -q '^memory plan (symbolic dimensions set to 1):$' <<<"$out" &&
    grep -q '^  arena  ' <<<"$out" || bad "info --dim samples=16000 makes no plan: $out"
json=$("$cli" info --providers cpu --json --dim samples=16000 --dim batch=2 "$model") ||
    bad "info --json with the sizes failed"
/usr/bin/python3 -c '
import json, sys
m = json.loads(sys.argv[1])["memory"]
assert m["planned"] is True and m["symbolic_dims_set_to_1"] is False, m
# Conv output [2,4,1593] and ReLU in place or not: at least one [2,4,1593] float buffer.
assert m["host_intermediate_bytes"] >= 2 * 4 * 1593 * 4, m
' "$json" || bad "info --json --dim samples=16000 --dim batch=2: $json"

# Sizes that do not fit: an error naming the node, not a report.
out=$("$cli" info --providers cpu --dim samples=10 --dim batch=1 "$model" 2>&1) &&
    bad "info --dim samples=10 succeeded: $out"
grep -q "wide_conv" <<<"$out" || bad "info --dim samples=10 does not name the node: $out"

((fails == 0)) && echo "info with free dimensions: ok"
exit $((fails > 0))
