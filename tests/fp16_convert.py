#!/usr/bin/python3
"""Converts a float32 ONNX model to float16 or bfloat16 as ONNX Runtime's
tools (onnxconverter_common's float16 conversion) do: every float
initializer, Constant and Cast-to-float becomes the 2-byte type, except the
inputs ONNX requires in float (Resize/Upsample roi and scales); value_info
is dropped (shape inference retypes it). keep_io: the graph's inputs and
outputs stay float, with Casts at the boundary; else they are float16 too.

usage: fp16_convert.py IN.onnx OUT.onnx [--io16] [--bf16]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KEEP_FLOAT = {("Resize", 1), ("Resize", 2), ("Upsample", 1)}


def to_half(t, bf16):
    a = numpy_helper.to_array(t).astype(np.float32)
    if not bf16:
        n = numpy_helper.from_array(a.astype(np.float16), t.name)
        return n
    u = a.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    n = TensorProto()
    n.name, n.data_type = t.name, TensorProto.BFLOAT16
    n.dims.extend(a.shape)
    n.raw_data = u.tobytes()
    return n


def convert_graph(g, half, bf16):
    keep = set()
    for node in g.node:
        for i, name in enumerate(node.input):
            if (node.op_type, i) in KEEP_FLOAT:
                keep.add(name)
    inits = []
    for t in g.initializer:
        inits.append(to_half(t, bf16) if t.data_type == TensorProto.FLOAT and t.name not in keep
                     else t)
    del g.initializer[:]
    g.initializer.extend(inits)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT and \
                    not any(o in keep for o in node.output):
                a.t.CopyFrom(to_half(a.t, bf16))
            if node.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = half
            if a.type == onnx.AttributeProto.GRAPH:
                convert_graph(a.g, half, bf16)
    del g.value_info[:]


def convert(m, io16, bf16):
    half = TensorProto.BFLOAT16 if bf16 else TensorProto.FLOAT16
    g = m.graph
    convert_graph(g, half, bf16)
    init_names = {t.name for t in g.initializer}
    pre, post = [], []
    for v in g.input:
        if v.name in init_names or v.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        if io16:
            v.type.tensor_type.elem_type = half
            continue
        inner = v.name + "_half"
        for node in g.node:
            for i, name in enumerate(node.input):
                if name == v.name:
                    node.input[i] = inner
        pre.append(helper.make_node("Cast", [v.name], [inner], to=half))
    for v in g.output:
        if v.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        if io16:
            v.type.tensor_type.elem_type = half
            continue
        inner = v.name + "_half"
        for node in g.node:
            for i, name in enumerate(node.output):
                if name == v.name:
                    node.output[i] = inner
        post.append(helper.make_node("Cast", [inner], [v.name], to=TensorProto.FLOAT))
    nodes = pre + list(g.node) + post
    del g.node[:]
    g.node.extend(nodes)
    return m


def main(argv):
    m = onnx.load(argv[1])
    convert(m, "--io16" in argv, "--bf16" in argv)
    onnx.save(m, argv[2])


if __name__ == "__main__":
    main(sys.argv)
