#!/usr/bin/python3
"""Nodes with more inputs and outputs than the run path's stack arrays (64):
a Split into 80 outputs and an If returning 70 values, each checked against
numpy on every provider list given (issue 35: no fixed small limit on a
node's inputs and outputs; they were refused with 'has more than 64 inputs
or outputs').

usage: many_outputs.py MINFER_CLI PROVIDER_LIST...
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

N_SPLIT, N_IF = 80, 70


def case(tmp, name, graph, feeds, outs):
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(feeds):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    for k, (n, a) in enumerate(outs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    return d


def main(argv):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N_SPLIT, 3)).astype(np.float32)
    names = ["y%d" % i for i in range(N_SPLIT)]
    split = helper.make_graph(
        [helper.make_node("Split", ["x"], names, axis=0)], "split80",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N_SPLIT, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3]) for n in names])
    outs = [(n, x[i:i + 1]) for i, n in enumerate(names)]

    def branch(tag, scale):
        nodes, vals = [], []
        for i in range(N_IF):
            k = numpy_helper.from_array(np.array(scale * (i + 1), np.float32), "%s_k%d" % (tag, i))
            nodes.append(helper.make_node("Constant", [], ["%s_c%d" % (tag, i)], value=k))
            nodes.append(helper.make_node("Mul", ["v", "%s_c%d" % (tag, i)], ["%s_o%d" % (tag, i)]))
            vals.append(helper.make_tensor_value_info("%s_o%d" % (tag, i), TensorProto.FLOAT, [4]))
        return helper.make_graph(nodes, tag, [], vals)

    v = rng.standard_normal(4).astype(np.float32)
    if_names = ["r%d" % i for i in range(N_IF)]
    ifg = helper.make_graph(
        [helper.make_node("If", ["c"], if_names, then_branch=branch("then", 1.0),
                          else_branch=branch("else", -1.0))], "if70",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in if_names])
    if_outs = [(n, (v * np.float32(-(i + 1)))) for i, n in enumerate(if_names)]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cases = [case(tmp, "split80", split, [("x", x)], outs),
                 case(tmp, "if70", ifg, [("c", np.array(False)), ("v", v)], if_outs)]
        for plist in argv[2:]:
            for d in cases:
                r = subprocess.run([argv[1], "test", "--providers", plist, d],
                                   capture_output=True, text=True)
                ok = r.returncode == 0
                failed += not ok
                print("%s %s on %s%s" % ("ok  " if ok else "FAIL", os.path.basename(d), plist,
                                         "" if ok else ":\n" + r.stdout + r.stderr))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv)
