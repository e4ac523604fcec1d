#!/usr/bin/python3
"""ONNX Runtime-optimized models as ONNX test cases, for plugins/contrib.

usage: make_ort_optimized.py OUT_DIR [NAME...] [--from DIR]

For every source model (the four shared models and small transformer and CNN
models exported here with torch) and every level in LEVELS, ONNX Runtime
(onnxruntime-node, driven by ort_optimize.js) saves its optimized graph
(session option optimizedModelFilePath) and runs it on the case's inputs;
OUT_DIR/<model>_<level>/ then holds model.onnx and test_data_set_0/
input_K.pb + output_K.pb, ORT's outputs being the reference that
`minfer test --plugin contrib` compares against.  A case already complete in
OUT_DIR is kept (the directory is a cache).  Prints one line per case with
the com.microsoft ops its optimized graph holds.  Exit status 77: no ORT peer.
With --from DIR, every ONNX test case in DIR (a directory with model.onnx and
test_data_set_0, e.g. the corpus tests/zoo/build_zoo.py makes) is a source
too, named after its directory.

Environment: MINFER_SHARED_MODELS (default ../shared/models beside the
checkout), MINFER_PEER_DIR (default ~/.cache/minfer-peer, where ort-bench
installs onnxruntime-node).
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("MINFER_SHARED_MODELS",
                        os.path.join(os.path.dirname(ROOT), "shared", "models"))
PEER = os.environ.get("MINFER_PEER_DIR", os.path.expanduser("~/.cache/minfer-peer"))
PB2RAW = os.path.join(os.path.dirname(SHARED), "peer", "pb2raw.py")
LEVELS = ("extended", "all")
SHARED_MODELS = ("squeezenet1_1", "mobilenet_v2", "resnet18", "tiny_encoder")


def export_models(tmp):
    """Small torch models whose ORT-optimized graphs hold the fused contrib ops
    (returns {name: (model path, [input arrays])})."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    out = {}

    class Bert(nn.Module):
        # BERT as the ORT fusions expect it: word + position + segment embeddings,
        # LayerNorm, additive attention mask, erf GELU, post-LayerNorm residuals.
        def __init__(s, vocab=100, hidden=32, heads=4, layers=2, seq=8):
            super().__init__()
            s.heads, s.hidden = heads, hidden
            s.word = nn.Embedding(vocab, hidden)
            s.pos = nn.Embedding(seq, hidden)
            s.seg = nn.Embedding(2, hidden)
            s.ln = nn.LayerNorm(hidden, eps=1e-12)
            s.layers = nn.ModuleList()
            for _ in range(layers):
                s.layers.append(nn.ModuleDict(dict(
                    q=nn.Linear(hidden, hidden), k=nn.Linear(hidden, hidden),
                    v=nn.Linear(hidden, hidden), o=nn.Linear(hidden, hidden),
                    ln1=nn.LayerNorm(hidden, eps=1e-12), f1=nn.Linear(hidden, 4 * hidden),
                    f2=nn.Linear(4 * hidden, hidden), ln2=nn.LayerNorm(hidden, eps=1e-12))))

        def split(s, x):
            # Constant shapes, as ORT's AttentionFusion wants them.
            return x.view(2, 8, s.heads, s.hidden // s.heads).permute(0, 2, 1, 3)

        def forward(s, ids, segs, mask):
            t = ids.shape[1]
            pos = torch.arange(t, dtype=torch.long).unsqueeze(0)
            x = s.ln(s.word(ids) + s.pos(pos) + s.seg(segs))
            ext = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
            for L in s.layers:
                q, k, v = s.split(L["q"](x)), s.split(L["k"](x)), s.split(L["v"](x))
                a = torch.matmul(q, k.transpose(-1, -2)) / float(np.sqrt(s.hidden // s.heads))
                a = torch.softmax(a + ext, dim=-1)
                c = torch.matmul(a, v).permute(0, 2, 1, 3).contiguous()
                c = c.view(2, 8, s.hidden)
                x = L["ln1"](L["o"](c) + x)
                f = L["f2"](torch.nn.functional.gelu(L["f1"](x)))
                x = L["ln2"](f + x)
            return x

    class Gpt(nn.Module):
        # Decoder-only: RMSNorm (x / sqrt(mean(x^2) + eps) * w), causal attention,
        # tanh GELU written out (FastGelu), QuickGELU (x * sigmoid(1.702 x)) in the second block's MLP.
        def __init__(s, vocab=64, hidden=32, heads=4, layers=2, seq=8):
            super().__init__()
            s.heads, s.hidden, s.seq = heads, hidden, seq
            s.emb = nn.Embedding(vocab, hidden)
            s.blocks = nn.ModuleList()
            for _ in range(layers):
                s.blocks.append(nn.ModuleDict(dict(
                    qkv=nn.Linear(hidden, 3 * hidden), o=nn.Linear(hidden, hidden),
                    f1=nn.Linear(hidden, 4 * hidden), f2=nn.Linear(4 * hidden, hidden))))
            s.w1 = nn.ParameterList([nn.Parameter(1 + 0.1 * torch.randn(hidden)) for _ in range(2 * layers + 1)])
            s.head = nn.Linear(hidden, vocab, bias=False)
            s.register_buffer("causal", torch.triu(torch.full((seq, seq), -1e4), 1))

        def rms(s, x, w):
            return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

        def forward(s, ids):
            x = s.emb(ids)
            b, t, _ = x.shape
            d = s.hidden // s.heads
            for i, B in enumerate(s.blocks):
                h = s.rms(x, s.w1[2 * i])
                q, k, v = B["qkv"](h).split(s.hidden, dim=-1)
                q, k, v = [z.view(b, t, s.heads, d).transpose(1, 2) for z in (q, k, v)]
                a = torch.softmax(q @ k.transpose(-1, -2) * (d ** -0.5) + s.causal, dim=-1)
                x = x + B["o"]((a @ v).transpose(1, 2).reshape(b, t, s.hidden))
                h = B["f1"](s.rms(x, s.w1[2 * i + 1]))
                if i == 0:
                    h = 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * torch.pow(h, 3.0))))
                else:
                    h = h * torch.sigmoid(1.702 * h)
                x = x + B["f2"](h)
            return s.head(s.rms(x, s.w1[-1]))

    class Cnn(nn.Module):
        # Convolutions with the activations ORT fuses (Relu, Clip, Sigmoid, HardSigmoid, LeakyRelu,
        # HardSwish),
        # a depthwise and a grouped conv, residual Add, pools, nearest upsample, concat, Gemm + Relu.
        def __init__(s):
            super().__init__()
            s.c1 = nn.Conv2d(3, 32, 3, 2, 1)
            s.dw = nn.Conv2d(32, 32, 3, 1, 1, groups=32)
            s.pw = nn.Conv2d(32, 32, 1)
            s.g = nn.Conv2d(32, 32, 3, 1, 1, groups=2)
            s.c2 = nn.Conv2d(32, 48, 3, 1, 1)
            s.c3 = nn.Conv2d(48, 32, 1)
            s.c4 = nn.Conv2d(64, 16, 3, 1, 1)
            s.fc1 = nn.Linear(32, 24)
            s.fc2 = nn.Linear(24, 10)

        def forward(s, x):
            x = torch.relu(s.c1(x))
            y = torch.clamp(s.dw(x), 0, 6)
            x = x + s.pw(y)
            x = torch.sigmoid(s.g(x)) * x
            z = nn.functional.hardsigmoid(s.c2(x))
            z = nn.functional.max_pool2d(z, 2)
            z = nn.functional.leaky_relu(s.c3(z), 0.1)
            z = nn.functional.avg_pool2d(z, 3, 1, 1, count_include_pad=False)
            z = nn.functional.interpolate(z, scale_factor=2, mode="nearest")
            x = torch.cat([x, z], 1)
            x = nn.functional.hardswish(s.c4(x))
            g = torch.cat([nn.functional.adaptive_avg_pool2d(x, 1), nn.functional.adaptive_max_pool2d(x, 1)], 1)
            return s.fc2(torch.relu(s.fc1(g.flatten(1))))

    rng = np.random.default_rng(0)
    specs = [
        ("bert_tiny", Bert().eval(), [rng.integers(0, 100, (2, 8)), rng.integers(0, 2, (2, 8)),
                                      np.array([[1] * 8, [1] * 5 + [0] * 3])],
         ["input_ids", "token_type_ids", "attention_mask"]),
        ("gpt_tiny", Gpt().eval(), [rng.integers(0, 64, (2, 8))], ["input_ids"]),
        ("cnn_tiny", Cnn().eval(), [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)], ["input"]),
    ]
    for name, model, arrays, names in specs:
        arrays = [a.astype(np.int64) if a.dtype.kind == "i" else a for a in arrays]
        path = os.path.join(tmp, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, tuple(torch.from_numpy(a) for a in arrays), path,
                              input_names=names, output_names=["output"], opset_version=13,
                              do_constant_folding=True)
        out[name] = (path, arrays)
    return out


