"""A script written for ONNX Runtime's Python API, as its documentation shows
it, with one line changed: the import. test_ort_compat.py runs it.

    python3 ort_script.py MODELS_DIR WORK_DIR
"""
import minfer as onnxruntime  # was: import onnxruntime

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ort = onnxruntime
InvalidArgument = onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument
NoSuchFile = onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile
models_dir, work = sys.argv[1], sys.argv[2]
checked = []

# -- The shared models: names from the session, inputs from the test data --
for name in sorted(os.listdir(models_dir)):
    case = os.path.join(models_dir, name)
    if not os.path.exists(os.path.join(case, "model.onnx")):
        continue
    sess = ort.InferenceSession(os.path.join(case, "model.onnx"), providers=["CPUExecutionProvider"])
    data = os.path.join(case, "test_data_set_0")
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(data, "input_%d.pb" % i), "rb") as f:
            t.ParseFromString(f.read())
        feeds[inp.name] = numpy_helper.to_array(t)
    outputs = sess.run(None, feeds)
    for i, out in enumerate(outputs):
        t = onnx.TensorProto()
        with open(os.path.join(data, "output_%d.pb" % i), "rb") as f:
            t.ParseFromString(f.read())
        np.testing.assert_allclose(out, numpy_helper.to_array(t), rtol=1e-3, atol=1e-4)
    checked.append(name)

# -- A model made with onnx.helper: dynamic shapes, int64 input, two outputs --
table = np.arange(40, dtype=np.float32).reshape(10, 4)
graph = helper.make_graph(
    [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
     helper.make_node("ReduceMean", ["emb"], ["pooled"], axes=[1], keepdims=0)],
    "embed",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
    [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["batch", "seq", 4]),
     helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", 4])],
    [numpy_helper.from_array(table, "table")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
path = os.path.join(work, "embed.onnx")
onnx.save(model, path)

so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
so.intra_op_num_threads = 1
so.log_severity_level = 3
sess = ort.InferenceSession(path, sess_options=so, providers=ort.get_available_providers())
print("providers:", sess.get_providers())
assert [i.name for i in sess.get_inputs()] == ["ids"]
assert sess.get_inputs()[0].type == "tensor(int64)"
assert sess.get_inputs()[0].shape == ["batch", "seq"]
assert [o.name for o in sess.get_outputs()] == ["emb", "pooled"]
for batch, seq in ((1, 3), (4, 7), (2, 1)):
    ids = np.random.randint(0, 10, size=(batch, seq)).astype(np.int64)
    emb, pooled = sess.run(None, {"ids": ids})
    assert emb.shape == (batch, seq, 4)
    np.testing.assert_allclose(emb, table[ids])
    np.testing.assert_allclose(pooled, table[ids].mean(axis=1), rtol=1e-6)
    (only,) = sess.run(["pooled"], {"ids": ids}, ort.RunOptions())
    np.testing.assert_allclose(only, pooled)

# From bytes, as after an in-memory export.
sess2 = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
np.testing.assert_allclose(sess2.run(["emb"], {"ids": np.array([[1]], np.int64)})[0], table[[[1]]])

# -- Errors --
try:
    sess.run(None, {"ids": np.zeros((1, 2), np.float32)})
    raise AssertionError("a float feed for an int64 input ran")
except InvalidArgument as e:
    print("InvalidArgument:", e)
try:
    sess.run(None, {"wrong_name": np.zeros((1, 2), np.int64)})
    raise AssertionError("a wrong input name ran")
except InvalidArgument as e:
    print("InvalidArgument:", e)
try:
    ort.InferenceSession(os.path.join(work, "missing.onnx"))
    raise AssertionError("a missing model loaded")
except NoSuchFile as e:
    print("NoSuchFile:", e)
try:
    sess.run(None, {"ids": np.zeros((1, 2), np.float32)})
except ort.capi.onnxruntime_pybind11_state.InvalidArgument:
    pass

print("ok:", ", ".join(checked))
