#!/usr/bin/python3
"""Dynamic quantization of a float model's Conv nodes in the form ONNX
Runtime's quantize_dynamic emits: per Conv, DynamicQuantizeLinear of the
input (uint8), ConvInteger with the weights quantized to uint8 (per
tensor, the range including 0), Cast of the int32 sums to float, Mul by
x_scale * w_scale, and Add of the bias reshaped to [1, M, 1, ...].

usage: quantize_dynamic.py IN.onnx OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantize_u8(w):
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = np.float32((hi - lo) / 255 if hi > lo else 1.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    q = np.clip(np.rint(w / scale) + zp, 0, 255).astype(np.uint8)
    return q, scale, zp


def convert(m):
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    # exporters put weights behind Identity nodes: see through them
    for n in g.node:
        if n.op_type == "Identity" and n.input[0] in inits:
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = n.output[0]
            inits[n.output[0]] = t
    nodes = []
    for n in g.node:
        if n.op_type != "Conv" or n.input[1] not in inits or \
                (len(n.input) > 2 and n.input[2] and n.input[2] not in inits):
            nodes.append(n)
            continue
        p = n.output[0] + "_dq"
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        q, ws, wz = quantize_u8(w)
        g.initializer.extend([numpy_helper.from_array(q, p + "_w"),
                              numpy_helper.from_array(ws, p + "_ws"),
                              numpy_helper.from_array(wz, p + "_wz")])
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [n.input[0]], [p + "_x", p + "_xs", p + "_xz"]),
            helper.make_node("ConvInteger", [p + "_x", p + "_w", p + "_xz", p + "_wz"], [p + "_i"],
                             **attrs),
            helper.make_node("Cast", [p + "_i"], [p + "_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "_xs", p + "_ws"], [p + "_s"]),
        ]
        if len(n.input) > 2 and n.input[2]:
            nodes.append(helper.make_node("Mul", [p + "_f", p + "_s"], [p + "_m"]))
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float32)
            shape = [1, b.size] + [1] * (len(w.shape) - 2)
            g.initializer.append(numpy_helper.from_array(b.reshape(shape), p + "_b"))
            nodes.append(helper.make_node("Add", [p + "_m", p + "_b"], [n.output[0]]))
        else:
            nodes.append(helper.make_node("Mul", [p + "_f", p + "_s"], [n.output[0]]))
    for name, t in inits.items():
        if name not in {i.name for i in g.initializer}:
            g.initializer.append(t)
    nodes = [n for n in nodes if not (n.op_type == "Identity" and n.output[0] in inits)]
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    del g.value_info[:]
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 11:
            op.version = 11
    return m


if __name__ == "__main__":
    onnx.save(convert(onnx.load(sys.argv[1])), sys.argv[2])
