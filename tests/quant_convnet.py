#!/usr/bin/python3
"""Writes a quantized (QOperator) convolution net as an ONNX test case.

Usage: /usr/bin/python3 tests/quant_convnet.py OUT_DIR [--seed N]

OUT_DIR/model.onnx and OUT_DIR/test_data_set_0/input_0.pb (the layout
minfer bench, minfer test and /work/shared/peer/ort-bench read): a float
[1, 3, 224, 224] input, QuantizeLinear to uint8, nine 3x3 QLinearConvs
(3 -> 32 -> 64 ... -> 512 channels, five of stride 2, 1.4 GMAC) with int8
weights quantized per output channel, int32 biases and uint8 outputs whose
zero point 0 folds each ReLU, then DequantizeLinear and a
GlobalAveragePool. As ONNX Runtime's quantizer writes QOperator models; the
scales come from a float run of the same weights on the input (torch), so
the activations use their uint8 range. The weights are random (seeded):
this is a speed and agreement case, not a trained model.
"""

import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

LAYERS = [(3, 32, 2), (32, 64, 1), (64, 64, 2), (64, 128, 1), (128, 128, 2),
          (128, 256, 1), (256, 256, 2), (256, 512, 1), (512, 512, 2)]


def main():
    out = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    xs, xz = np.float32(2.0 / 255), np.uint8(128)
    const("in_s", np.array(xs, np.float32))
    const("in_z", np.array(xz, np.uint8))
    nodes.append(helper.make_node("QuantizeLinear", ["x", "in_s", "in_z"], ["q0"]))
    h = torch.from_numpy((np.clip(np.round(x / xs) + 128, 0, 255) - 128) * xs)
    prev, s_prev = "q0", xs
    z_prev = "in_z"
    for i, (c, m, stride) in enumerate(LAYERS):
        w = rng.normal(0, np.sqrt(2.0 / (c * 9)), (m, c, 3, 3)).astype(np.float32)
        b = rng.normal(0, 0.05, m).astype(np.float32)
        ws = (np.abs(w).reshape(m, -1).max(axis=1) / 127).astype(np.float32)
        wq = np.clip(np.round(w / ws[:, None, None, None]), -127, 127).astype(np.int8)
        bq = np.round(b / (s_prev * ws)).astype(np.int32)
        wd = torch.from_numpy(wq.astype(np.float32) * ws[:, None, None, None])
        bd = torch.from_numpy(bq.astype(np.float32) * s_prev * ws)
        h = torch.relu(torch.nn.functional.conv2d(h, wd, bd, stride=stride, padding=1))
        ys = np.float32(max(float(h.max()), 1e-3) / 255)
        h = torch.clamp(torch.round(h / float(ys)), 0, 255) * float(ys)
        names = [prev, "s%d" % i if i else "in_s", z_prev,
                 const("w%d" % i, wq), const("ws%d" % i, ws), const("wz%d" % i, np.zeros(m, np.int8)),
                 const("ys%d" % i, np.array(ys, np.float32)), const("yz%d" % i, np.array(0, np.uint8)),
                 const("b%d" % i, bq)]
        if i:
            names[1] = "ys%d" % (i - 1)
        nodes.append(helper.make_node("QLinearConv", names, ["q%d" % (i + 1)], name="conv%d" % i,
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                      strides=[stride, stride]))
        prev, s_prev, z_prev = "q%d" % (i + 1), ys, "yz%d" % i
    n = len(LAYERS)
    nodes.append(helper.make_node("DequantizeLinear", [prev, "ys%d" % (n - 1), z_prev], ["f"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["f"], ["y"]))
    graph = helper.make_graph(
        nodes, "quant_convnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 1, 1])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="minfer tests/quant_convnet.py")
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    t = numpy_helper.from_array(x, "x")
    with open(os.path.join(out, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(t.SerializeToString())


if __name__ == "__main__":
    main()
