#!/usr/bin/env python3
"""Writes a small ONNX model with a com.example Swish node between two
standard ops, without the onnx package (the protobuf fields by hand):

    x [N,4] float -> Relu -> r -> com.example Swish(alpha) -> s -> Neg -> y

usage: make_swish_model.py OUT.onnx [ALPHA]
"""
import struct
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 5:
        return key + payload
    return key + varint(len(payload)) + payload


def s(num, text):
    return field(num, 2, text.encode())


def msg(num, *parts):
    return field(num, 2, b"".join(parts))


def value_info(num, name, dims):
    dim_msgs = [msg(1, s(2, d) if isinstance(d, str) else field(1, 0, d)) for d in dims]
    shape = msg(2, *dim_msgs)
    tensor_type = msg(1, field(1, 0, 1), shape)  # elem_type FLOAT
    return msg(num, s(1, name), msg(2, tensor_type))


def node(inputs, outputs, name, op, domain="", attrs=()):
    parts = [s(1, i) for i in inputs] + [s(2, o) for o in outputs] + [s(3, name), s(4, op)]
    parts += list(attrs)
    if domain:
        parts.append(s(7, domain))
    return msg(1, *parts)


def main():
    out = sys.argv[1]
    alpha = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    attr = msg(5, s(1, "alpha"), field(2, 5, struct.pack("<f", alpha)), field(20, 0, 1))
    graph = b"".join([
        node(["x"], ["r"], "relu", "Relu"),
        node(["r"], ["s"], "swish", "Swish", "com.example", [attr]),
        node(["s"], ["y"], "neg", "Neg"),
        s(2, "swish_graph"),
        value_info(11, "x", ["N", 4]),
        value_info(12, "y", ["N", 4]),
    ])
    model = b"".join([
        field(1, 0, 8),                                      # ir_version
        s(2, "make_swish_model.py"),                         # producer_name
        msg(7, graph),
        msg(8, s(1, ""), field(2, 0, 13)),                   # opset ai.onnx 13
        msg(8, s(1, "com.example"), field(2, 0, 1)),         # opset com.example 1
    ])
    with open(out, "wb") as f:
        f.write(model)


if __name__ == "__main__":
    main()
