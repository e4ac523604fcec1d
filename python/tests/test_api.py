"""The extension's own behaviour: conversions, zero copy, errors, options,
the builder, info and stats."""

import gc
import tracemalloc
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper

import minfer
from conftest import save_model


def test_node_args_follow_onnxruntime(dynamic_model):
    sess = minfer.InferenceSession(dynamic_model, providers=["cpu"])
    (x,) = sess.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", ["batch", "n"])
    y, s = sess.get_outputs()
    assert (y.name, y.type) == ("y", "tensor(float)")
    assert s.shape[1] == 1
    assert sess.get_overridable_initializers() == []


def test_outputs_are_the_result_tensors(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.arange(10, dtype=np.float32).reshape(1, 10)
    (c,) = sess.run(None, {"A": a, "B": a})
    np.testing.assert_array_equal(c, 2 * a)
    # The array's memory is minfer's tensor, kept by a capsule, and writeable.
    assert not c.flags.owndata
    assert type(c.base).__name__ == "PyCapsule"
    c[0, 0] = 5
    assert c[0, 0] == 5


def test_contiguous_inputs_are_not_copied(tmp_path):
    path = save_model(
        tmp_path / "sum.onnx",
        [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024, 2048])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    sess = minfer.InferenceSession(path, providers=["cpu"])
    big = np.ones((2048, 1024), dtype=np.float32)  # 8 MiB
    sess.run(None, {"x": big.T.copy()})  # plan once
    # numpy reports its allocations to tracemalloc; minfer's own do not show.
    tracemalloc.start()
    try:
        contiguous = big.reshape(1024, 2048)
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        (y,) = sess.run(None, {"x": contiguous})
        wrapped_peak = tracemalloc.get_traced_memory()[1] - base
        strided = big.T  # Fortran order: copied once
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        (y2,) = sess.run(None, {"x": strided})
        copied_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert y == y2 == 1024 * 2048
    assert wrapped_peak < 1 << 20, wrapped_peak
    assert 8 << 20 <= copied_peak < 12 << 20, copied_peak


def test_input_conversions(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.arange(20, dtype=np.float32).reshape(2, 10)
    want = a[:1] + 1
    ones = np.ones((1, 10), np.float32)
    # a strided view, a big-endian array, and a list (converted to the input's type)
    for v in (a[:1, ::1], a[::2][:1], a.astype(">f4")[:1], a[:1].tolist()):
        np.testing.assert_array_equal(sess.run(None, {"A": v, "B": ones})[0], want)
    # a non-contiguous column slice
    wide = np.zeros((1, 20), np.float32)
    wide[0, ::2] = a[0]
    np.testing.assert_array_equal(sess.run(None, {"A": wide[:, ::2], "B": ones})[0], want)


def test_errors_carry_minfers_message(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    with pytest.raises(minfer.InvalidArgument, match="input 'B' is missing"):
        sess.run(None, {"A": a})
    with pytest.raises(minfer.InvalidArgument, match="input 'A' expects float, got double"):
        sess.run(None, {"A": a.astype(np.float64), "B": a})
    with pytest.raises(minfer.InvalidArgument, match="'nope' is not an output"):
        sess.run(["nope"], {"A": a, "B": a})
    with pytest.raises(minfer.InvalidArgument, match="'Q' is not an input"):
        sess.run(None, {"A": a, "B": a, "Q": a})
    with pytest.raises(minfer.InvalidArgument, match=r"expects shape \[1,10\], got \[2,10\]") as e:
        sess.run(None, {"A": np.ones((2, 10), np.float32), "B": a})
    assert isinstance(e.value, RuntimeError) and e.value.status > 0
    with pytest.raises(minfer.InvalidArgument, match="input 'A'.*no ONNX element type"):
        sess.run(None, {"A": np.ones((1, 10), "datetime64[s]"), "B": a})
    with pytest.raises(TypeError):
        sess.run(None, [a, a])
    with pytest.raises(minfer.NoSuchFile, match="no/such.onnx"):
        minfer.InferenceSession("no/such.onnx")
    with pytest.raises(minfer.InvalidGraph, match="not a valid ONNX model"):
        minfer.InferenceSession(b"\x08\x07garbage")


def test_model_from_bytes_and_pathlike(add_model):
    import pathlib

    with open(add_model, "rb") as f:
        data = f.read()
    a = np.ones((1, 10), np.float32)
    for src in (data, pathlib.Path(add_model)):
        sess = minfer.InferenceSession(src, providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(sess.run(["C"], {"A": a, "B": a})[0], 2 * a)


def test_provider_names(add_model, capfd):
    # minfer's names name one provider each; ORT's fast CPU path: test_ort_options.py.
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.info()["providers"] == ["cpu"]
    assert "CPUExecutionProvider" in minfer.get_available_providers()
    # (name, options) pairs reach the provider.
    if "onednn" in [p["name"] for p in minfer.providers() if p["usable"]]:
        sess = minfer.InferenceSession(add_model, providers=[("onednn", {}), "cpu"])
        assert sess.get_providers()[0] == "DnnlExecutionProvider"
        # Options it refuses, under minfer's name: minfer skips the provider, saying why,
        # and goes on (under ORT's name the option is dropped with a warning instead).
        capfd.readouterr()
        sess = minfer.InferenceSession(add_model, providers=[("onednn", {"bogus": 1})])
        assert sess.get_providers() == ["CPUExecutionProvider"]
        assert "unknown provider options 'bogus=1'" in capfd.readouterr().err


def test_session_options(add_model, dynamic_model):
    so = minfer.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    so.execution_mode = minfer.ExecutionMode.ORT_PARALLEL  # the parallel scheduler (test_sched_options.py)
    so.log_severity_level = 3
    for level in minfer.GraphOptimizationLevel:
        so.graph_optimization_level = level
        sess = minfer.InferenceSession(dynamic_model, so, providers=["cpu"])
        x = np.array([[-1.0, 2.0]], np.float32)
        y, s = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, [[0, 2]])
        np.testing.assert_array_equal(s, [[2]])
    assert sess.get_session_options() is so
    so.graph_optimization_level = 7
    with pytest.raises(minfer.InvalidArgument, match="graph_optimization_level 7"):
        minfer.InferenceSession(add_model, so)
    so = minfer.SessionOptions()
    so.log_severity_level = 9
    with pytest.raises(minfer.InvalidArgument, match="log_severity_level"):
        minfer.InferenceSession(add_model, so)
    so = minfer.SessionOptions()
    so.add_session_config_entry("session.use_env_allocators", "1")  # kept, as ORT keeps it
    assert so.get_session_config_entry("session.use_env_allocators") == "1"
    so.add_session_config_entry("minfer.planner", "linear")
    with pytest.warns(UserWarning, match="session.use_env_allocators"):
        sess = minfer.InferenceSession(add_model, so, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    sess.run(None, {"A": a, "B": a})
    assert sess.info()["memory"]["planner"] == "linear"
    so.add_session_config_entry("minfer.planner", "fancy")
    with pytest.raises(minfer.InvalidArgument, match="planner 'fancy'"):
        minfer.InferenceSession(add_model, so)


def test_profiling(add_model, tmp_path):
    so = minfer.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    sess = minfer.InferenceSession(add_model, so, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    for _ in range(3):
        sess.run(None, {"A": a, "B": a})
    total_ms, runs, _ = sess.node_profile(0)
    assert runs == 3 and total_ms >= 0
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_")) and path.endswith(".json")
    import json

    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any(e.get("name", "").endswith("Add") or "Add" in str(e.get("args", "")) for e in events)


def test_info_and_stats(add_model, dynamic_model, tmp_path):
    assert minfer.InferenceSession(dynamic_model, providers=["cpu"]).info()["memory"] is None  # no plan yet
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    info = sess.info()
    assert [(p["op_type"], p["provider"]) for p in info["placement"]] == [("Add", "cpu")]
    a = np.ones((1, 10), np.float32)
    sess.prepare({"A": a, "B": a})
    mem = sess.info()["memory"]
    assert mem["planner"] == "greedy"
    assert mem["planned_tensors"] == len(mem["buffers"])
    assert sess.info()["boundary_copies"] == {"per_run": 0, "bytes_per_run": 0}
    for _ in range(5):
        sess.run(None, {"A": a, "B": a})
    st = sess.stats()
    assert st["runs"] == 5 and 0 <= st["min_ms"] <= st["p50_ms"] <= st["max_ms"]
    sess.reset_stats()
    assert sess.stats()["runs"] == 0
    sess.write_dot(tmp_path / "g.dot")
    assert "Add" in (tmp_path / "g.dot").read_text()


def test_builder():
    b = minfer.Builder(opset=13)
    b.add_input("x", np.float32, ["batch", 4])
    b.add_initializer("w", np.full((4,), 2.0, np.float32))
    b.add_node("Mul", ["x", "w"], ["xw"], name="scale")
    b.add_node("Transpose", ["xw"], ["t"], perm=[1, 0])
    b.add_node("Softmax", ["t"], ["y"], axis=-1)
    b.add_node("Constant", [], ["c"], value=np.array([1, 2], np.int64))
    b.add_output("y")
    b.add_output("c")
    sess = b.session(providers=["cpu"])
    assert sess.get_inputs()[0].shape == ["batch", 4]
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y, c = sess.run(None, {"x": x})
    t = (x * 2).T
    want = np.exp(t - t.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, want / want.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(c, [1, 2])
    bad = minfer.Builder(13)
    bad.add_input("x", "float", [2])
    bad.add_node("Relu", ["nothing"], ["y"], name="r")
    bad.add_output("y")
    with pytest.raises(minfer.Error, match="nothing"):
        bad.session()
    with pytest.raises(TypeError, match="attribute 'alpha'"):
        bad.add_node("LeakyRelu", ["x"], ["z"], alpha=object())


def test_strings_sequences_optionals(tmp_path):
    path = save_model(
        tmp_path / "seq.onnx",
        [helper.make_node("SequenceConstruct", ["a", "b"], ["seq"]),
         helper.make_node("SequenceLength", ["seq"], ["n"]),
         helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["f"], ["s_out"], to=TensorProto.STRING),
         helper.make_node("OptionalHasElement", ["opt"], ["has"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
         helper.make_value_info("opt", helper.make_optional_type_proto(
             helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))],
        [helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("s_out", TensorProto.STRING, [2]),
         helper.make_tensor_value_info("has", TensorProto.BOOL, [])],
        opset=18,
    )
    sess = minfer.InferenceSession(path, providers=["cpu"])
    types = {a.name: a.type for a in sess.get_inputs() + sess.get_outputs()}
    assert types["seq"] == "seq(tensor(float))" and types["opt"] == "optional(tensor(float))"
    a, b = np.ones(2, np.float32), np.zeros(3, np.float32)
    feed = {"a": a, "b": b, "s": np.array(["1.5", "-2"]), "opt": None}
    seq, n, f, s_out, has = sess.run(None, feed)
    assert isinstance(seq, list) and len(seq) == 2 and n == 2
    np.testing.assert_array_equal(seq[1], b)
    np.testing.assert_array_equal(f, [1.5, -2])
    assert s_out.dtype == object and [float(v) for v in s_out] == [1.5, -2.0]
    assert not has
    feed["s"] = [b"3", "4"]  # bytes and str, as a list
    assert sess.run(["f"], feed)[0].tolist() == [3, 4]
    feed["opt"] = a
    assert sess.run(["has"], feed)[0]


def test_output_outlives_session(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    (c,) = sess.run(None, {"A": a, "B": a})
    del sess
    gc.collect()
    np.testing.assert_array_equal(c, 2 * a)


def test_pb_round_trip(tmp_path):
    v = np.arange(6, dtype=np.int64).reshape(2, 3)
    minfer.save_tensor(v, tmp_path / "t.pb", name="v")
    np.testing.assert_array_equal(minfer.load_tensor(tmp_path / "t.pb"), v)
    with pytest.raises(minfer.Error):
        minfer.load_tensor(tmp_path / "missing.pb")


def test_unknown_keyword_is_an_error(add_model):
    with pytest.raises(TypeError, match="bogus"):
        minfer.InferenceSession(add_model, bogus=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minfer.InferenceSession(add_model, providers=["cpu"], disabled_optimizers=[])


def test_feed_changed_while_converting(add_model):
    """A value whose conversion empties the feed dict does not pull names or
    arrays from under the run."""
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    feed = {}

    class Clears:
        def __array__(self, dtype=None):
            feed.clear()
            return np.ones((1, 10), np.float32)

    feed.update({"A": Clears(), "B": np.ones((1, 10), np.float32)})
    (c,) = sess.run(None, feed)
    np.testing.assert_array_equal(c, np.full((1, 10), 2, np.float32))
    assert feed == {}
