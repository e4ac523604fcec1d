#!/usr/bin/env python3
"""Writes fuzz_graph programs from a readable description: the regression
inputs in tests/fuzz/regressions/graph/ were made with it, and it documents
fuzz_graph's byte grammar (keep the tables in step with fuzz_graph.c).

    graph_program.py OUT_DIR      writes every program in PROGRAMS below

A program is [opset, node count, node...]; a node is
("Op", [input...], n_out, {attr: value}) where an input is an int (an
earlier value by index), or a constant: ("d", dtype, dims, values),
("n", dims, values), ("i", values), ("F", values), ("c", values),
("s", value), ("s0", value) (rank 0), ("f", value), ("b", value),
("q", type, value). A graph attribute is a list of nodes (the body).
"""
import math
import os
import sys

BIG_INTS = [2**31 - 1, 2**31, 2**31 + 1, 2**32, 2**32 - 1, 2**32 + 1, 2**40, 2**54,
            2**62, 2**63 - 1, -2**63, -2**63 + 1, -2**31, -2**32, -2**62, 2**16,
            2**20, 2**30, 65535, 999999, 2**24, 2**33, 3 * 2**61, 9999]
FLOATS = [0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -0.0, 1e-30, 1e30, -1e30, 1e-45, 2147483648.0,
          4294967296.0, 4.611686e18, 9.223372e18, -9.223372e18, 65504.0, 1e10]
BIG_DIMS = [7, 8, 16, 32]
OPSETS = [13, 11, 17, 18, 21, 9]
DATA_TYPES = ["float", "float", "float", "int64", "int32", "double", "uint8", "bool"]
SCALAR_TYPES = ["int64", "float", "int32", "double"]
TENSOR_TYPES = ["float", "int64", "double", "bool"]

# (op, inputs, min_out, max_out, [(attr, kind, choices)]), as in fuzz_graph.c.
AUTO_PADS = ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]
CONV = [("kernel_shape", "I"), ("strides", "I"), ("pads", "I"), ("dilations", "I"),
        ("group", "i"), ("auto_pad", "s", AUTO_PADS)]
POOL = [("kernel_shape", "I"), ("strides", "I"), ("pads", "I"), ("dilations", "I"),
        ("ceil_mode", "i"), ("auto_pad", "s", AUTO_PADS)]
