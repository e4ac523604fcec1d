#!/usr/bin/python3
"""Graph outputs whose ValueInfo has an empty type (`type {}`, as ONNX's
inliner and some exporters write for the outputs of inlined If branches)
take their type and shape from inference (core/load, issue 35): a Relu
output, an If's output and the output of a node inside an If branch
lifted to the graph by inlining, each declared with an empty type, must
load and run with the inferred float type and shape.

usage: untyped_outputs.py MINFER_CLI
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def empty_typed(name):
    v = helper.make_empty_tensor_value_info(name)
    v.type.SetInParent()  # a TypeProto present with no value set
    return v


def main(argv):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    c = numpy_helper.from_array(np.array(True), "c")
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [], [empty_typed("t")])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [], [empty_typed("e")])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("If", ["c"], ["i"], then_branch=then_g, else_branch=else_g),
             helper.make_node("Squeeze", ["i"], ["If_0_else_branch__Inline_0__/Squeeze_2_output_0"])]
    g = helper.make_graph(nodes, "untyped", [x],
                          [empty_typed("r"), empty_typed("i"),
                           empty_typed("If_0_else_branch__Inline_0__/Squeeze_2_output_0")], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        save(m, path)
        r = subprocess.run([argv[1], "run", "--providers", "cpu", path], capture_output=True,
                           text=True)
        out = r.stdout + r.stderr
        want = ["output 0 'r': float [2,3]", "output 1 'i': float [2,3]",
                "output 2 'If_0_else_branch__Inline_0__/Squeeze_2_output_0': float [2,3]"]
        if r.returncode != 0 or any(w not in out for w in want):
            sys.exit("untyped_outputs: want %s, got:\n%s" % (want, out))
    print("untyped outputs typed by inference: ok")


if __name__ == "__main__":
    main(sys.argv)
