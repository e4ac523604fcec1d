"""end_profiling() writes ONNX Runtime's profile format, so ORT's
profile-parsing scripts work on it: a JSON array of events, "cat": "Node"
events named NODE_kernel_time with args op_name, provider,
input_type_shape and output_type_shape, and "Session" events, "model_run"
once per run."""

import collections
import json
import os

import numpy as np
import pytest

import minfer
from conftest import MODELS_DIR


def ort_style_summary(path):
    """What ORT's profile scripts do (onnxruntime/python/tools/transformers/
    profiler.py's parsing, written again here): kernel time per op and per
    provider from the Node events, and the runs."""
    with open(path) as f:
        data = json.load(f)
    per_op, per_provider, nodes = collections.Counter(), collections.Counter(), []
    runs = 0
    for item in data:
        if item["cat"] == "Session" and item["name"] == "model_run":
            runs += 1
        if item["cat"] != "Node" or not item["name"].endswith("_kernel_time"):
            continue
        args = item["args"]
        per_op[args["op_name"]] += item["dur"]
        per_provider[args["provider"]] += item["dur"]
        nodes.append((item["name"][: -len("_kernel_time")], args["input_type_shape"], args["output_type_shape"]))
    return runs, per_op, per_provider, nodes


def test_profile_is_ort_shaped(tmp_path):
    model = os.path.join(MODELS_DIR, "squeezenet1_1", "model.onnx")
    if not os.path.exists(model):
        pytest.skip("no shared squeezenet1_1")
    so = minfer.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "sq")
    sess = minfer.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    for _ in range(2):
        sess.run(None, {sess.get_inputs()[0].name: x})
    path = sess.end_profiling()
    runs, per_op, per_provider, nodes = ort_style_summary(path)
    assert runs == 2
    assert any("Conv" in op for op in per_op), per_op
    # ORT's provider names, as the drop-in maps them; minfer's own beside
    assert set(per_provider) <= set(sess.get_providers()) | {"CPUExecutionProvider"}, per_provider
    assert "DnnlExecutionProvider" not in sess.get_providers() or "DnnlExecutionProvider" in per_provider
    with open(path) as f:
        ours = {e["args"]["minfer_provider"] for e in json.load(f) if e.get("cat") == "Node"}
    assert ours <= set(sess.info()["providers"]) | {"core"}, ours
    assert len(nodes) % 2 == 0 and nodes[: len(nodes) // 2] == nodes[len(nodes) // 2:]
    name, ins, outs = nodes[0]
    assert ins[0] == {"float": [1, 3, 224, 224]}, ins
    assert all(len(t) == 1 for t in outs)