SCHEMAS = [
    ("ConvTranspose", "dd|d", 1, 1, CONV + [("output_shape", "I"), ("output_padding", "I")]),
    ("Conv", "dd|d", 1, 1, CONV),
    ("ConstantOfShape", "i", 1, 1, [("value", "t")]),
    ("Expand", "di", 1, 1, []),
    ("Tile", "di", 1, 1, []),
    ("Pad", "di|fi", 1, 1, [("mode", "s", ["constant", "reflect", "edge", "wrap"])]),
    ("Range", "sss", 1, 1, []),
    ("Range", "fff", 1, 1, []),
    ("Resize", "d|FFi", 1, 1, [("mode", "s", ["nearest", "linear", "cubic"]),
                               ("coordinate_transformation_mode", "s",
                                ["half_pixel", "asymmetric", "align_corners",
                                 "tf_crop_and_resize", "pytorch_half_pixel"]),
                               ("nearest_mode", "s", ["round_prefer_floor", "floor", "ceil"]),
                               ("cubic_coeff_a", "f"), ("exclude_outside", "i"),
                               ("extrapolation_value", "f"), ("axes", "I")]),
    ("LRN", "d", 1, 1, [("size", "i"), ("alpha", "f"), ("beta", "f"), ("bias", "f")]),
    ("Einsum", "d|dd", 1, 1, [("equation", "s",
                               ["abcd,efgh->", "ab,bc->aa", "ij,jk->ik", "i,i->", "ii->i",
                                "...ij->...ji", "abc->", "a,b,c->abc"])]),
    ("MaxPool", "d", 1, 2, POOL + [("storage_order", "i")]),
    ("AveragePool", "d", 1, 1, POOL + [("count_include_pad", "i")]),
    ("GlobalMaxPool", "d", 1, 1, []),
    ("MaxUnpool", "dn|i", 1, 1, [("kernel_shape", "I"), ("strides", "I"), ("pads", "I")]),
    ("Reshape", "di", 1, 1, [("allowzero", "i")]),
    ("Slice", "dii|ii", 1, 1, []),
    ("TopK", "ds", 2, 2, [("axis", "i"), ("largest", "i"), ("sorted", "i")]),
    ("Unique", "d", 1, 4, [("axis", "i"), ("sorted", "i")]),
    ("OneHot", "nqd", 1, 1, [("axis", "i")]),
    ("CumSum", "ds", 1, 1, [("exclusive", "i"), ("reverse", "i")]),
    ("Gather", "dn", 1, 1, [("axis", "i")]),
    ("GatherElements", "dn", 1, 1, [("axis", "i")]),
    ("GatherND", "dn", 1, 1, [("batch_dims", "i")]),
    ("ScatterElements", "dnd", 1, 1, [("axis", "i"),
                                      ("reduction", "s", ["none", "add", "mul", "max", "min"])]),
    ("ScatterND", "dnd", 1, 1, [("reduction", "s", ["none", "add", "mul", "max", "min"])]),
    ("Concat", "d|ddd", 1, 1, [("axis", "i")]),
    ("Split", "d|i", 1, 3, [("axis", "i"), ("num_outputs", "i")]),
    ("Transpose", "d", 1, 1, [("perm", "I")]),
    ("Squeeze", "d|i", 1, 1, []),
    ("Unsqueeze", "di", 1, 1, []),
    ("Flatten", "d", 1, 1, [("axis", "i")]),
    ("DepthToSpace", "d", 1, 1, [("blocksize", "i"), ("mode", "s", ["DCR", "CRD"])]),
    ("SpaceToDepth", "d", 1, 1, [("blocksize", "i")]),
    ("Trilu", "d|s", 1, 1, [("upper", "i")]),
    ("EyeLike", "d", 1, 1, [("k", "i"), ("dtype", "i")]),
    ("ReduceSum", "d|i", 1, 1, [("keepdims", "i"), ("noop_with_empty_axes", "i")]),
    ("ReduceMax", "d|i", 1, 1, [("axes", "I"), ("keepdims", "i")]),
    ("ReduceMin", "d|i", 1, 1, [("axes", "I"), ("keepdims", "i")]),
    ("ArgMax", "d", 1, 1, [("axis", "i"), ("keepdims", "i"), ("select_last_index", "i")]),
    ("ArgMin", "d", 1, 1, [("axis", "i"), ("keepdims", "i"), ("select_last_index", "i")]),
    ("Max", "d|dd", 1, 1, []),
    ("Min", "d|dd", 1, 1, []),
    ("Softmax", "d", 1, 1, [("axis", "i")]),
    ("MatMul", "dd", 1, 1, []),
    ("Gemm", "dd|d", 1, 1, [("transA", "i"), ("transB", "i"), ("alpha", "f"), ("beta", "f")]),
    ("Where", "cdd", 1, 1, []),
    ("Compress", "dc", 1, 1, [("axis", "i")]),
    ("NonZero", "d", 1, 1, []),
    ("NonMaxSuppression", "dd|sff", 1, 1, [("center_point_box", "i")]),
    ("ReverseSequence", "dn", 1, 1, [("time_axis", "i"), ("batch_axis", "i")]),
    ("Shape", "d", 1, 1, [("start", "i"), ("end", "i")]),
    ("Cast", "d", 1, 1, [("to", "i")]),
    ("Clip", "d|ff", 1, 1, []),
    ("LayerNormalization", "dd|d", 1, 1, [("axis", "i"), ("epsilon", "f")]),
    ("GridSample", "dd", 1, 1, [("align_corners", "i")]),
    ("RoiAlign", "ddn", 1, 1, [("output_height", "i"), ("output_width", "i"),
                               ("sampling_ratio", "i"), ("spatial_scale", "f")]),
    ("Loop", "sb|d", 1, 2, [("body", "g")]),
    ("If", "b", 1, 1, [("then_branch", "g"), ("else_branch", "g")]),
]


def find_byte(pred):
    for b in range(256):
        if pred(b):
            return b
    raise ValueError("no byte encodes that value")


def int_byte(v):
    if -2 <= v <= 5:
        return v + 2
    return find_byte(lambda b: b >= 128 and BIG_INTS[b % len(BIG_INTS)] == v)


def float_byte(v):
    if math.isnan(v):
        return 216
    if math.isinf(v):
        return 241 if v > 0 else 240
    return find_byte(lambda b: b < 216 and FLOATS[b % len(FLOATS)] == v and
                     math.copysign(1, FLOATS[b % len(FLOATS)]) == math.copysign(1, v))


def dim_byte(v):
    return find_byte(lambda b: (b % 5 if b < 224 else BIG_DIMS[b % 4]) == v)


def values(dtype, vals):
    if dtype in ("float", "double"):
        return [float_byte(v) for v in vals]
    if dtype in ("int64", "int32"):
        return [int_byte(v) for v in vals]
    return [v & 0xff for v in vals]


