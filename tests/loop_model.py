#!/usr/bin/python3
"""Writes a Loop model whose body adds 1 to a carried float tensor:
DIR/model.onnx (inputs M: int64 trip count, x: float [N]; output y = x + M)
and DIR/test_data_set_0 (M, x = 0..N-1, y). For the per-iteration cost of
Loop on a provider (docs/opencl.md "Loop"):

    tests/loop_model.py /tmp/loop 1000 16
    minfer bench /tmp/loop/model.onnx --providers opencl --inputs /tmp/loop/test_data_set_0

usage: loop_model.py DIR [ITERATIONS [N]]   (defaults 1000, 16)"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    one = nh.from_array(np.ones(n, np.float32), "one")
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []),
         h.make_tensor_value_info("cond_in", T.BOOL, []),
         h.make_tensor_value_info("x_in", T.FLOAT, [n])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []),
         h.make_tensor_value_info("x_out", T.FLOAT, [n])],
        [one])
    g = h.make_graph(
        [h.make_node("Loop", ["M", "", "x"], ["y"], body=body)], "loop",
        [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [n])],
        [h.make_tensor_value_info("y", T.FLOAT, [n])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(m, os.path.join(out, "model.onnx"))
    x = np.arange(n, dtype=np.float32)
    for name, t in (("input_0", nh.from_array(np.array(iters, np.int64), "M")),
                    ("input_1", nh.from_array(x, "x")),
                    ("output_0", nh.from_array(x + np.float32(iters), "y"))):
        with open(os.path.join(data, name + ".pb"), "wb") as f:
            f.write(t.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