def write_pb(path, array, name):
    t = numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def contrib_ops(model_path):
    m = onnx.load(model_path, load_external_data=False)
    c = collections.Counter((n.domain, n.op_type) for n in m.graph.node if n.domain not in ("", "ai.onnx"))
    simplified = sum(1 for n in m.graph.node if n.domain in ("", "ai.onnx") and "Simplified" in n.op_type)
    s = " ".join(f"{d}:{o}x{k}" for (d, o), k in sorted(c.items()))
    if simplified:
        s += f" (default domain: SimplifiedLayerNormalization x{simplified})"
    return s or "-"


def mark_default_domain(case):
    """Marks a case whose graph holds ORT's default-domain ops (tests/contrib/check_results.sh)."""
    m = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    opset = max([o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] or [0])
    if any(n.domain in ("", "ai.onnx") and (n.op_type == "SimplifiedLayerNormalization" or
                                           (n.op_type == "LayerNormalization" and opset < 17))
           for n in m.graph.node):
        open(os.path.join(case, "needs_default_domain"), "w").close()


def make_case(name, level, src, inputs_dir, out_dir):
    case = os.path.join(out_dir, f"{name}_{level}")
    ds = os.path.join(case, "test_data_set_0")
    if os.path.exists(os.path.join(ds, "output_0.pb")):
        return case
    tmp = tempfile.mkdtemp()
    try:
        raw = os.path.join(tmp, "raw")
        res = os.path.join(tmp, "out")
        subprocess.run(["/usr/bin/python3", PB2RAW, src, inputs_dir, raw], check=True)
        env = dict(os.environ, NODE_PATH=os.path.join(PEER, "node_modules"))
        model = os.path.join(tmp, "model.onnx")
        subprocess.run(["node", os.path.join(HERE, "ort_optimize.js"), src, level, model, raw, res],
                       check=True, env=env, stderr=subprocess.DEVNULL)
        os.makedirs(ds, exist_ok=True)
        for f in glob.glob(os.path.join(inputs_dir, "input_*.pb")):
            shutil.copy(f, ds)
        for k in range(1000):
            meta = os.path.join(res, f"output_{k}.json")
            if not os.path.exists(meta):
                break
            m = json.load(open(meta))
            dt = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "uint8": np.uint8}[m["dtype"]]
            a = np.fromfile(os.path.join(res, f"output_{k}.bin"), dtype=dt).reshape(m["dims"])
            write_pb(os.path.join(tmp, f"output_{k}.pb"), a, m["name"])
        shutil.move(model, os.path.join(case, "model.onnx"))
        mark_default_domain(case)
        for f in glob.glob(os.path.join(tmp, "output_*.pb")):
            shutil.move(f, ds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return case


def main():
    if len(sys.argv) < 2 or sys.argv[1] == "--from":
        print(__doc__, file=sys.stderr)
        return 2
    args = sys.argv[1:]
    extra = None
    if "--from" in args:
        i = args.index("--from")
        if i + 1 >= len(args):
            print(__doc__, file=sys.stderr)
            return 2
        extra = args[i + 1]
        del args[i:i + 2]
    out_dir = args[0]
    want = set(args[1:])
    if not os.path.isdir(os.path.join(PEER, "node_modules", "onnxruntime-node")) or not os.path.exists(PB2RAW):
        print(f"make_ort_optimized: no ONNX Runtime peer in {PEER} (run ../shared/peer/ort-bench once)",
              file=sys.stderr)
        return 77
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp()
    try:
        sources = {}
        for name in SHARED_MODELS:
            if not want or name in want:
                sources[name] = (os.path.join(SHARED, name, "model.onnx"),
                                 os.path.join(SHARED, name, "test_data_set_0"))
        if extra:
            for name in sorted(os.listdir(extra)):
                d = os.path.join(extra, name)
                if (os.path.exists(os.path.join(d, "model.onnx")) and
                        os.path.isdir(os.path.join(d, "test_data_set_0")) and (not want or name in want)):
                    sources[name] = (os.path.join(d, "model.onnx"), os.path.join(d, "test_data_set_0"))
        exported = [n for n in ("bert_tiny", "gpt_tiny", "cnn_tiny") if not want or n in want]
        if exported and not all(os.path.exists(os.path.join(out_dir, f"{n}_{l}", "test_data_set_0", "output_0.pb"))
                                for n in exported for l in LEVELS):
            for name, (path, arrays) in export_models(tmp).items():
                if name not in exported:
                    continue
                m = onnx.load(path)
                names = [i.name for i in m.graph.input]
                ds = os.path.join(tmp, name + "_inputs")
                os.makedirs(ds)
                for k, (a, n) in enumerate(zip(arrays, names)):
                    write_pb(os.path.join(ds, f"input_{k}.pb"), a, n)
                sources[name] = (path, ds)
        for name, (src, inputs) in sources.items():
            for level in LEVELS:
                case = make_case(name, level, src, inputs, out_dir)
                print(f"{os.path.basename(case)}: {contrib_ops(os.path.join(case, 'model.onnx'))}")
        for name in exported:
            if name not in sources:
                for level in LEVELS:
                    case = os.path.join(out_dir, f"{name}_{level}")
                    print(f"{os.path.basename(case)}: {contrib_ops(os.path.join(case, 'model.onnx'))}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
