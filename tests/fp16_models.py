#!/usr/bin/python3
"""Whole float16 models on the CPU provider against ONNX Runtime's float16
run (issue 35): each shared model is converted by fp16_convert.py
  - keeping its float inputs and outputs (Casts at the boundary, as ORT's
    converter does by default): ORT runs it on data set 0, and `minfer test`
    must match ORT's outputs at rtol 1e-2 / atol 1e-3;
  - with float16 inputs and outputs: the same data set's input rounded to
    float16, and ORT's outputs rounded to float16, at the same tolerance.
The ORT run is the reference for both: ORT computes each node without a
float16 kernel in float and rounds its output, as the CPU provider does.

usage: fp16_models.py MINFER_CLI MODELS_DIR [MODEL...]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fp16_convert  # noqa: E402

PEER = os.environ.get("MINFER_PEER", os.path.join(HERE, "..", "..", "shared", "peer"))
PEER_MODULES = os.environ.get("MINFER_PEER_DIR",
                              os.path.join(os.path.expanduser("~"), ".cache", "minfer-peer"))
if not os.path.exists(os.path.join(PEER, "ort_run.js")):
    PEER = "/work/shared/peer"


def run_ort(model, inputs, tmp):
    ind, outd = os.path.join(tmp, "ort_in"), os.path.join(tmp, "ort_out")
    os.makedirs(ind, exist_ok=True)
    for k, (n, a) in enumerate(inputs):
        a.tofile(os.path.join(ind, f"input_{k}.bin"))
        with open(os.path.join(ind, f"input_{k}.json"), "w") as f:
            json.dump({"name": n, "dtype": str(a.dtype), "dims": list(a.shape)}, f)
    env = dict(os.environ, NODE_PATH=os.path.join(PEER_MODULES, "node_modules"))
    r = subprocess.run(["node", os.path.join(PEER, "ort_run.js"), model, ind, outd],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("fp16_models: ONNX Runtime failed on %s: %s" % (model, r.stderr[-400:]))
    outs = []
    for k in range(1000):
        meta = os.path.join(outd, f"output_{k}.json")
        if not os.path.exists(meta):
            break
        with open(meta) as f:
            m = json.load(f)
        dt = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "uint8": np.uint8,
              "int8": np.int8}[m["dtype"]]
        outs.append((m["name"], np.fromfile(os.path.join(outd, f"output_{k}.bin"),
                                            dtype=dt).reshape(m["dims"])))
    return outs


def save(path, name, a):
    with open(path, "wb") as f:
        # np.ascontiguousarray would make a scalar 1-D
        f.write(numpy_helper.from_array(np.array(a, order="C"), name).SerializeToString())


def case(root, name, model, inputs, outputs):
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        save(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), n, a)
    for k, (n, a) in enumerate(outputs):
        save(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), n, a)


def main(argv):
    minfer, models = argv[1], argv[2]
    names = argv[3:] or sorted(n for n in os.listdir(models)
                               if os.path.exists(os.path.join(models, n, "model.onnx")))
    with tempfile.TemporaryDirectory() as tmp:
        cases = os.path.join(tmp, "cases")
        for name in names:
            src = os.path.join(models, name)
            ins = []
            ds = os.path.join(src, "test_data_set_0")
            g = onnx.load(os.path.join(src, "model.onnx")).graph
            init = {t.name for t in g.initializer}
            feeds = [v.name for v in g.input if v.name not in init]
            for k in range(len(feeds)):
                t = onnx.TensorProto()
                with open(os.path.join(ds, f"input_{k}.pb"), "rb") as f:
                    t.ParseFromString(f.read())
                ins.append((feeds[k], numpy_helper.to_array(t)))
            keep = fp16_convert.convert(onnx.load(os.path.join(src, "model.onnx")), False, False)
            keep_path = os.path.join(tmp, name + "_fp16.onnx")
            onnx.save(keep, keep_path)
            ref = run_ort(keep_path, ins, os.path.join(tmp, name))
            case(cases, name + "_fp16", keep, ins, ref)
            io16 = fp16_convert.convert(onnx.load(os.path.join(src, "model.onnx")), True, False)
            half = lambda xs: [(n, a.astype(np.float16) if a.dtype == np.float32 else a)
                               for n, a in xs]
            case(cases, name + "_fp16_io16", io16, half(ins), half(ref))
        r = subprocess.run([minfer, "test", "--rtol", "1e-2", "--atol", "1e-3", "--providers",
                            "cpu", cases], capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        want = f"{2 * len(names)} passed, 0 failed, 0 skipped"
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode != 0 or last != want:
            sys.exit(f"fp16_models: '{last}', want '{want}'")


if __name__ == "__main__":
    main(sys.argv)
