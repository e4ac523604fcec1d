"""A script written for ONNX Runtime's Python API, as its documentation shows
it, with one line changed: the import. test_ort_compat.py runs it.

    python3 ort_script.py MODELS_DIR WORK_DIR [CUSTOM_OPS_LIBRARY]

It uses InferenceSession, SessionOptions (free-dimension overrides,
profiling, custom ops), RunOptions, IOBinding, OrtValue and get_modelmeta on
the shared models and tiny_encoder, a transformer, at its test data's shape.
CUSTOM_OPS_LIBRARY: a library with com.example Swish (plugins/example).
"""
import minfer as onnxruntime  # was: import onnxruntime

import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ort = onnxruntime
InvalidArgument = onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument
NoSuchFile = onnxruntime.capi.onnxruntime_pybind11_state.NoSuchFile
models_dir, work = sys.argv[1], sys.argv[2]
custom_ops_library = sys.argv[3] if len(sys.argv) > 3 else None
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
    print("providers %s: %s" % (name, ",".join(sess.get_providers())))
    checked.append(name)


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


# -- A transformer with its dynamic dimensions fixed (free-dimension overrides),
#    profiled, with run options, IOBinding and OrtValues --
encoder = os.path.join(models_dir, "tiny_encoder")
if os.path.exists(os.path.join(encoder, "model.onnx")):
    for data_set in ("test_data_set_0", "test_data_set_1"):
        ids = load_pb(os.path.join(encoder, data_set, "input_0.pb"))
        want = load_pb(os.path.join(encoder, data_set, "output_0.pb"))
        so = ort.SessionOptions()
        so.add_free_dimension_override_by_name("batch", ids.shape[0])
        so.add_free_dimension_override_by_name("seq", ids.shape[1])
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(work, "encoder_" + data_set)
        so.intra_op_num_threads = 2
        sess = ort.InferenceSession(os.path.join(encoder, "model.onnx"), so, providers=["CPUExecutionProvider"])
        assert sess.get_inputs()[0].shape == list(ids.shape), sess.get_inputs()[0].shape
        assert sess.get_outputs()[0].shape == [ids.shape[0], 8], sess.get_outputs()[0].shape
        meta = sess.get_modelmeta()
        assert meta.producer_name == "pytorch" and meta.graph_name == "torch_jit", meta.producer_name
        assert isinstance(meta.custom_metadata_map, dict) and meta.version == 0

        ro = ort.RunOptions()
        ro.run_tag = "encoder"
        ro.log_severity_level = 3
        (logits,) = sess.run(["logits"], {"input_ids": ids}, ro)
        np.testing.assert_allclose(logits, want, rtol=1e-3, atol=1e-4)

        # IOBinding: the input read in place, the output written into a
        # preallocated OrtValue, run after run.
        out = ort.OrtValue.ortvalue_from_shape_and_type(want.shape, np.float32, "cpu", 0)
        binding = sess.io_binding()
        binding.bind_cpu_input("input_ids", ids)
        binding.bind_ortvalue_output("logits", out)
        for _ in range(2):
            sess.run_with_iobinding(binding, ro)
            binding.synchronize_outputs()
            assert binding.get_outputs()[0].data_ptr() == out.data_ptr()
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-3, atol=1e-4)
        assert out.device_name().lower() == "cpu" and out.shape() == list(want.shape)
        binding.clear_binding_outputs()
        binding.bind_output("logits", "cpu")
        sess.run_with_iobinding(binding)
        np.testing.assert_allclose(binding.copy_outputs_to_cpu()[0], want, rtol=1e-3, atol=1e-4)

        # OrtValues in and out.
        x = ort.OrtValue.ortvalue_from_numpy(ids, "cpu", 0)
        (res,) = sess.run_with_ort_values(["logits"], {"input_ids": x})
        assert res.is_tensor() and res.data_type() == "tensor(float)"
        np.testing.assert_allclose(res.numpy(), want, rtol=1e-3, atol=1e-4)

        # The profile, read as ORT's profile-parsing scripts read it.
        profile = sess.end_profiling()
        with open(profile) as f:
            events = json.load(f)
        kernel = {}
        for e in events:
            if e["cat"] == "Node" and e["name"].endswith("_kernel_time"):
                kernel[e["args"]["op_name"]] = kernel.get(e["args"]["op_name"], 0) + e["dur"]
        assert "MatMul" in kernel or "Gemm" in kernel or "FusedMatMul" in kernel, sorted(kernel)
        runs = sum(1 for e in events if e["cat"] == "Session" and e["name"] == "model_run")
        assert runs == 5, runs
        print("tiny_encoder %s at %s: %d ops profiled, providers %s"
              % (data_set, list(ids.shape), len(kernel), ",".join(sess.get_providers())))

# -- Custom ops: a library registered on the session options --
if custom_ops_library:
    graph = helper.make_graph(
        [helper.make_node("Swish", ["x"], ["y"], domain="com.example", alpha=1.0)], "swish",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    swish = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)])
    swish.ir_version = 8
    so = ort.SessionOptions()
    so.register_custom_ops_library(custom_ops_library)
    sess = ort.InferenceSession(swish.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)
    print("custom ops: com.example Swish from", os.path.basename(custom_ops_library))

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
