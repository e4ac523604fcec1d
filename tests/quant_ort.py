#!/usr/bin/python3
"""Quantized ops on the CPU provider against ONNX Runtime, exactly (issue
35): small graphs of QLinearConv (uint8/int8 weights, per-tensor and
per-channel scales, int32 bias, pads, strides, dilations, groups),
QLinearMatMul, ConvInteger, MatMulInteger (zero points), QuantizeLinear
and DequantizeLinear (per axis, negative axis) and DynamicQuantizeLinear
feeding ConvInteger, with random data whose scales put many products on
rounding ties and past saturation. ORT runs each on its CPU kernels;
`minfer test --atol 0 --rtol 0` must give the same numbers: zero steps off
on every element. A step off would show as a difference of one.

Also the contrib plugin's QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
QGemm, QLinearSigmoid, QLinearLeakyRelu (every value of the type) and
QLinearConcat (copied and requantized inputs, negative axis) and
QLinearAveragePool (1-3 spatial dims, pads, ceil_mode, count_include_pad,
NHWC) (com.microsoft) against ORT's, zero steps off, on cpu and again on
onednn,cpu (oneDNN's own QLinearAdd); malformed nodes of
these must fail with a message naming the op and the input.
Also whole models quantized dynamically as ORT's quantize_dynamic does
(quantize_dynamic.py: DynamicQuantizeLinear + ConvInteger per Conv) from
the shared models given: ORT's outputs on data set 0 at rtol 1e-3 / atol
1e-4 (the integer parts are exact; the float epilogues round alike).

usage: quant_ort.py MINFER_CLI [MODELS_DIR MODEL...]
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fp16_models import run_ort, case  # noqa: E402
import subprocess  # noqa: E402

rng = np.random.default_rng(35)
T = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
     np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


def q8(shape, dt):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return rng.integers(lo, hi, size=shape).astype(dt)


def model(nodes, feeds, inits, outs, opset=13):
    # The peer takes no int8 input: an int8 feed comes in as float holding
    # the integers and is quantized exactly (scale 1) inside the graph.
    pre = []
    for i, (n, a) in enumerate(feeds):
        if a.dtype == np.int8:
            pre.append(helper.make_node("QuantizeLinear", [n + "_f", "one_", "zero_s8_"], [n]))
            feeds[i] = (n + "_f", a.astype(np.float32))
            if not any(k == "one_" for k, _ in inits):
                inits = inits + [("one_", np.float32(1)), ("zero_s8_", np.int8(0))]
    nodes = pre + nodes
    g = helper.make_graph(
        nodes, "q",
        [helper.make_tensor_value_info(n, T[a.dtype], a.shape) for n, a in feeds],
        [helper.make_tensor_value_info(n, t, None) for n, t in outs],
        [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def qlinearconv(xt, wt, per_channel, bias, real_scales=False, **attrs):
    C, M, k = 4 * attrs.get("group", 1), 6 * attrs.get("group", 1), 3
    x = q8((1, C, 11, 9), xt)
    w = q8((M, C // attrs.get("group", 1), k, k), wt)
    inits = [("xs", np.float32(0.0125)), ("xz", q8((), xt)), ("w", w),
             ("ws", (rng.integers(1, 8, M) / 256).astype(np.float32) if per_channel
              else np.float32(1 / 64)),
             ("wz", np.zeros(M if per_channel else (), wt) if wt == np.int8 else q8((), wt)),
             ("ys", np.float32(0.25)), ("yz", q8((), xt))]
    if real_scales:
        # scales as a calibration gives them: the float multiplier
        # x_scale * w_scale / y_scale differs from the exact one
        inits[0] = ("xs", np.float32(0.017316))
        inits[3] = ("ws", rng.uniform(0.0004, 0.004, M).astype(np.float32))
        inits[5] = ("ys", np.float32(0.049137))
    ins = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    if bias:
        inits.append(("b", rng.integers(-2000, 2000, M).astype(np.int32)))
        ins.append("b")
    n = helper.make_node("QLinearConv", ins, ["y"], kernel_shape=[k, k], **attrs)
    return model([n], [("x", x)], inits, [("y", T[np.dtype(xt)])], 10), [("x", x)]


def qlinearmatmul(at, bt, per_col, real_scales=False):
    a = q8((2, 5, 33), at)
    b = q8((33, 7), bt)
    inits = [("as", np.float32(0.03125)), ("az", q8((), at)), ("b", b),
             ("bs", (rng.integers(1, 8, 7) / 64).astype(np.float32) if per_col
              else np.float32(0.0625)),
             ("bz", q8((7,) if per_col else (), bt)),
             ("ys", np.float32(0.5)), ("yz", q8((), at))]
    if real_scales:
        inits[0] = ("as", np.float32(0.0219))
        inits[3] = ("bs", rng.uniform(0.001, 0.01, 7).astype(np.float32))
        inits[5] = ("ys", np.float32(0.1371))
    n = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    return model([n], [("a", a)], inits, [("y", T[np.dtype(at)])], 10), [("a", a)]


def convinteger(xt, wt):
    x = q8((2, 3, 10, 10), xt)
    inits = [("w", q8((5, 3, 3, 3), wt)), ("xz", q8((), xt)), ("wz", q8((), wt))]
    n = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 0, 1, 2],
                         strides=[2, 1], dilations=[1, 2])
    return model([n], [("x", x)], inits, [("y", TensorProto.INT32)], 10), [("x", x)]


def matmulinteger(at, bt):
    a = q8((3, 4, 20), at)
    inits = [("b", q8((20, 9), bt)), ("az", q8((), at)), ("bz", q8((9,), bt))]
    n = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    return model([n], [("a", a)], inits, [("y", TensorProto.INT32)], 10), [("a", a)]


def qdq(axis):
    x = (rng.integers(-600, 600, (2, 3, 4)) / 8).astype(np.float32)
    shp = (3,) if axis in (1, -2) else (4,)
    s = (rng.integers(1, 4, shp) / 4).astype(np.float32)
    z = q8(shp, np.int8)
    inits = [("s", s), ("z", z)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)]
    return model(nodes, [("x", x)], inits, [("q", TensorProto.INT8), ("y", TensorProto.FLOAT)]), \
        [("x", x)]


def ms_model(nodes, feeds, inits, outs):
    m = model(nodes, feeds, inits, outs, 13)
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def qlinear_binary(op, dt, shape_b, shape_a=(2, 3, 4, 5), scales=None):
    a = q8(shape_a, dt)
    b = q8(shape_b, dt)
    sa, sb, sc = scales or (0.0173, 0.0411, 0.0537 if op == "QLinearAdd" else 0.231)
    inits = [("as", np.float32(sa)), ("az", q8((), dt)), ("b", b),
             ("bs", np.float32(sb)), ("bz", q8((), dt)),
             ("cs", np.float32(sc)), ("cz", q8((), dt))]
    n = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"],
                         domain="com.microsoft")
    return ms_model([n], [("a", a)], inits, [("c", T[np.dtype(dt)])]), [("a", a)]


def qgemm(bdt, float_y, trans_a=0, c_shape=(7,)):
    """com.microsoft QGemm as quantize_static's QOperator form writes it for
    a Gemm: per-column b_scale, int32 C broadcast, a quantized or float Y."""
    a = q8((5, 11) if trans_a else (11, 5), np.uint8)
    b = q8((7, 5), bdt)
    inits = [("as", np.float32(0.0173)), ("az", np.uint8(121)), ("b", b),
             ("bs", rng.uniform(0.002, 0.02, 7).astype(np.float32)), ("bz", q8((7,), bdt)),
             ("c", rng.integers(-900, 900, size=c_shape).astype(np.int32))]
    ins = ["a", "as", "az", "b", "bs", "bz", "c"]
    if not float_y:
        inits += [("ys", np.float32(0.0311)), ("yz", np.uint8(117))]
        ins += ["ys", "yz"]
    n = helper.make_node("QGemm", ins, ["y"], domain="com.microsoft", transA=trans_a, transB=1,
                         alpha=0.75)
    out = TensorProto.FLOAT if float_y else TensorProto.UINT8
    return ms_model([n], [("a", a)], inits, [("y", out)]), [("a", a)]


def qlinear_gap(dt, channels_last):
    x = q8((2, 7, 5, 3) if channels_last else (2, 3, 7, 5), dt)
    inits = [("xs", np.float32(0.0219)), ("xz", q8((), dt)), ("ys", np.float32(0.0137)),
             ("yz", q8((), dt))]
    n = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                         domain="com.microsoft", channels_last=channels_last)
    return ms_model([n], [("x", x)], inits, [("y", T[np.dtype(dt)])]), [("x", x)]


def qlinearadd_grid(dt, form, scales, zps):
    """QLinearAdd on every pair (a, b) of the type's values: a 256 x 256 grid
    as two full tensors, or with B ('inner_b') or A ('inner_a') one value per
    row (broadcast along the last axis), or B one scalar."""
    v = np.arange(0, 256) if dt == np.uint8 else np.arange(-128, 128)
    col, row = v.astype(dt).reshape(1, 256), v.astype(dt).reshape(256, 1)
    a, b = {"full": (np.broadcast_to(col, (256, 256)).copy(), np.broadcast_to(row, (256, 256)).copy()),
            "inner_b": (np.broadcast_to(col, (256, 256)).copy(), row),
            "inner_a": (row, np.broadcast_to(col, (256, 256)).copy()),
            "scalar_b": (np.broadcast_to(col, (256, 256)).copy(), v[97:98].astype(dt))}[form]
    (sa, sb, sc), (za, zb, zc) = scales, zps
    inits = [("as", np.float32(sa)), ("az", dt(za)), ("b", b), ("bs", np.float32(sb)),
             ("bz", dt(zb)), ("cs", np.float32(sc)), ("cz", dt(zc))]
    n = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"],
                         domain="com.microsoft")
    return ms_model([n], [("a", a)], inits, [("c", T[np.dtype(dt)])]), [("a", a)]


def qlinear_lookup(op, dt, scales, zps, **attrs):
    """QLinearSigmoid / QLinearLeakyRelu on every value of the type (a
    [2, 128] tensor of 0..255 or -128..127): the whole lookup table."""
    v = np.arange(0, 256) if dt == np.uint8 else np.arange(-128, 128)
    x = v.astype(dt).reshape(2, 128)
    (sx, sy), (zx, zy) = scales, zps
    inits = [("xs", np.float32(sx)), ("xz", dt(zx)), ("ys", np.float32(sy)), ("yz", dt(zy))]
    n = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                         **attrs)
    return ms_model([n], [("x", x)], inits, [("y", T[np.dtype(dt)])]), [("x", x)]


def qlinear_concat(dt, axis, same, shapes=((2, 3, 4), (2, 5, 4), (2, 1, 4))):
    """QLinearConcat as quantize_static writes it: Y_scale, Y_zero_point,
    then (X_i, scale, zero point); 'same' gives every input Y's scale and
    zero point (copied), else each its own (requantized; the second input
    the whole value range, so every table entry is used)."""
    ys, yz = np.float32(0.0419), q8((), dt)
    inits, ins, feeds = [("ys", ys), ("yz", yz)], ["ys", "yz"], []
    for k, shp in enumerate(shapes):
        x = q8(shp, dt)
        if k == 1 and not same:
            v = np.arange(0, 256) if dt == np.uint8 else np.arange(-128, 128)
            x = np.resize(v, shp).astype(dt)
        s, z = (ys, yz) if same else (np.float32(rng.uniform(0.01, 0.09)), q8((), dt))
        if k == 0:
            feeds.append((f"x{k}", x))
        else:
            inits.append((f"x{k}", x))
        inits += [(f"s{k}", s), (f"z{k}", z)]
        ins += [f"x{k}", f"s{k}", f"z{k}"]
    n = helper.make_node("QLinearConcat", ins, ["y"], domain="com.microsoft", axis=axis)
    return ms_model([n], feeds, inits, [("y", T[np.dtype(dt)])]), feeds


def qlinear_avgpool(dt, shape, channels_last=0, **attrs):
    """com.microsoft QLinearAveragePool (quantize_static's QOperator form of
    AveragePool): pads, strides, count_include_pad, ceil_mode, NCHW or NHWC."""
    x = q8(shape, dt)
    inits = [("xs", np.float32(0.0219)), ("xz", q8((), dt)), ("ys", np.float32(0.0137)),
             ("yz", q8((), dt))]
    n = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                         domain="com.microsoft", channels_last=channels_last, **attrs)
    return ms_model([n], [("x", x)], inits, [("y", T[np.dtype(dt)])]), [("x", x)]


# A MobileNet V2's residual Add (quantize_static, MinMax): ORT's x86 kernel
# computes fma(a, sa/sc, fma(b, sb/sc, zc - (sa/sc za + sb/sc zb))) in float,
# a last bit from (sa (a - za) + sb (b - zb)) / sc on two of these 65536
# pairs, a tie apart: one step there, 15 steps at the network's output.
MBV2 = ((0.04724602, 0.03807073, 0.05645178), (127, 138, 132))
MBV2_S8 = ((0.04724602, 0.03807073, 0.05645178), (-1, 10, 4))

# com.microsoft QOperator ops of the contrib plugin against ORT's x86 kernels,
# zero steps off: QLinearAdd in every operand form of ORT's broadcast loop
# (both spans, B a scalar or one value per innermost run, A so: swapped).
CONTRIB = {
    "qlinearadd_u8": lambda: qlinear_binary("QLinearAdd", np.uint8, (2, 3, 4, 5)),
    "qlinearadd_s8_broadcast": lambda: qlinear_binary("QLinearAdd", np.int8, (1, 3, 1, 5)),
    "qlinearadd_u8_grid": lambda: qlinearadd_grid(np.uint8, "full", *MBV2),
    "qlinearadd_s8_grid": lambda: qlinearadd_grid(np.int8, "full", *MBV2_S8),
    "qlinearadd_u8_grid_inner_b": lambda: qlinearadd_grid(np.uint8, "inner_b", *MBV2),
    "qlinearadd_u8_grid_inner_a": lambda: qlinearadd_grid(np.uint8, "inner_a", *MBV2),
    "qlinearadd_s8_grid_scalar_b": lambda: qlinearadd_grid(np.int8, "scalar_b", *MBV2_S8),
    "qlinearmul_u8_broadcast": lambda: qlinear_binary("QLinearMul", np.uint8, (5,)),
    "qlinearmul_s8": lambda: qlinear_binary("QLinearMul", np.int8, (2, 3, 4, 5)),
    "qgemm_u8s8": lambda: qgemm(np.int8, False),
    "qgemm_u8u8_transa_cmatrix": lambda: qgemm(np.uint8, False, 1, (11, 7)),
    "qgemm_u8s8_float_y": lambda: qgemm(np.int8, True, 0, (1, 7)),
    "qlinear_gap_u8": lambda: qlinear_gap(np.uint8, 0),
    "qlinear_gap_s8_nhwc": lambda: qlinear_gap(np.int8, 1),
    "qlinear_sigmoid_u8": lambda: qlinear_lookup("QLinearSigmoid", np.uint8, (0.0731, 1 / 256),
                                                 (131, 0)),
    "qlinear_sigmoid_s8": lambda: qlinear_lookup("QLinearSigmoid", np.int8, (0.0419, 0.00392),
                                                 (-7, -128)),
    "qlinear_leakyrelu_u8": lambda: qlinear_lookup("QLinearLeakyRelu", np.uint8,
                                                   (0.0537, 0.0311), (119, 97)),
    "qlinear_leakyrelu_s8_alpha": lambda: qlinear_lookup("QLinearLeakyRelu", np.int8,
                                                         (0.0537, 0.0213), (5, -20), alpha=0.1),
    "qlinear_avgpool_u8_pads": lambda: qlinear_avgpool(np.uint8, (2, 3, 9, 8), kernel_shape=[3, 3],
                                                       pads=[1, 1, 1, 1], strides=[2, 2]),
    "qlinear_avgpool_u8_include_pad_ceil": lambda: qlinear_avgpool(
        np.uint8, (1, 4, 7, 9), kernel_shape=[3, 2], pads=[1, 0, 1, 1], strides=[2, 2],
        count_include_pad=1, ceil_mode=1),
    "qlinear_avgpool_s8_nhwc": lambda: qlinear_avgpool(np.int8, (2, 8, 7, 5), 1,
                                                       kernel_shape=[2, 2], strides=[1, 2]),
    "qlinear_avgpool_s8_1d_include_pad": lambda: qlinear_avgpool(
        np.int8, (2, 3, 11), kernel_shape=[4], pads=[2, 1], count_include_pad=1),
    "qlinear_avgpool_u8_3d": lambda: qlinear_avgpool(np.uint8, (1, 2, 5, 4, 6),
                                                     kernel_shape=[2, 3, 2], pads=[0, 1, 1, 1, 0, 0]),
    "qlinear_concat_u8_same": lambda: qlinear_concat(np.uint8, 1, True),
    "qlinear_concat_u8_requant": lambda: qlinear_concat(np.uint8, 1, False),
    "qlinear_concat_s8_requant_axis_minus1": lambda: qlinear_concat(
        np.int8, -1, False, ((2, 3, 4), (2, 3, 256), (2, 3, 1))),
    "qlinear_concat_s8_same_axis0": lambda: qlinear_concat(np.int8, 0, True,
                                                           ((1, 3, 4), (3, 3, 4))),
}


def bad_concat(shapes, dtypes=None, axis=1):
    ins, inits = ["ys", "yz"], [("ys", np.float32(0.05)), ("yz", np.uint8(3))]
    for k, shp in enumerate(shapes):
        dt = (dtypes or [np.uint8] * len(shapes))[k]
        inits += [(f"x{k}", q8(shp, dt)), (f"s{k}", np.float32(0.07)), (f"z{k}", dt(1))]
        ins += [f"x{k}", f"s{k}", f"z{k}"]
    n = helper.make_node("QLinearConcat", ins, ["y"], domain="com.microsoft", axis=axis)
    return ms_model([n], [], inits, [("y", TensorProto.UINT8)])


def bad_lookup(op, xdt, sshape=()):
    inits = [("x", q8((2, 3), xdt) if xdt != np.float32 else np.ones((2, 3), np.float32)),
             ("xs", np.full(sshape, 0.05, np.float32)), ("xz", np.uint8(3)),
             ("ys", np.float32(0.01)), ("yz", np.uint8(0))]
    n = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft")
    return ms_model([n], [], inits, [("y", TensorProto.UINT8)])


# Malformed QOperator nodes: a clear error naming the op and the input,
# never a crash (minfer run exits 1 with the message).
BAD = {
    "concat_dim": (lambda: bad_concat([(2, 3, 4), (2, 3, 5)]),
                   "QLinearConcat: input 5 (X_1) has dim 2 = 5"),
    "concat_rank": (lambda: bad_concat([(2, 3, 4), (2, 3)]), "QLinearConcat: input 5 (X_1) has rank 2"),
    "concat_type": (lambda: bad_concat([(2, 3), (2, 3)], [np.uint8, np.int8]),
                    "QLinearConcat: input 5 is int8, expected uint8"),
    "concat_axis": (lambda: bad_concat([(2, 3), (2, 3)], axis=-3), "QLinearConcat: axis -3"),
    "concat_arity": (lambda: ms_model([helper.make_node("QLinearConcat", ["ys", "yz", "x0", "s0"],
                                                        ["y"], domain="com.microsoft")], [],
                                      [("ys", np.float32(1)), ("yz", np.uint8(0)),
                                       ("x0", np.uint8([1])), ("s0", np.float32(1))],
                                      [("y", TensorProto.UINT8)]), "QLinearConcat: 4 inputs"),
    "sigmoid_float": (lambda: bad_lookup("QLinearSigmoid", np.float32),
                      "QLinearSigmoid: X is float, expected uint8 or int8"),
    "avgpool_rank": (lambda: ms_model([helper.make_node(
        "QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
        kernel_shape=[2])], [], [("x", np.uint8([[1, 2]])), ("xs", np.float32(1)),
                                ("xz", np.uint8(0)), ("ys", np.float32(1)), ("yz", np.uint8(0))],
        [("y", TensorProto.UINT8)]), "QLinearAveragePool: X has rank 2, expected 3 to 5"),
    "avgpool_kernel": (lambda: ms_model([helper.make_node(
        "QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
        kernel_shape=[2])], [], [("x", np.ones((1, 2, 4, 4), np.uint8)), ("xs", np.float32(1)),
                                ("xz", np.uint8(0)), ("ys", np.float32(1)), ("yz", np.uint8(0))],
        [("y", TensorProto.UINT8)]), "QLinearAveragePool: kernel_shape must have 2 values"),
    "leakyrelu_per_channel": (lambda: bad_lookup("QLinearLeakyRelu", np.uint8, (3,)),
                              "QLinearLeakyRelu: scale and zero point 1 must be scalars"),
}


def dynamic_conv():
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    inits = [("w", q8((4, 3, 3, 3), np.uint8)), ("wz", q8((), np.uint8))]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])]
    return model(nodes, [("x", x)], inits, [("y", TensorProto.INT32), ("xs", TensorProto.FLOAT),
                                            ("xz", TensorProto.UINT8)], 11), [("x", x)]


CASES = {
    "qlinearconv_u8u8": lambda: qlinearconv(np.uint8, np.uint8, False, True, pads=[1, 1, 1, 1]),
    "qlinearconv_u8s8_perchannel": lambda: qlinearconv(np.uint8, np.int8, True, True,
                                                       strides=[2, 2], pads=[0, 1, 2, 1]),
    "qlinearconv_s8s8_group": lambda: qlinearconv(np.int8, np.int8, True, False, group=2,
                                                  dilations=[2, 1]),
    "qlinearconv_u8s8_real_scales": lambda: qlinearconv(np.uint8, np.int8, True, True, True,
                                                        pads=[1, 1, 1, 1], group=4),
    "qlinearmatmul_u8u8": lambda: qlinearmatmul(np.uint8, np.uint8, False),
    "qlinearmatmul_u8s8_percolumn": lambda: qlinearmatmul(np.uint8, np.int8, True),
    "qlinearmatmul_u8s8_real_scales": lambda: qlinearmatmul(np.uint8, np.int8, True, True),
    "convinteger_u8u8": lambda: convinteger(np.uint8, np.uint8),
    "convinteger_u8s8": lambda: convinteger(np.uint8, np.int8),
    "matmulinteger_u8u8_percolumn": lambda: matmulinteger(np.uint8, np.uint8),
    "qdq_axis1": lambda: qdq(1),
    "qdq_axis_minus1": lambda: qdq(-1),
    "dynamic_convinteger": dynamic_conv,
}


# Hand-computed cases: (model, inputs, expected outputs), every expected
# value worked out from the ONNX definition with ONNX Runtime's order of
# operations (ties round to even; saturation after the zero point).
def hand_quantize():
    x = np.array([0.25, 0.75, 1.25, -0.25, -5.25, 200, -200, 1.0,
                  np.inf, -np.inf, 1e30, -1e30, 4194304.5, -61.75], np.float32)
    inits = [("s", np.float32(0.5)), ("zu", np.uint8(10)), ("zs", np.int8(-3))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zu"], ["u"]),
             helper.make_node("QuantizeLinear", ["x", "s", "zs"], ["i"])]
    # x / 0.5 = .5 1.5 2.5 -.5 -10.5 400 -400 2 -> 0 2 2 0 -10 400 -400 2;
    # inf, -inf, +-2e30 and 2^23 + 1 saturate (the CPU's vectorised path
    # clamps before it rounds); -123.5 -> -124 (half to even)
    u = np.array([10, 12, 12, 10, 0, 255, 0, 12, 255, 0, 255, 0, 255, 0], np.uint8)
    i = np.array([-3, -1, -1, -3, -13, 127, -128, -1, 127, -128, 127, -128, 127, -127], np.int8)
    return model(nodes, [("x", x)], inits, [("u", TensorProto.UINT8), ("i", TensorProto.INT8)]), \
        [("x", x)], [("u", u), ("i", i)]


def hand_quantize_axis():
    x = np.array([[2.5, 2.5], [-1.5, 0.75]], np.float32)
    inits = [("s", np.array([1, 0.5], np.float32)), ("z", np.array([0, 1], np.int8))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=-1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=-1)]
    q = np.array([[2, 6], [-2, 3]], np.int8)
    y = np.array([[2, 2.5], [-2, 1]], np.float32)
    return model(nodes, [("x", x)], inits, [("q", TensorProto.INT8), ("y", TensorProto.FLOAT)]), \
        [("x", x)], [("q", q), ("y", y)]


def hand_qlinearconv():
    x = np.array([1, 3, 5, 250], np.uint8).reshape(1, 1, 1, 4)
    inits = [("xs", np.float32(0.5)), ("xz", np.uint8(0)),
             ("w", np.array([1, -1], np.int8).reshape(2, 1, 1, 1)),
             ("ws", np.array([1, 1], np.float32)), ("wz", np.array([0, 0], np.int8)),
             ("ys", np.float32(1)), ("yz", np.uint8(10)), ("b", np.array([0, 2], np.int32))]
    n = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                         ["y"])
    # channel 0: (1 3 5 250) * .5 = .5 1.5 2.5 125 -> 0 2 2 125, + 10
    # channel 1: (-1 -3 -5 -250 + 2) * .5 = .5 -.5 -1.5 -124 -> 0 0 -2 -124,
    #            + 10, and -114 saturates to 0
    y = np.array([10, 12, 12, 135, 10, 10, 8, 0], np.uint8).reshape(1, 2, 1, 4)
    return model([n], [("x", x)], inits, [("y", TensorProto.UINT8)], 10), [("x", x)], [("y", y)]


def hand_dynamic():
    x = np.array([-1, 1, 1, 2, 0, 0], np.float32).reshape(3, 2)
    nodes = []
    outs = []
    for r in range(3):
        nodes += [helper.make_node("Slice", ["x", f"b{r}", f"e{r}"], [f"x{r}"]),
                  helper.make_node("DynamicQuantizeLinear", [f"x{r}"], [f"y{r}", f"s{r}", f"z{r}"])]
        outs += [(f"y{r}", TensorProto.UINT8), (f"s{r}", TensorProto.FLOAT),
                 (f"z{r}", TensorProto.UINT8)]
    inits = [(f"b{r}", np.array([r], np.int64)) for r in range(3)] + \
            [(f"e{r}", np.array([r + 1], np.int64)) for r in range(3)]
    s = np.float32(2) / np.float32(255)  # 0.007843138 in float
    # [-1, 1]: zero point rint(127.49999) = 127, y = -127 + 127, 127 + 127
    # [1, 2]: range [0, 2], zero point 0, y = rint(127.49999), rint(254.99998)
    # [0, 0]: max == min: scale 1, zero point 0
    exp = [("y0", np.array([[0, 254]], np.uint8)), ("s0", s), ("z0", np.uint8(127)),
           ("y1", np.array([[127, 255]], np.uint8)), ("s1", s), ("z1", np.uint8(0)),
           ("y2", np.array([[0, 0]], np.uint8)), ("s2", np.float32(1)), ("z2", np.uint8(0))]
    return model(nodes, [("x", x)], inits, outs, 13), [("x", x)], exp


HAND = {"hand_quantize": hand_quantize, "hand_quantize_axis": hand_quantize_axis,
        "hand_qlinearconv": hand_qlinearconv, "hand_dynamic": hand_dynamic}


def main(argv):
    minfer = argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        cases = os.path.join(tmp, "cases")
        for name, make in CASES.items():
            m, ins = make()
            ins = [(n if a.dtype != np.int8 else n + "_f", a if a.dtype != np.int8
                    else a.astype(np.float32)) for n, a in ins]
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            case(cases, name, m, ins, run_ort(path, ins, os.path.join(tmp, name)))
        for name, make in HAND.items():
            m, ins, exp = make()
            case(cases, name, m, ins, exp)
        r = subprocess.run([minfer, "test", "--rtol", "0", "--atol", "0", "--providers", "cpu",
                            cases], capture_output=True, text=True)
        ccases = os.path.join(tmp, "contrib")
        for name, make in CONTRIB.items():
            m, ins = make()
            ins = [(n if a.dtype != np.int8 else n + "_f", a if a.dtype != np.int8
                    else a.astype(np.float32)) for n, a in ins]
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            case(ccases, name, m, ins, run_ort(path, ins, os.path.join(tmp, name)))
        rc = subprocess.run([minfer, "test", "--rtol", "0", "--atol", "0", "--plugin", "contrib",
                             "--providers", "cpu", ccases], capture_output=True, text=True)
        sys.stdout.write(rc.stdout)
        sys.stderr.write(rc.stderr)
        last = (rc.stdout.strip().splitlines() or [""])[-1]
        if rc.returncode != 0 or last != f"{len(CONTRIB)} passed, 0 failed, 0 skipped":
            sys.exit(f"quant_ort: contrib: '{last}'")
        # again with onednn first: it takes QLinearAdd of one shape
        # (providers/onednn/quant.c dnn_build_qadd), the plugin the rest
        rd = subprocess.run([minfer, "test", "--rtol", "0", "--atol", "0", "--plugin", "contrib",
                             "--providers", "onednn,cpu", ccases], capture_output=True, text=True)
        sys.stdout.write(rd.stdout)
        sys.stderr.write(rd.stderr)
        last = (rd.stdout.strip().splitlines() or [""])[-1]
        if rd.returncode != 0 or last != f"{len(CONTRIB)} passed, 0 failed, 0 skipped":
            sys.exit(f"quant_ort: contrib on onednn,cpu: '{last}'")
        for name, (make, want) in BAD.items():
            path = os.path.join(tmp, "bad_" + name + ".onnx")
            onnx.save(make(), path)
            rb = subprocess.run([minfer, "run", path, "--plugin", "contrib", "--providers", "cpu"],
                                capture_output=True, text=True)
            if rb.returncode != 1 or want not in rb.stderr:
                sys.exit(f"quant_ort: {name}: rc {rb.returncode}, want 1 and '{want}' in: "
                         f"{rb.stderr.strip()}")
        n_models = 0
        if len(argv) > 3:
            import quantize_dynamic
            mcases = os.path.join(tmp, "models")
            for name in argv[3:]:
                src = os.path.join(argv[2], name)
                m = quantize_dynamic.convert(onnx.load(os.path.join(src, "model.onnx")))
                init = {t.name for t in m.graph.initializer}
                feeds = [v.name for v in m.graph.input if v.name not in init]
                ins = []
                for k, f in enumerate(feeds):
                    t = onnx.TensorProto()
                    with open(os.path.join(src, "test_data_set_0", f"input_{k}.pb"), "rb") as fh:
                        t.ParseFromString(fh.read())
                    ins.append((f, numpy_helper.to_array(t)))
                path = os.path.join(tmp, name + "_dynamic.onnx")
                onnx.save(m, path)
                case(mcases, name + "_dynamic", m, ins, run_ort(path, ins, os.path.join(tmp, name)))
                n_models += 1
            rm = subprocess.run([minfer, "test", "--rtol", "1e-3", "--atol", "1e-4", "--providers",
                                 "cpu", mcases], capture_output=True, text=True)
            sys.stdout.write(rm.stdout)
            sys.stderr.write(rm.stderr)
            last = (rm.stdout.strip().splitlines() or [""])[-1]
            if rm.returncode != 0 or last != f"{n_models} passed, 0 failed, 0 skipped":
                sys.exit(f"quant_ort: models: '{last}'")
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        want = f"{len(CASES) + len(HAND)} passed, 0 failed, 0 skipped"
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode != 0 or last != want:
            sys.exit(f"quant_ort: '{last}', want '{want}'")


if __name__ == "__main__":
    main(sys.argv)