def first_values(dims, vals):
    """The values a data tensor reads: its first 64 (they repeat over the rest)."""
    n = math.prod(dims)
    m = min(n, 64)
    assert m == 0 or vals, "a non-empty tensor needs values"
    return [vals[i % len(vals)] for i in range(m)]


def const(c):
    k = c[0]
    if k == "d":
        _, dtype, dims, vals = c
        return ([DATA_TYPES.index(dtype), len(dims)] + [dim_byte(d) for d in dims] +
                values(dtype, first_values(dims, vals)))
    if k == "n":
        _, dims, vals = c
        return [len(dims)] + [dim_byte(d) for d in dims] + values("int64", first_values(dims, vals))
    if k == "i":
        return [len(c[1])] + values("int64", c[1])
    if k == "F":
        return [len(c[1])] + values("float", c[1])
    if k == "c":
        return [len(c[1])] + [v & 1 for v in c[1]]
    if k == "s":
        return [1, int_byte(c[1])]
    if k == "s0":
        return [0, int_byte(c[1])]
    if k == "f":
        return [float_byte(c[1])]
    if k == "b":
        return [c[1] & 1]
    if k == "q":
        return [SCALAR_TYPES.index(c[1])] + values(c[1], [c[2]])
    raise ValueError(k)


def node(n, depth=0):
    op, inputs, n_out, attrs = n
    if isinstance(op, int):
        index = op
    else:
        index = [s[0] for s in SCHEMAS].index(op)
    _, kinds, min_out, max_out, schema_attrs = SCHEMAS[index]
    out = [index]
    slots = [k for k in kinds if k != "|"]
    n_required = len(kinds.split("|")[0])
    for i, kind in enumerate(slots):
        if i >= len(inputs):
            assert i >= n_required, "a required input is missing"
            out.append(7)  # omitted: the rest of the optional ones too
            break
        v = inputs[i]
        if isinstance(v, int):
            out.append(4 * v)  # value v (of fewer than 64 visible)
        else:
            out.append(1)
            c = v if v[0] in ("s0",) or v[0] == kind else (kind,) + tuple(v)
            out += const(c if c[0] != "s0" else c)
    out.append(n_out - min_out)
    names = [a[0] for a in schema_attrs]
    mask = 0
    for a in attrs:
        mask |= 1 << names.index(a)
    out.append(mask)
    for a in schema_attrs:
        if a[0] not in attrs:
            continue
        v, kind = attrs[a[0]], a[1]
        if kind == "i":
            out.append(int_byte(v))
        elif kind == "I":
            out += [len(v)] + [int_byte(x) for x in v]
        elif kind == "f":
            out.append(float_byte(v))
        elif kind == "s":
            out.append(a[2].index(v))
        elif kind == "t":
            out += [TENSOR_TYPES.index(v[0])] + values(v[0], [v[1]])
        else:  # g: a body
            out.append(len(v))
            for b in v:
                out += node(b, depth + 1)
    return out


def program(opset, nodes):
    return bytes([OPSETS.index(opset), len(nodes) - 1] + [b for n in nodes for b in node(n)])


