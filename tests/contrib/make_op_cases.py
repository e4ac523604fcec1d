#!/usr/bin/python3
"""Test cases for every plugins/contrib op: the op against a composition of
standard ONNX ops.

usage: make_op_cases.py OUT_DIR

Writes OUT_DIR/<case>/model.onnx (the contrib op), composition.onnx (the same
function in standard ONNX ops, which minfer's CPU provider runs to make the
reference) and test_data_set_0/input_K.pb (random inputs, fixed seed).
contrib_ops.sh runs the composition into output_K.pb and then `minfer test
--plugin contrib` on the cases. NCHWc ops are checked inside a ReorderInput
-> op -> ReorderOutput sandwich against the plain op; ReorderInput and
ReorderOutput themselves against Pad / Reshape / Transpose. The block size
is the one ORT's MLAS and the plugin use on this CPU (16 with AVX-512F).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as H, numpy_helper as NH

rng = np.random.default_rng(7)
OPSET = [H.make_opsetid("", 17), H.make_opsetid("com.microsoft", 1),
         H.make_opsetid("com.microsoft.nchwc", 1)]
BLOCK = 16 if "avx512f" in open("/proc/cpuinfo").read() else 8
F, I32, I64 = TP.FLOAT, TP.INT32, TP.INT64


def rnd(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def vi(name, arr):
    t = {np.float32: F, np.int32: I32, np.int64: I64, np.uint8: TP.UINT8}[arr.dtype.type]
    return H.make_tensor_value_info(name, t, arr.shape)


def const(name, arr):
    return NH.from_array(np.asarray(arr), name)


class Case:
    """Inputs (name -> array), initializers shared by both graphs."""

    def __init__(self, name, inputs, inits=None, opset=17):
        self.name, self.inputs, self.inits = name, inputs, dict(inits or {})
        self.opset = opset

    def graph(self, nodes, outputs, extra_inits=None, opset=17):
        inits = [const(k, v) for k, v in {**self.inits, **(extra_inits or {})}.items()]
        g = H.make_graph(nodes, self.name, [vi(k, v) for k, v in self.inputs.items()],
                         [H.make_tensor_value_info(o, F if t is None else t, None)
                          for o, t in outputs], inits)
        m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)] + OPSET[1:],
                         producer_name="make_op_cases")
        m.ir_version = 8
        return m

    def write(self, out, model_nodes, comp_nodes, outputs, model_inits=None, comp_inits=None):
        d = os.path.join(out, self.name)
        ds = os.path.join(d, "test_data_set_0")
        os.makedirs(ds, exist_ok=True)
        onnx.save(self.graph(model_nodes, outputs, model_inits, self.opset),
                  os.path.join(d, "model.onnx"))
        onnx.save(self.graph(comp_nodes, outputs, comp_inits), os.path.join(d, "composition.onnx"))
        if any(n.domain in ("", "ai.onnx") and (n.op_type == "SimplifiedLayerNormalization" or
                                               (n.op_type == "LayerNormalization" and self.opset < 17))
               for n in model_nodes):
            open(os.path.join(d, "needs_default_domain"), "w").close()
        for k, (n, a) in enumerate(self.inputs.items()):
            with open(os.path.join(ds, f"input_{k}.pb"), "wb") as f:
                f.write(NH.from_array(a, n).SerializeToString())


N = H.make_node
MS = "com.microsoft"
NC = "com.microsoft.nchwc"


def gelu_nodes(x, y, p):
    return [N("Div", [x, "sqrt2"], [p + "d"]), N("Erf", [p + "d"], [p + "e"]),
            N("Add", [p + "e", "one"], [p + "a"]), N("Mul", [x, p + "a"], [p + "m"]),
            N("Mul", [p + "m", "half"], [y])]


CONSTS = {"sqrt2": np.float32(np.sqrt(2)), "one": np.float32(1), "half": np.float32(0.5),
          "two": np.float32(2)}


def activations(out):
    c = Case("gelu", {"x": rnd(2, 3, 8)}, CONSTS)
    c.write(out, [N("Gelu", ["x"], ["y"], domain=MS)], gelu_nodes("x", "y", "g"), [("y", None)])

    c = Case("bias_gelu", {"x": rnd(2, 3, 8), "b": rnd(8)}, CONSTS)
    c.write(out, [N("BiasGelu", ["x", "b"], ["y"], domain=MS)],
            [N("Add", ["x", "b"], ["s"])] + gelu_nodes("s", "y", "g"), [("y", None)])

    k = {"k0": np.float32(np.sqrt(2 / np.pi)), "k1": np.float32(0.044715), **CONSTS}
    c = Case("fast_gelu", {"x": rnd(2, 3, 8, scale=2), "b": rnd(8)}, k)
    c.write(out, [N("FastGelu", ["x", "b"], ["y"], domain=MS)],
            [N("Add", ["x", "b"], ["s"]), N("Mul", ["s", "s"], ["s2"]), N("Mul", ["s2", "s"], ["s3"]),
             N("Mul", ["s3", "k1"], ["t"]), N("Add", ["s", "t"], ["u"]), N("Mul", ["u", "k0"], ["v"]),
             N("Tanh", ["v"], ["th"]), N("Add", ["th", "one"], ["w"]), N("Mul", ["s", "w"], ["z"]),
             N("Mul", ["z", "half"], ["y"])], [("y", None)])
    c = Case("fast_gelu_nobias", {"x": rnd(3, 5, scale=2)}, k)
    c.write(out, [N("FastGelu", ["x"], ["y"], domain=MS)],
            [N("Mul", ["x", "x"], ["s2"]), N("Mul", ["s2", "x"], ["s3"]),
             N("Mul", ["s3", "k1"], ["t"]), N("Add", ["x", "t"], ["u"]), N("Mul", ["u", "k0"], ["v"]),
             N("Tanh", ["v"], ["th"]), N("Add", ["th", "one"], ["w"]), N("Mul", ["x", "w"], ["z"]),
             N("Mul", ["z", "half"], ["y"])], [("y", None)])

    c = Case("quick_gelu", {"x": rnd(4, 4100, scale=3)}, {"alpha": np.float32(1.5)})
    c.write(out, [N("QuickGelu", ["x"], ["y"], domain=MS, alpha=1.5)],
            [N("Mul", ["x", "alpha"], ["ax"]), N("Sigmoid", ["ax"], ["s"]), N("Mul", ["x", "s"], ["y"])],
            [("y", None)])

    c = Case("bias_add", {"x": rnd(2, 3, 8), "b": rnd(8), "s": rnd(2, 3, 8)})
    c.write(out, [N("BiasAdd", ["x", "b", "s"], ["y"], domain=MS)],
            [N("Add", ["x", "b"], ["t"]), N("Add", ["t", "s"], ["y"])], [("y", None)])


def act_nodes(kind, x, y, params):
    if kind == "Relu":
        return [N("Relu", [x], [y])]
    if kind == "LeakyRelu":
        return [N("LeakyRelu", [x], [y], alpha=params[0])]
    if kind == "Clip":
        return [N("Clip", [x, "clip_lo", "clip_hi"], [y])]
    if kind == "HardSigmoid":
        return [N("HardSigmoid", [x], [y], alpha=params[0], beta=params[1])]
    return [N(kind, [x], [y])]


def fused(out):
    for name, xs, ws, group, act, params, z, attrs in [
        ("fused_conv_relu_sum", (2, 4, 9, 9), (6, 2, 3, 3), 2, "Relu", [], True,
         dict(pads=[1, 0, 1, 2], strides=[2, 1])),
        ("fused_conv_dw_clip", (1, 8, 10, 10), (8, 1, 3, 3), 8, "Clip", [0.0, 0.5], False,
         dict(pads=[1, 1, 1, 1])),
        ("fused_conv_1x1_hardsigmoid", (1, 16, 5, 7), (20, 16, 1, 1), 1, "HardSigmoid", [0.3, 0.4],
         False, {}),
        ("fused_conv_leaky_same", (1, 3, 11, 8), (5, 3, 3, 2), 1, "LeakyRelu", [0.2], False,
         dict(auto_pad="SAME_UPPER")),
        ("fused_conv1d_tanh", (2, 3, 12), (4, 3, 3), 1, "Tanh", [], False, dict(strides=[2])),
    ]:
        x = rnd(*xs)
        w = rnd(*ws, scale=0.5)
        b = rnd(ws[0])
        ins = {"x": x}
        cin = ["x", "w", "b"]
        conv_out = [n for n in xs]
        c = Case(name, ins, {"w": w, "b": b, "clip_lo": np.float32(params[0] if params else 0),
                             "clip_hi": np.float32(params[1] if len(params) > 1 else 0)})
        if z:
            # Z: the conv's output shape, computed with the composition's own Conv.
            import math
            oh = (xs[2] + 2 - 3) // 2 + 1
            ow = (xs[3] + 2 - 3) // 1 + 1
            c.inputs["z"] = rnd(xs[0], ws[0], oh, ow)
            cin = ["x", "w", "b", "z"]
        del conv_out
        mnode = N("FusedConv", cin, ["y"], domain=MS, group=group, activation=act,
                  **({"activation_params": params} if params else {}), **attrs)
        comp = [N("Conv", ["x", "w", "b"], ["c"], group=group, **attrs)]
        if z:
            comp.append(N("Add", ["c", "z"], ["cz"]))
        comp += act_nodes(act, "cz" if z else "c", "y", params)
        c.write(out, [mnode], comp, [("y", None)])

    c = Case("fused_gemm_leaky", {"a": rnd(5, 7)}, {"bm": rnd(6, 7), "cm": rnd(1, 6)})
    c.write(out, [N("FusedGemm", ["a", "bm", "cm"], ["y"], domain=MS, transB=1, alpha=0.7, beta=0.3,
                    activation="LeakyRelu", activation_alpha=0.15)],
            [N("Gemm", ["a", "bm", "cm"], ["g"], transB=1, alpha=0.7, beta=0.3),
             N("LeakyRelu", ["g"], ["y"], alpha=0.15)], [("y", None)])
    c = Case("fused_gemm_relu_big", {"a": rnd(40, 300)}, {"bm": rnd(300, 130, scale=0.1),
                                                          "cm": rnd(130)})
    c.write(out, [N("FusedGemm", ["a", "bm", "cm"], ["y"], domain=MS, activation="Relu")],
            [N("Gemm", ["a", "bm", "cm"], ["g"]), N("Relu", ["g"], ["y"])], [("y", None)])

    c = Case("fused_matmul_trans", {"a": rnd(2, 3, 5, 4), "b": rnd(3, 6, 5)}, {"al": np.float32(0.5)})
    c.write(out, [N("FusedMatMul", ["a", "b"], ["y"], domain=MS, alpha=0.5, transA=1, transB=1)],
            [N("Transpose", ["a"], ["at"], perm=[0, 1, 3, 2]), N("Transpose", ["b"], ["bt"], perm=[0, 2, 1]),
             N("MatMul", ["at", "bt"], ["m"]), N("Mul", ["m", "al"], ["y"])], [("y", None)])
    c = Case("fused_matmul_transbatch", {"a": rnd(3, 2, 4, 5), "b": rnd(5, 2, 4, 6)},
             {"al": np.float32(1.0)})
    # transBatchA moves dim 0 before the last: (2, 4, 3, 5); transBatchB: (2, 4, 5, 6).
    c.write(out, [N("FusedMatMul", ["a", "b"], ["y"], domain=MS, transBatchA=1, transBatchB=1)],
            [N("Transpose", ["a"], ["at"], perm=[1, 2, 0, 3]), N("Transpose", ["b"], ["bt"], perm=[1, 2, 0, 3]),
             N("MatMul", ["at", "bt"], ["y"])], [("y", None)])
    c = Case("fused_matmul_vec", {"a": rnd(7), "b": rnd(2, 7, 3)}, {"al": np.float32(2.0)})
    c.write(out, [N("FusedMatMul", ["a", "b"], ["y"], domain=MS, alpha=2.0)],
            [N("MatMul", ["a", "b"], ["m"]), N("Mul", ["m", "al"], ["y"])], [("y", None)])


def rms_nodes(x, g, y, p, eps):
    return [N("Mul", [x, x], [p + "sq"]), N("ReduceMean", [p + "sq"], [p + "m"], axes=[-1]),
            N("Add", [p + "m", p + "eps"], [p + "a"]), N("Sqrt", [p + "a"], [p + "s"]),
            N("Div", [x, p + "s"], [p + "d"]), N("Mul", [p + "d", g], [y])], {p + "eps": np.float32(eps)}


def norms(out):
    c = Case("skip_layer_norm", {"x": rnd(2, 5, 16), "s": rnd(2, 5, 16)},
             {"g": rnd(16), "be": rnd(16), "bi": rnd(16)})
    c.write(out, [N("SkipLayerNormalization", ["x", "s", "g", "be", "bi"], ["y", "mean", "inv", "sum"],
                    domain=MS, epsilon=1e-5)],
            [N("Add", ["x", "s"], ["t"]), N("Add", ["t", "bi"], ["sum"]),
             N("LayerNormalization", ["sum", "g", "be"], ["y", "mean", "inv"], epsilon=1e-5)],
            [("y", None), ("mean", None), ("inv", None), ("sum", None)])
    c = Case("skip_layer_norm_bcast", {"x": rnd(3, 4, 8), "s": rnd(4, 8)}, {"g": rnd(8)})
    c.write(out, [N("SkipLayerNormalization", ["x", "s", "g"], ["y"], domain=MS, epsilon=1e-6)],
            [N("Add", ["x", "s"], ["t"]),
             N("LayerNormalization", ["t", "g"], ["y"], epsilon=1e-6)], [("y", None)])

    nodes, e = rms_nodes("x", "g", "y", "r", 1e-6)
    c = Case("simplified_layer_norm", {"x": rnd(2, 5, 16)}, {"g": rnd(16), **e})
    c.write(out, [N("SimplifiedLayerNormalization", ["x", "g"], ["y"], epsilon=1e-6, axis=-1)],
            nodes, [("y", None)])
    c = Case("simplified_layer_norm_2d", {"x": rnd(7, 33)}, {"g": rnd(33), **e})
    c.write(out, [N("SimplifiedLayerNormalization", ["x", "g"], ["y"], epsilon=1e-6)],
            nodes, [("y", None)])

    # ORT's own default-domain LayerNormalization, in a model of opset 13 (ONNX has one
    # only from 17, which the composition uses).
    c = Case("layer_norm_opset13", {"x": rnd(3, 4, 10)}, {"g": rnd(4, 10), "be": rnd(4, 10)}, opset=13)
    c.write(out, [N("LayerNormalization", ["x", "g", "be"], ["y", "mean", "inv"], axis=1, epsilon=1e-5)],
            [N("LayerNormalization", ["x", "g", "be"], ["y", "mean", "inv"], axis=1, epsilon=1e-5)],
            [("y", None), ("mean", None), ("inv", None)])

    nodes, e = rms_nodes("sum", "g", "y", "r", 1e-5)
    c = Case("skip_simplified_layer_norm", {"x": rnd(2, 5, 16), "s": rnd(2, 5, 16)},
             {"g": rnd(16), "bi": rnd(16), **e})
    c.write(out, [N("SkipSimplifiedLayerNormalization", ["x", "s", "g", "bi"], ["y", "", "", "sum"],
                    domain=MS, epsilon=1e-5)],
            [N("Add", ["x", "s"], ["t"]), N("Add", ["t", "bi"], ["sum"])] + nodes,
            [("y", None), ("sum", None)])

    B, S, Hd, V = 2, 6, 16, 20
    ids = rng.integers(0, V, (B, S)).astype(np.int32)
    seg = rng.integers(0, 2, (B, S)).astype(np.int32)
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2], dtype=np.int32)
    c = Case("embed_layer_norm", {"ids": ids, "seg": seg, "mask": mask},
             {"we": rnd(V, Hd), "pe": rnd(S + 2, Hd), "se": rnd(2, Hd), "g": rnd(Hd), "be": rnd(Hd),
              "pos": np.arange(S, dtype=np.int64), "ax1": np.array([1], dtype=np.int64)})
    c.write(out, [N("EmbedLayerNormalization", ["ids", "seg", "we", "pe", "se", "g", "be", "mask"],
                    ["y", "mi", "esum"], domain=MS, epsilon=1e-12)],
            [N("Gather", ["we", "ids"], ["w"]), N("Gather", ["pe", "pos"], ["p"]),
             N("Gather", ["se", "seg"], ["s"]), N("Add", ["w", "p"], ["t"]), N("Add", ["t", "s"], ["esum"]),
             N("LayerNormalization", ["esum", "g", "be"], ["y"], epsilon=1e-12),
             N("ReduceSum", ["mask", "ax1"], ["mi"], keepdims=0)],
            [("y", None), ("mi", I32), ("esum", None)])


def attn_comp(q, k, v, B, S, L, Nh, Hd, Hv, maskadd, causal, p):
    """Standard-op attention on (B, S, Nh*Hd) q, (B, L, ..) k, v; maskadd (B, 1, S|1, L) or None."""
    nodes = [N("Reshape", [q, p + "qs"], [p + "q4"]), N("Transpose", [p + "q4"], [p + "qt"], perm=[0, 2, 1, 3]),
             N("Reshape", [k, p + "ks"], [p + "k4"]), N("Transpose", [p + "k4"], [p + "kt"], perm=[0, 2, 3, 1]),
             N("Reshape", [v, p + "vs"], [p + "v4"]), N("Transpose", [p + "v4"], [p + "vt"], perm=[0, 2, 1, 3]),
             N("MatMul", [p + "qt", p + "kt"], [p + "sc"]), N("Mul", [p + "sc", p + "scale"], [p + "ss"])]
    cur = p + "ss"
    inits = {p + "qs": np.array([B, S, Nh, Hd], np.int64), p + "ks": np.array([B, L, Nh, Hd], np.int64),
             p + "vs": np.array([B, L, Nh, Hv], np.int64), p + "scale": np.float32(1 / np.sqrt(Hd)),
             p + "os": np.array([B, S, Nh * Hv], np.int64)}
    if maskadd is not None:
        nodes.append(N("Add", [cur, maskadd], [p + "ma"]))
        cur = p + "ma"
    if causal:
        inits[p + "causal"] = np.triu(np.full((S, L), -10000.0, np.float32), 1 + L - S)
        nodes.append(N("Add", [cur, p + "causal"], [p + "ca"]))
        cur = p + "ca"
    nodes += [N("Softmax", [cur], [p + "pr"], axis=-1), N("MatMul", [p + "pr", p + "vt"], [p + "o4"]),
              N("Transpose", [p + "o4"], [p + "ot"], perm=[0, 2, 1, 3]),
              N("Reshape", [p + "ot", p + "os"], ["y"])]
    return nodes, inits


def attention(out):
    B, S, Din, Nh, Hd = 2, 5, 12, 2, 4
    W = rnd(Din, 3 * Nh * Hd, scale=0.4)
    bias = rnd(3 * Nh * Hd)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    for name, m, causal in [("attention_mask2d", mask, 0), ("attention_lengths_causal", np.array([5, 3], np.int32), 1)]:
        ins = {"x": rnd(B, S, Din), "m": m}
        D = Nh * Hd
        comp = [N("MatMul", ["x", "w"], ["xw"]), N("Add", ["xw", "bias"], ["qkv"]),
                N("Split", ["qkv"], ["q", "k", "v"], axis=2)]
        if m.ndim == 2:
            comp += [N("Cast", ["m"], ["mf"], to=F)]
        else:
            comp += [N("Less", ["rng", "m2"], ["lt"]), N("Cast", ["lt"], ["mf"], to=F)]
        comp += [N("Sub", ["onef", "mf"], ["inv"]), N("Mul", ["inv", "filt"], ["madd2"]),
                 N("Reshape", ["madd2", "ms"], ["madd"])]
        an, ai = attn_comp("q", "k", "v", B, S, S, Nh, Hd, Hd, "madd", causal, "a")
        inits = {"w": W, "bias": bias, "onef": np.float32(1), "filt": np.float32(-10000),
                 "ms": np.array([B, 1, 1, S], np.int64), **ai}
        if m.ndim == 1:
            inits["rng"] = np.arange(S, dtype=np.int32)[None, :]
            comp.insert(3, N("Unsqueeze", ["m", "ax1"], ["m2"]))
            inits["ax1"] = np.array([1], np.int64)
        c = Case(name, ins, inits)
        c.write(out, [N("Attention", ["x", "w", "bias", "m"], ["y"], domain=MS, num_heads=Nh,
                        unidirectional=causal)], comp + an, [("y", None)])

    L = 7
    ins = {"q": rnd(B, S, Nh * Hd), "k": rnd(B, L, Nh * Hd), "v": rnd(B, L, Nh * 3),
           "kpm": np.array([[1] * 7, [1] * 5 + [0] * 2], np.int32)}
    bias = rnd(2 * Nh * Hd + Nh * 3)
    D = Nh * Hd
    comp = [N("Add", ["q", "bq"], ["qb"]), N("Add", ["k", "bk"], ["kb"]), N("Add", ["v", "bv"], ["vb"]),
            N("Cast", ["kpm"], ["mf"], to=F), N("Sub", ["onef", "mf"], ["inv"]),
            N("Mul", ["inv", "filt"], ["madd2"]), N("Reshape", ["madd2", "ms"], ["madd"])]
    an, ai = attn_comp("qb", "kb", "vb", B, S, L, Nh, Hd, 3, "madd", 0, "a")
    c = Case("multi_head_attention", ins,
             {"bias": bias, "bq": bias[:D], "bk": bias[D:2 * D], "bv": bias[2 * D:], "onef": np.float32(1),
              "filt": np.float32(-10000), "ms": np.array([B, 1, 1, L], np.int64), **ai})
    c.write(out, [N("MultiHeadAttention", ["q", "k", "v", "bias", "kpm"], ["y"], domain=MS, num_heads=Nh)],
            comp + an, [("y", None)])


def rotary(out):
    B, S, Nh, Hd, P = 2, 4, 2, 8, 10
    half = Hd // 2
    cos, sin = rnd(P, half), rnd(P, half)
    pid = rng.integers(0, P, (B, S)).astype(np.int64)
    for inter in (0, 1):
        ins = {"x": rnd(B, S, Nh * Hd), "pid": pid}
        comp = [N("Gather", ["cos", "pid"], ["c3"]), N("Gather", ["sin", "pid"], ["s3"]),
                N("Unsqueeze", ["c3", "ax2"], ["c"]), N("Unsqueeze", ["s3", "ax2"], ["s"])]
        if inter:
            comp += [N("Reshape", ["x", "sh5"], ["x5"]),
                     N("Split", ["x5"], ["x1e", "x2e"], axis=4),
                     N("Squeeze", ["x1e", "ax4"], ["x1"]), N("Squeeze", ["x2e", "ax4"], ["x2"])]
        else:
            comp += [N("Reshape", ["x", "sh4"], ["x4"]), N("Split", ["x4"], ["x1", "x2"], axis=3)]
        comp += [N("Mul", ["x1", "c"], ["a1"]), N("Mul", ["x2", "s"], ["a2"]), N("Sub", ["a1", "a2"], ["o1"]),
                 N("Mul", ["x2", "c"], ["b1"]), N("Mul", ["x1", "s"], ["b2"]), N("Add", ["b1", "b2"], ["o2"])]
        if inter:
            comp += [N("Unsqueeze", ["o1", "ax4"], ["o1e"]), N("Unsqueeze", ["o2", "ax4"], ["o2e"]),
                     N("Concat", ["o1e", "o2e"], ["oc"], axis=4)]
        else:
            comp += [N("Concat", ["o1", "o2"], ["oc"], axis=3)]
        comp += [N("Reshape", ["oc", "sh3"], ["y"])]
        c = Case("rotary_embedding" + ("_interleaved" if inter else ""), ins,
                 {"cos": cos, "sin": sin, "ax2": np.array([2], np.int64), "ax4": np.array([4], np.int64),
                  "sh4": np.array([B, S, Nh, Hd], np.int64), "sh5": np.array([B, S, Nh, half, 2], np.int64),
                  "sh3": np.array([B, S, Nh * Hd], np.int64)})
        c.write(out, [N("RotaryEmbedding", ["x", "pid", "cos", "sin"], ["y"], domain=MS,
                        interleaved=inter, num_heads=Nh)], comp, [("y", None)])


def nbits(out):
    # Rows of A: up to 8 read the packed weights directly, more dequantize panels.
    for name, K, Nn, bits, bs, zp_kind, rows, gidx in [
            ("matmul_nbits_4", 70, 12, 4, 32, "packed", (3, 2), False),
            ("matmul_nbits_4_nozp", 64, 9, 4, 16, None, (3, 2), False),
            ("matmul_nbits_4_rows", 96, 70, 4, 32, "packed", (4, 5), False),
            ("matmul_nbits_2", 48, 6, 2, 16, "packed", (1, 2), False),
            ("matmul_nbits_8_fzp", 40, 5, 8, 16, "float", (3, 2), False),
            ("matmul_nbits_8_fzp_rows", 40, 5, 8, 16, "float", (12, 2), False)]:
        kb = (K + bs - 1) // bs
        q = rng.integers(0, 1 << bits, (Nn, kb * bs)).astype(np.uint8)
        scales = (rng.random((Nn, kb)) * 0.1 + 0.01).astype(np.float32)
        per = 8 // bits
        packed = np.zeros((Nn, kb, bs * bits // 8), np.uint8)
        for i in range(bs):
            packed[:, :, i // per] |= (q.reshape(Nn, kb, bs)[:, :, i] << ((i % per) * bits)).astype(np.uint8)
        zps = rng.integers(0, 1 << bits, (Nn, kb)).astype(np.uint8)
        if zp_kind == "packed":
            zrow = (kb * bits + 7) // 8
            zpk = np.zeros((Nn, zrow), np.uint8)
            for j in range(kb):
                zpk[:, j // per] |= (zps[:, j] << ((j % per) * bits)).astype(np.uint8)
            zf = zps.astype(np.float32)
        elif zp_kind == "float":
            zpk = (zps.astype(np.float32) + 0.25)
            zf = zpk
        else:
            zf = np.full((Nn, kb), 1 << (bits - 1), np.float32)
        if gidx:
            g = rng.integers(0, kb, kb * bs).astype(np.int32)
            w = (q.astype(np.float32) - zf[:, g]) * scales[:, g]
        else:
            w = (q.astype(np.float32) - np.repeat(zf, bs, axis=1)) * np.repeat(scales, bs, axis=1)
        w = w[:, :K]
        bias = rnd(Nn)
        inits = {"B": packed, "sc": scales.reshape(-1), "bias": bias}
        ins = ["a", "B", "sc", "zp" if zp_kind else "", "gi" if gidx else "", "bias"]
        if zp_kind:
            inits["zp"] = zpk.reshape(-1) if zp_kind == "float" else zpk
        if gidx:
            inits["gi"] = g[:K]
        c = Case(name, {"a": rnd(*rows, K)}, {"bias": bias})
        c.write(out, [N("MatMulNBits", ins, ["y"], domain=MS, K=K, N=Nn, bits=bits, block_size=bs,
                        accuracy_level=0)],
                [N("MatMul", ["a", "wt"], ["m"]), N("Add", ["m", "bias"], ["y"])], [("y", None)],
                model_inits=inits, comp_inits={"wt": np.ascontiguousarray(w.T)})


def reorder_filter(w, group):
    """ORT's NCHWc filter layouts (nchwc.c's header) for weights w (O, I, kh, kw)."""
    O, I, KH, KW = w.shape
    Bk = BLOCK
    Op = (O + Bk - 1) // Bk * Bk
    wp = np.zeros((Op, I, KH, KW), np.float32)
    wp[:O] = w
    if (group == 1 and I < Bk) or (group > 1 and I == 1):
        # [Op/B][I][kh][kw][Bo]
        return wp.reshape(Op // Bk, Bk, I, KH, KW).transpose(0, 2, 3, 4, 1).reshape(Op, I, KH, KW).copy()
    # [Op/B][I/B][kh][kw][Bi][Bo]
    return (wp.reshape(Op // Bk, Bk, I // Bk, Bk, KH, KW).transpose(0, 2, 4, 5, 3, 1)
            .reshape(Op, I, KH, KW).copy())


def nchwc(out):
    Bk = BLOCK
    # ReorderInput / ReorderOutput against Pad + Reshape + Transpose.
    C = 12 if Bk == 16 else 4
    Cp = (C + Bk - 1) // Bk * Bk
    c = Case("nchwc_reorder_input", {"x": rnd(2, C, 3, 4)},
             {"pads": np.array([0, 0, 0, 0, 0, Cp - C, 0, 0], np.int64),
              "s5": np.array([2, Cp // Bk, Bk, 3, 4], np.int64), "s4": np.array([2, Cp, 3, 4], np.int64)})
    c.write(out, [N("ReorderInput", ["x"], ["y"], domain=NC)],
            [N("Pad", ["x", "pads"], ["p"]), N("Reshape", ["p", "s5"], ["r"]),
             N("Transpose", ["r"], ["t"], perm=[0, 1, 3, 4, 2]), N("Reshape", ["t", "s4"], ["y"])],
            [("y", None)])
    c = Case("nchwc_reorder_input_nhwc", {"x": rnd(1, 3, 4, C)},
             {"pads": np.array([0, 0, 0, 0, 0, Cp - C, 0, 0], np.int64),
              "s5": np.array([1, Cp // Bk, Bk, 3, 4], np.int64), "s4": np.array([1, Cp, 3, 4], np.int64)})
    c.write(out, [N("ReorderInput", ["x"], ["y"], domain=NC, channels_last=1)],
            [N("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]), N("Pad", ["xt", "pads"], ["p"]),
             N("Reshape", ["p", "s5"], ["r"]), N("Transpose", ["r"], ["t"], perm=[0, 1, 3, 4, 2]),
             N("Reshape", ["t", "s4"], ["y"])], [("y", None)])
    for cl in (0, 1):
        c = Case("nchwc_reorder_output" + ("_nhwc" if cl else ""), {"x": rnd(2, Cp, 3, 4)},
                 {"s5": np.array([2, Cp // Bk, 3, 4, Bk], np.int64), "s4": np.array([2, Cp, 3, 4], np.int64),
                  "st": np.array([0], np.int64), "en": np.array([C], np.int64), "ax": np.array([1], np.int64)})
        comp = [N("Reshape", ["x", "s5"], ["r"]), N("Transpose", ["r"], ["t"], perm=[0, 1, 4, 2, 3]),
                N("Reshape", ["t", "s4"], ["u"]), N("Slice", ["u", "st", "en", "ax"], ["y" if not cl else "v"])]
        if cl:
            comp.append(N("Transpose", ["v"], ["y"], perm=[0, 2, 3, 1]))
        c.write(out, [N("ReorderOutput", ["x"], ["y"], domain=NC, channels=C, channels_last=cl)], comp,
                [("y", None)])

    def sandwich(name, x, Cin, Cout, op_nodes_model, op_nodes_comp, inits_m, inits_c, sum_input=None):
        """x (NCHW) -> ReorderInput -> op -> ReorderOutput(Cout) vs the plain op."""
        ins = {"x": x}
        if sum_input is not None:
            ins["z"] = sum_input
        c = Case(name, ins)
        m = [N("ReorderInput", ["x"], ["xb"], domain=NC)] if Cin is not None else []
        if sum_input is not None:
            m.append(N("ReorderInput", ["z"], ["zb"], domain=NC))
        m += op_nodes_model + [N("ReorderOutput", ["yb"], ["y"], domain=NC, channels=Cout)]
        c.write(out, m, op_nodes_comp, [("y", None)], model_inits=inits_m, comp_inits=inits_c)

    # Conv: blocked input with a fused Sum and Relu; the first-layer form (NCHW input); depthwise
    # with Clip; a grouped blocked conv with HardSigmoid.
    x = rnd(1, 2 * Bk, 9, 9)
    w = rnd(24, 2 * Bk, 3, 3, scale=0.2)
    b = rnd(24)
    Op = (24 + Bk - 1) // Bk * Bk
    bp = np.zeros(Op, np.float32)
    bp[:24] = b
    z = rnd(1, 24, 5, 5)
    sandwich("nchwc_conv_sum_relu", x, 2 * Bk, 24,
             [N("Conv", ["xb", "wr", "bp", "zb"], ["yb"], domain=NC, kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1], activation="Relu")],
             [N("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
              N("Add", ["c", "z"], ["s"]), N("Relu", ["s"], ["y"])],
             {"wr": reorder_filter(w, 1), "bp": bp}, {"w": w, "b": b}, sum_input=z)
    x = rnd(2, 3, 11, 10)
    w = rnd(Bk, 3, 3, 3, scale=0.3)
    b = rnd(Bk)
    c = Case("nchwc_conv_first", {"x": x})
    c.write(out, [N("Conv", ["x", "wr", "b"], ["yb"], domain=NC, kernel_shape=[3, 3], strides=[2, 2],
                    pads=[0, 1, 1, 0], activation="LeakyRelu", activation_params=[0.1]),
                  N("ReorderOutput", ["yb"], ["y"], domain=NC, channels=Bk)],
            [N("Conv", ["x", "w", "b"], ["c"], strides=[2, 2], pads=[0, 1, 1, 0]),
             N("LeakyRelu", ["c"], ["y"], alpha=0.1)], [("y", None)],
            model_inits={"wr": reorder_filter(w, 1), "b": b}, comp_inits={"w": w, "b": b})
    C2 = 2 * Bk
    x = rnd(1, C2, 8, 8)
    w = rnd(C2, 1, 3, 3)
    b = rnd(C2)
    sandwich("nchwc_conv_depthwise_clip", x, C2, C2,
             [N("Conv", ["xb", "wr", "b"], ["yb"], domain=NC, kernel_shape=[3, 3], group=C2,
                pads=[1, 1, 1, 1], activation="Clip", activation_params=[-0.5, 0.5])],
             [N("Conv", ["x", "w", "b"], ["c"], group=C2, pads=[1, 1, 1, 1]),
              N("Clip", ["c", "lo", "hi"], ["y"])],
             {"wr": reorder_filter(w, C2), "b": b},
             {"w": w, "b": b, "lo": np.float32(-0.5), "hi": np.float32(0.5)})
    w = rnd(Bk, 2 * Bk, 3, 3, scale=0.2)
    b = rnd(Bk)
    sandwich("nchwc_conv_hardswish", rnd(1, 2 * Bk, 7, 6), 2 * Bk, Bk,
             [N("Conv", ["xb", "wr", "b"], ["yb"], domain=NC, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                activation="HardSwish")],
             [N("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), N("HardSwish", ["c"], ["y"])],
             {"wr": reorder_filter(w, 1), "b": b}, {"w": w, "b": b})
    w = rnd(2 * Bk, Bk, 1, 1, scale=0.3)
    b = rnd(2 * Bk)
    sandwich("nchwc_conv_grouped_hardsigmoid", rnd(1, C2, 6, 5), C2, 2 * Bk,
             [N("Conv", ["xb", "wr", "b"], ["yb"], domain=NC, kernel_shape=[1, 1], group=2,
                activation="HardSigmoid", activation_params=[0.2, 0.5])],
             [N("Conv", ["x", "w", "b"], ["c"], group=2), N("HardSigmoid", ["c"], ["y"])],
             {"wr": reorder_filter(w, 2), "b": b}, {"w": w, "b": b})
    # Pools and Upsample.
    x = rnd(1, Bk, 9, 9)
    for name, mop, attrs in [("nchwc_maxpool", "MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
                             ("nchwc_maxpool_dilated", "MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1])),
                             ("nchwc_avgpool", "AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
                             ("nchwc_avgpool_incpad", "AveragePool", dict(kernel_shape=[3, 2], strides=[2, 2],
                                                                          pads=[1, 0, 1, 1], count_include_pad=1))]:
        sandwich(name, x, Bk, Bk, [N(mop, ["xb"], ["yb"], domain=NC, **attrs)],
                 [N(mop, ["x"], ["y"], **attrs)], {}, {})
    for gop in ("GlobalAveragePool", "GlobalMaxPool"):
        sandwich("nchwc_" + gop.lower(), rnd(2, 2 * Bk, 5, 6), 2 * Bk, 2 * Bk,
                 [N(gop, ["xb"], ["yb"], domain=NC)], [N(gop, ["x"], ["y"])], {}, {})
    for mode, ctm, rmode in [("nearest", "asymmetric", "nearest"), ("linear", "half_pixel", "linear"),
                             ("linear", "align_corners", "linear")]:
        extra = dict(nearest_mode="floor") if mode == "nearest" else {}
        sandwich(f"nchwc_upsample_{mode}_{ctm}", rnd(1, Bk, 4, 5), Bk, Bk,
                 [N("Upsample", ["xb"], ["yb"], domain=NC, scales=[1, 1, 2, 3], mode=mode,
                    coordinate_transformation_mode=ctm)],
                 [N("Resize", ["x", "", "sc"], ["y"], mode=rmode, coordinate_transformation_mode=ctm, **extra)],
                 {}, {"sc": np.array([1, 1, 2, 3], np.float32)})


def bad(out):
    """Malformed nodes and inputs: each must fail with a message naming what is wrong
    (OUT/bad/<case>/expect.txt holds a fragment of it), never crash."""
    out = os.path.join(out, "bad")

    def case(name, inputs, nodes, expect, inits=None, outputs=(("y", None),)):
        c = Case(name, inputs, inits)
        c.write(out, nodes, nodes, list(outputs))
        os.remove(os.path.join(out, name, "composition.onnx"))
        with open(os.path.join(out, name, "expect.txt"), "w") as f:
            f.write(expect)

    case("fused_conv_activation", {"x": rnd(1, 2, 5, 5)},
         [N("FusedConv", ["x", "w"], ["y"], domain=MS, activation="Swish")],
         "unsupported activation 'Swish'", {"w": rnd(3, 2, 3, 3)})
    case("nbits_short_b", {"a": rnd(2, 32)},
         [N("MatMulNBits", ["a", "B", "sc"], ["y"], domain=MS, K=32, N=4, bits=4, block_size=16)],
         "MatMulNBits: B needs", {"B": np.zeros((4, 2, 3), np.uint8), "sc": np.ones(8, np.float32)})
    case("nbits_bits", {"a": rnd(2, 32)},
         [N("MatMulNBits", ["a", "B", "sc"], ["y"], domain=MS, K=32, N=4, bits=3, block_size=16)],
         "bits 2, 4 or 8", {"B": np.zeros((4, 2, 8), np.uint8), "sc": np.ones(8, np.float32)})
    case("embed_id_range", {"ids": np.array([[1, 25]], np.int32)},
         [N("EmbedLayerNormalization", ["ids", "", "we", "pe", "", "g", "be"], ["y"], domain=MS)],
         "out of its table's range", {"we": rnd(20, 4), "pe": rnd(4, 4), "g": rnd(4), "be": rnd(4)})
    case("rotary_position", {"x": rnd(1, 2, 8), "pid": np.array([[0, 9]], np.int64)},
         [N("RotaryEmbedding", ["x", "pid", "c", "s"], ["y"], domain=MS, num_heads=1)],
         "outside the caches", {"c": rnd(4, 4), "s": rnd(4, 4)})
    case("attention_past", {"x": rnd(1, 2, 4), "past": rnd(2, 1, 1, 1, 4)},
         [N("Attention", ["x", "w", "", "", "past"], ["y"], domain=MS, num_heads=1)],
         "not supported", {"w": rnd(4, 12)})
    case("nchwc_conv_not_blocked", {"x": rnd(1, 3, 5, 5)},
         [N("Conv", ["x", "w"], ["y"], domain=NC, kernel_shape=[3, 3])],
         "not a blocked filter", {"w": rnd(BLOCK + 2, 3, 3, 3)})
    case("reorder_output_channels", {"x": rnd(1, BLOCK, 2, 2)},
         [N("ReorderOutput", ["x"], ["y"], domain=NC)], "channels must be positive")
    case("skip_ln_gamma", {"x": rnd(1, 2, 8), "s": rnd(1, 2, 8)},
         [N("SkipLayerNormalization", ["x", "s", "g"], ["y"], domain=MS)],
         "gamma must have 8 elements", {"g": rnd(5)})
    case("fused_gemm_inner", {"a": rnd(2, 3)},
         [N("FusedGemm", ["a", "b"], ["y"], domain=MS)], "inner dimensions", {"b": rnd(4, 5)})
    case("nbits_gidx", {"a": rnd(2, 32)},
         [N("MatMulNBits", ["a", "B", "sc", "", "gi"], ["y"], domain=MS, K=32, N=4, bits=4, block_size=16)],
         "g_idx", {"B": np.zeros((4, 2, 8), np.uint8), "sc": np.ones(8, np.float32),
                   "gi": np.zeros(32, np.int32)})
    case("gelu_type", {"x": np.arange(4, dtype=np.int32)},
         [N("Gelu", ["x"], ["y"], domain=MS)], "is int32, expected float")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for f in (activations, fused, norms, attention, rotary, nbits, nchwc, bad):
        f(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
