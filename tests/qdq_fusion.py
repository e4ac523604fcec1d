#!/usr/bin/python3
"""The QDQ fusion (core/optimize/passes_quant.c, issue 36) against ONNX
Runtime, whose QDQ transformer makes the same integer ops: small QDQ graphs
(DequantizeLinear -> op -> QuantizeLinear, as quantize_static writes them)
that must fuse, each giving ORT's outputs exactly (`minfer test --atol 0`)
on cpu and on onednn,cpu, and graphs that break one condition of the
fusion, which must stay as they are (their outputs within one step of
ORT's, which runs them unfused too, in float).

Which ops the optimized graph holds is read from `minfer optimize` (no
providers to ask: every fusion that matches is made).

usage: qdq_fusion.py MINFER_CLI [PROVIDER_LIST...]  (default: cpu onednn,cpu)
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fp16_models import run_ort, case  # noqa: E402

rng = np.random.default_rng(36)
TT = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}


class G:
    """A QDQ graph under construction: float input x, float output y."""

    def __init__(self, shape):
        self.nodes, self.inits, self.n, self.extra = [], [], 0, []
        self.x = rng.standard_normal(shape).astype(np.float32)

    def name(self, base):
        self.n += 1
        return f"{base}{self.n}"

    def const(self, a, base="c"):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(a), n))
        return n

    def q(self, v, scale, zp, dt):
        s, z, o = self.const(np.float32(scale), "s"), self.const(dt(zp), "z"), self.name("q")
        self.nodes.append(helper.make_node("QuantizeLinear", [v, s, z], [o]))
        return o, s, z

    def dq(self, v, s, z, axis=None):
        o = self.name("dq")
        kw = {"axis": axis} if axis is not None else {}
        self.nodes.append(helper.make_node("DequantizeLinear", [v, s, z], [o], **kw))
        return o

    def qdq(self, v, scale, zp, dt):
        qv, s, z = self.q(v, scale, zp, dt)
        return self.dq(qv, s, z)

    def weight(self, shape, dt, per_channel, axis=0):
        lo, hi = (0, 256) if dt == np.uint8 else (-127, 128)
        w = rng.integers(lo, hi, size=shape).astype(dt)
        m = shape[axis]
        ws = (rng.uniform(0.002, 0.02, m) if per_channel else np.array(0.01)).astype(np.float32)
        wz = (np.full(m if per_channel else (), 128 if dt == np.uint8 else 0)).astype(dt)
        wn, sn, zn = self.const(w, "w"), self.const(ws, "ws"), self.const(wz, "wz")
        return self.dq(wn, sn, zn, axis if per_channel else None), ws

    def bias(self, xs, ws, m, scale_off=1.0):
        b = rng.integers(-3000, 3000, size=m).astype(np.int32)
        bs = (np.float32(xs) * ws * np.float32(scale_off)).astype(np.float32)
        if bs.ndim == 0:
            bs = np.full(m, bs, np.float32)
        return self.dq(self.const(b, "b"), self.const(bs, "bs"),
                       self.const(np.zeros(m, np.int32), "bz"), 0)

    def model(self, y, ys, yz, dt):
        qy, s, z = self.q(y, ys, yz, dt)
        self.nodes.append(helper.make_node("DequantizeLinear", [qy, s, z], ["y"]))
        g = helper.make_graph(self.nodes, "qdq",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.x.shape)],
                              [helper.make_tensor_value_info(v, TensorProto.FLOAT, None)
                               for v in ["y"] + self.extra],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m, ys, self.x


XS, XZ = 0.0173, 120


def conv(dt=np.uint8, wdt=np.int8, per_channel=False, axis=0, group=1, bias=True,
         scale_off=1.0, extra_reader=False, relu=False, yz=None, clip=None, ys=0.0731):
    g = G((1, 16, 24, 24))
    xz = XZ if dt == np.uint8 else -8
    x = g.qdq("x", XS, xz, dt)
    m = 32 if group == 1 else 16
    w, ws = g.weight((m, 16 // group, 3, 3), wdt, per_channel, axis)
    ins = [x, w] + ([g.bias(XS, ws, m, scale_off)] if bias else [])
    c = g.name("conv")
    g.nodes.append(helper.make_node("Conv", ins, [c], pads=[1, 1, 1, 1], group=group))
    if extra_reader:  # the Conv's output read by a Q and by a Relu, a graph output
        g.extra.append(g.name("r"))
        g.nodes.append(helper.make_node("Relu", [c], [g.extra[-1]]))
    if relu:  # redundant when y's zero point is the type's least value
        r = g.name("relu")
        g.nodes.append(helper.make_node("Relu", [c], [r]))
        c = r
    if clip:  # ReLU6 the Q makes redundant, or not
        r = g.name("clip")
        g.nodes.append(helper.make_node("Clip", [c, g.const(np.float32(clip[0]), "lo"),
                                                 g.const(np.float32(clip[1]), "hi")], [r]))
        c = r
    if yz is None:
        yz = 100 if dt == np.uint8 else 3
    return g.model(c, ys, yz, dt)


def binary(op, dt=np.uint8, bdt=None):
    g = G((1, 16, 64, 64))
    a = g.qdq("x", XS, 120 if dt == np.uint8 else 2, dt)
    bdt = bdt or dt
    s = g.name("abs")  # exact in both runtimes (a Sigmoid is not: MLAS's rounds otherwise)
    g.nodes.append(helper.make_node("Abs", ["x"], [s]))
    b = g.qdq(s, 0.0141, 7 if bdt == np.uint8 else -5, bdt)
    o = g.name(op)
    g.nodes.append(helper.make_node(op, [a, b], [o]))
    return g.model(o, 0.0219 if op == "Add" else 0.0093, 110 if dt == np.uint8 else 1, dt)


def matmul(dt=np.uint8, bdt=np.int8, per_column=False):
    g = G((2, 24, 64))
    a = g.qdq("x", XS, XZ if dt == np.uint8 else -8, dt)
    b, _ = g.weight((64, 48), bdt, per_column, 1)
    o = g.name("mm")
    g.nodes.append(helper.make_node("MatMul", [a, b], [o]))
    return g.model(o, 0.0513, 100 if dt == np.uint8 else 3, dt)


def gemm(dt=np.uint8, per_column=False, trans_b=1, bias=True):
    g = G((24, 64))
    a = g.qdq("x", XS, XZ if dt == np.uint8 else -8, dt)
    b, ws = g.weight((48, 64) if trans_b else (64, 48), np.int8, per_column, 0 if trans_b else 1)
    ins = [a, b] + ([g.bias(XS, ws, 48)] if bias else [])
    o = g.name("gemm")
    g.nodes.append(helper.make_node("Gemm", ins, [o], transB=trans_b))
    return g.model(o, 0.0513, 100 if dt == np.uint8 else 3, dt)


def gap(dt=np.uint8):
    g = G((4, 64, 7, 7))
    x = g.qdq("x", XS, XZ if dt == np.uint8 else 0, dt)
    o = g.name("gap")
    g.nodes.append(helper.make_node("GlobalAveragePool", [x], [o]))
    return g.model(o, 0.0021, 125 if dt == np.uint8 else 0, dt)


def movers(dt=np.uint8, same=True):
    """DQ -> MaxPool -> Q -> DQ -> Flatten -> Q -> DQ -> Reshape -> Q; the
    pairs dropped where DQ and Q have the same parameters (then the Flatten
    and the Reshape become one Reshape)."""
    g = G((1, 3, 8, 8))
    qx, s, z = g.q("x", XS, XZ, dt)
    p = g.name("pool")
    g.nodes.append(helper.make_node("MaxPool", [g.dq(qx, s, z)], [p], kernel_shape=[2, 2],
                                    strides=[2, 2]))
    qp, s2, z2 = g.q(p, XS if same else XS * 1.5, XZ, dt)
    f = g.name("flat")
    g.nodes.append(helper.make_node("Flatten", [g.dq(qp, s2, z2)], [f], axis=1))
    qf, s3, z3 = g.q(f, XS if same else XS * 1.5, XZ, dt)
    r = g.name("reshape")
    g.nodes.append(helper.make_node("Reshape", [g.dq(qf, s3, z3), g.const(np.array([3, 16],
                                                                         np.int64), "shape")],
                                    [r]))
    return g.model(r, XS if same else XS * 1.5, XZ, dt)


# name: (make, ops the optimized graph must hold, ops it must not)
FUSE = {
    "conv_u8s8": (lambda: conv(), {"QLinearConv"}, {"Conv"}),
    "conv_u8s8_perchannel_nobias": (lambda: conv(per_channel=True, bias=False),
                                    {"QLinearConv"}, {"Conv"}),
    "conv_u8s8_perchannel_depthwise": (lambda: conv(per_channel=True, group=4),
                                       {"QLinearConv"}, {"Conv"}),
    "conv_u8u8": (lambda: conv(wdt=np.uint8), {"QLinearConv"}, {"Conv"}),
    "conv_relu_u8": (lambda: conv(relu=True, yz=0), {"QLinearConv"}, {"Conv", "Relu"}),
    "conv_relu_s8": (lambda: conv(np.int8, relu=True, yz=-128), {"QLinearConv"},
                     {"Conv", "Relu"}),
    "conv_relu6_u8": (lambda: conv(clip=(0, 6), ys=np.float32(6) / 255, yz=0), {"QLinearConv"},
                      {"Conv", "Clip"}),
    "conv_s8s8_perchannel": (lambda: conv(np.int8, per_channel=True), {"QLinearConv"}, {"Conv"}),
    "matmul_u8s8": (lambda: matmul(), {"QLinearMatMul"}, {"MatMul"}),
    "matmul_u8s8_percolumn": (lambda: matmul(per_column=True), {"QLinearMatMul"}, {"MatMul"}),
    "matmul_s8s8_percolumn": (lambda: matmul(np.int8, per_column=True), {"QLinearMatMul"},
                              {"MatMul"}),
    "gemm_u8s8_transb": (lambda: gemm(), {"QGemm"}, {"Gemm"}),
    "gemm_u8s8_percolumn_transb": (lambda: gemm(per_column=True), {"QGemm"}, {"Gemm"}),
    "gemm_s8s8_percolumn": (lambda: gemm(np.int8, True, 0), {"QGemm"}, {"Gemm"}),
    "gemm_u8s8_nobias": (lambda: gemm(bias=False), {"QGemm"}, {"Gemm"}),
    "add_u8": (lambda: binary("Add"), {"QLinearAdd"}, {"Add"}),
    "add_s8": (lambda: binary("Add", np.int8), {"QLinearAdd"}, {"Add"}),
    "mul_u8": (lambda: binary("Mul"), {"QLinearMul"}, {"Mul"}),
    "gap_u8": (lambda: gap(), {"QLinearGlobalAveragePool"}, {"GlobalAveragePool"}),
    "gap_s8": (lambda: gap(np.int8), {"QLinearGlobalAveragePool"}, {"GlobalAveragePool"}),
    "movers_u8": (lambda: movers(), {"MaxPool", "Reshape"}, set()),
}
# Conditions broken: nothing fuses; ORT keeps these unfused too. NO_ORT:
# conditions ORT does not check (it fuses weights per channel along axis 1
# and then fails: 'QLinearConv : filter scale shape invalid'; it takes a
# bias of another scale as if it were x_scale * w_scale), structure only.
KEEP = {
    "conv_s8u8": (lambda: conv(np.int8, np.uint8), {"Conv"}, {"QLinearConv"}),
    "conv_two_readers": (lambda: conv(extra_reader=True), {"Conv"}, {"QLinearConv"}),
    "conv_relu_not_redundant": (lambda: conv(relu=True, yz=3), {"FusedConv"}, {"QLinearConv"}),
    "conv_clip_not_redundant": (lambda: conv(clip=(0, 3), ys=np.float32(6) / 255, yz=0),
                                {"FusedConv"}, {"QLinearConv"}),
    "add_u8_s8": (lambda: binary("Add", np.uint8, np.int8), {"Add"}, {"QLinearAdd"}),
    "matmul_s8u8": (lambda: matmul(np.int8, np.uint8), {"MatMul"}, {"QLinearMatMul"}),
    "movers_other_scales": (lambda: movers(same=False), {"MaxPool"}, set()),
}
NO_ORT = {
    "conv_bias_scale_off": (lambda: conv(scale_off=1.01), {"Conv"}, {"QLinearConv"}),
    "conv_weights_axis1": (lambda: conv(per_channel=True, axis=1), {"Conv"}, {"QLinearConv"}),
}


def ops_after(minfer, path, tmp):
    out = os.path.join(tmp, "opt.onnx")
    r = subprocess.run([minfer, "optimize", path, "-o", out, "--force"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"qdq_fusion: minfer optimize {path}: {r.stderr.strip()}")
    m = onnx.load(out)
    os.remove(out)
    return [n.op_type for n in m.graph.node]


def main(argv):
    minfer = argv[1]
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        roots = {"exact": os.path.join(tmp, "exact"), "near": os.path.join(tmp, "near")}
        steps = []
        for table, root in ((FUSE, "exact"), (KEEP, "near"), (NO_ORT, None)):
            for name, (make, want, never) in table.items():
                m, step, x = make()
                path = os.path.join(tmp, name + ".onnx")
                onnx.save(m, path)
                ops = ops_after(minfer, path, tmp)
                if not want <= set(ops) or set(ops) & never:
                    bad.append(f"{name}: optimized ops {ops}, want {sorted(want)} and none of "
                               f"{sorted(never)}")
                if table is FUSE and ops.count("DequantizeLinear") != 1:
                    bad.append(f"{name}: DequantizeLinear left before the last: {ops}")
                if root:
                    ins = [("x", x)]
                    case(roots[root], name, m, ins, run_ort(path, ins, os.path.join(tmp, name)))
                    steps.append(step)
        checks = [("exact", "0", len(FUSE)), ("near", repr(max(steps) * 1.0001), len(KEEP))]
        for providers in argv[2:] or ["cpu", "onednn,cpu"]:
            for root, atol, n in checks:
                r = subprocess.run([minfer, "test", "--rtol", "0", "--atol", atol, "--providers",
                                    providers, roots[root]], capture_output=True, text=True)
                last = (r.stdout.strip().splitlines() or [""])[-1]
                if r.returncode != 0 or last != f"{n} passed, 0 failed, 0 skipped":
                    sys.stdout.write(r.stdout)
                    bad.append(f"{root} on {providers}: '{last}'")
    if bad:
        sys.exit("qdq_fusion: " + "; ".join(bad))
    print(f"qdq_fusion: {len(FUSE)} fused exactly as ONNX Runtime, {len(KEEP) + len(NO_ORT)} "
          f"left unfused, on {' and '.join(argv[2:] or ['cpu', 'onednn,cpu'])}")


if __name__ == "__main__":
    main(sys.argv)