F1 = ("d", "float", [1, 1, 1, 1], [1.0])
PROGRAMS = {
    # issue 16 item 1: ConvTranspose output_shape [2^62, 4] wraps the element count.
    "convtranspose-output-shape-2p62": (13, [
        ("ConvTranspose", [F1, F1], 1, {"output_shape": [2**62, 4]})]),
    # item 2: byte counts that are multiples of 2^64.
    "constantofshape-2p31-2p31": (13, [
        ("ConstantOfShape", [("i", [2**31, 2**31])], 1, {"value": ("float", 1.0)})]),
    "expand-2p32-2p30": (13, [
        ("Expand", [("d", "float", [1], [1.0]), ("i", [2**32, 2**30])], 1, {})]),
    "tile-2p62": (13, [
        ("Tile", [("d", "float", [1], [1.0]), ("i", [2**62])], 1, {})]),
    "pad-2p62": (13, [
        ("Pad", [("d", "float", [2], [1.0, 2.0]), ("i", [2**62, -2])], 1, {})]),
    "range-2p62": (13, [
        ("Range", [("s", 0), ("s", 2**62), ("s", 1)], 1, {})]),
    # item 5: work that explodes from one attribute or one size.
    "lrn-size-2p31": (13, [
        ("LRN", [("d", "float", [1, 4, 1, 1], [1.0, 1.0, 1.0, 1.0])], 1, {"size": 2**31 - 1})]),
    "einsum-abcd-efgh": (13, [
        ("Einsum", [("d", "float", [16, 16, 16, 16], [1.0]),
                    ("d", "float", [16, 16, 16, 16], [1.0])], 1,
         {"equation": "abcd,efgh->"})]),
    # A Loop of 9999 in a Loop of 9999 (the fuzz limit is 10,000 per Loop):
    # 10^8 iterations of the inner body.
    "loop-nested-9999": (13, [
        ("Loop", [("s0", 9999), ("b", 1), ("d", "float", [1], [1.0])], 1, {"body": [
            ("Loop", [("s0", 9999), ("b", 1), 4], 1, {"body": []})]})]),
    # item 6: Loop scan outputs past max_tensor_bytes (16 MiB in fuzz_graph):
    # a 256 KiB slice 9999 times.
    "loop-scan-bytes": (13, [
        ("Loop", [("s0", 9999), ("b", 1), ("d", "float", [16, 16, 16, 16], [1.0])], 2,
         {"body": []})]),
    # item 8: wrong results reported as success.
    "topk-nan": (13, [
        ("TopK", [("d", "float", [4], [3.0, math.nan, 1.0, math.nan]), ("s", 3)], 2,
         {"largest": 0})]),
    "unique-nan": (13, [
        ("Unique", [("d", "float", [4], [math.nan, 0.0, math.nan, 1.0])], 4,
         {"sorted": 1})]),
    "onehot-depth-2p40": (13, [
        ("OneHot", [("n", [2], [1, 0]), ("q", "int64", 2**40), ("d", "float", [2], [0.0, 1.0])],
         1, {})]),
    # item 10: UBSan's signed overflows.
    "slice-int64-extremes": (13, [
        ("Slice", [("d", "float", [4], [1.0, 2.0, 3.0, 0.5]), ("i", [-2**63 + 1]),
                   ("i", [2**63 - 1]), ("i", [0]), ("i", [2**63 - 1])], 1, {})]),
    "cumsum-int32": (13, [
        ("CumSum", [("d", "int32", [3], [2**31 - 1, 2**31 - 1, 2**31 - 1]), ("s", 0)], 1, {})]),
    "resize-nan-roi": (13, [
        ("Resize", [("d", "float", [1, 1, 2, 2], [1.0, 2.0, 3.0, 0.5]),
                    ("F", [math.nan, math.nan, math.nan, math.nan, math.nan, math.nan,
                           math.nan, math.nan]),
                    ("F", [1.0, 1.0, 2.0, 2.0])], 1,
         {"coordinate_transformation_mode": "tf_crop_and_resize", "mode": "linear"})]),
    # Found by fuzz_graph: ScatterElements on empty data passed memcpy a NULL
    # pointer (undefined even for 0 bytes).
    "scatterelements-empty": (13, [
        ("ScatterElements", [("d", "float", [0], []), ("n", [0], []), ("d", "float", [0], [])],
         1, {})]),
    # Found by fuzz_graph: Unique along an axis of slices with no elements
    # computed NULL + 0 for its empty output.
    "unique-empty-slices": (13, [
        ("Unique", [("d", "float", [2, 0], [])], 1, {"axis": 0})]),
    # Found by reading indexing.c after those: the same NULL + 0 in GatherND
    # and Compress on empty slices; DepthToSpace's blocksize squared
    # overflowing (in core/shapes/shape_infer.c before the fixes; the
    # kernel checks it too now).
    "gathernd-empty-slices": (13, [
        ("GatherND", [("d", "float", [2, 0], []), ("n", [2, 1], [0, 1])], 1, {})]),
    "compress-empty-slices": (13, [
        ("Compress", [("d", "float", [2, 0], []), ("c", [1, 1])], 1, {"axis": 0})]),
    "depthtospace-blocksize-2p32": (13, [
        ("DepthToSpace", [("d", "float", [1, 1, 1, 1], [1.0])], 1, {"blocksize": 2**32})]),
    # Found by fuzz_graph's bounded run: EyeLike's dtype from the model went
    # into a shift (CPU_T) unchecked.
    "eyelike-dtype-65536": (13, [
        ("EyeLike", [("d", "float", [2, 2], [1.0])], 1, {"dtype": 65536})]),
    "constantofshape-numel-overflow": (13, [
        ("ConstantOfShape", [("i", [2**62, 2**62, 4])], 1, {"value": ("float", 1.0)})]),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (opset, nodes) in PROGRAMS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(program(opset, nodes))


if __name__ == "__main__":
    main()
