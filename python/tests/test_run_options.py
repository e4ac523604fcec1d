"""What the C API gained after the package was first written, through
ONNX Runtime's names: free-dimension overrides, RunOptions (tag, log level,
terminate from another thread, deadline), session run limits, model
metadata and the pool's thread count."""

import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import minfer
from conftest import save_model

UINT64_MAX = str(2**64 - 1)


@pytest.fixture
def forever_model():
    """A Loop that never stops (no trip count, a condition that stays true):
    only a terminate or a deadline ends its run (as tests/test_surface.c)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Neg", ["v"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "cond", "x"], ["y"], name="forever", body=body)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("cond", TensorProto.BOOL, [], [True])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def forever_session(model, **config):
    so = minfer.SessionOptions()
    # No iteration limit: the loop would otherwise end at a million iterations.
    so.add_session_config_entry("minfer.max_loop_iterations", UINT64_MAX)
    for key, value in config.items():
        so.add_session_config_entry(key, value)
    return minfer.InferenceSession(model, so, providers=["cpu"])


X = {"x": np.float32(1)}

# ---- Free-dimension overrides -------------------------------------------------


def test_free_dimension_override_makes_the_shape_concrete(dynamic_model):
    so = minfer.SessionOptions()
    so.add_free_dimension_override_by_name("batch", 5)
    so.add_free_dimension_override_by_name("batch", 3)  # replaces
    so.add_free_dimension_override_by_name("n", 4)
    sess = minfer.InferenceSession(dynamic_model, so, providers=["cpu"])
    assert sess.get_inputs()[0].shape == [3, 4]
    # planned at creation, before any run
    assert sess.info()["memory"] is not None
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    y, s = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    assert s.shape == (3, 1)
    with pytest.raises(minfer.InvalidArgument, match=r"input 'x' expects shape \[3,4\], got \[2,4\]"):
        sess.run(None, {"x": np.zeros((2, 4), np.float32)})


def test_free_dimension_override_of_an_unknown_name_fails(dynamic_model):
    so = minfer.SessionOptions()
    so.add_free_dimension_override_by_name("bach", 2)
    with pytest.raises(minfer.InvalidArgument, match="bach"):
        minfer.InferenceSession(dynamic_model, so, providers=["cpu"])
    with pytest.raises(minfer.InvalidArgument):
        so.add_free_dimension_override_by_name("batch", -1)
    with pytest.raises(minfer.NotImplemented):
        so.add_free_dimension_override_by_denotation("DATA_BATCH", 1)


def test_input_dimension_override_by_axis(dynamic_model):
    so = minfer.SessionOptions()
    so.add_input_dimension_override("x", 1, 4)
    sess = minfer.InferenceSession(dynamic_model, so, providers=["cpu"])
    assert sess.get_inputs()[0].shape == ["batch", 4]
    (y, _) = sess.run(None, {"x": np.ones((2, 4), np.float32)})
    assert y.shape == (2, 4)
    with pytest.raises(minfer.InvalidArgument, match="expects shape"):
        sess.run(None, {"x": np.ones((2, 5), np.float32)})


# ---- RunOptions -------------------------------------------------------------------


def test_terminate_from_another_thread_cancels_the_run(forever_model):
    sess = forever_session(forever_model)
    ro = minfer.RunOptions()
    ro.run_tag = "forever"
    caught = []

    def run():
        try:
            sess.run(None, X, ro)
        except minfer.Fail as e:
            caught.append(e)

    th = threading.Thread(target=run)
    th.start()
    # Wait until the run holds the options: their settings cannot change then.
    while th.is_alive():
        try:
            ro.deadline_ms = 0
        except minfer.InvalidArgument as e:
            assert "while a run uses these options" in str(e)
            break
    ro.terminate = True
    th.join(120)
    assert not th.is_alive()
    assert ro.terminate is True
    (e,) = caught
    assert type(e) is minfer.Fail  # ORT raises Fail for its terminate flag
    assert "run 'forever' cancelled" in str(e)
    # The flag stays set: a later run stops at once.
    with pytest.raises(minfer.Fail, match="cancelled"):
        sess.run(None, X, ro)
    # Cleared, the session runs again (until the deadline ends the loop).
    ro.terminate = False
    ro.deadline_ms = 20
    with pytest.raises(minfer.Fail, match="deadline of 20 ms passed"):
        sess.run(None, X, ro)


def test_terminate_leaves_other_runs_alone(forever_model, add_model):
    ro = minfer.RunOptions()
    ro.terminate = True
    sess = forever_session(forever_model)
    with pytest.raises(minfer.Fail, match="cancelled"):
        sess.run(None, X, ro)
    add = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    with pytest.raises(minfer.Fail, match="cancelled"):
        add.run(None, {"A": a, "B": a}, ro)
    (c,) = add.run(None, {"A": a, "B": a}, minfer.RunOptions())
    np.testing.assert_array_equal(c, 2 * a)
    (c,) = add.run(None, {"A": a, "B": a})
    np.testing.assert_array_equal(c, 2 * a)


def test_deadline_ends_a_run(forever_model):
    sess = forever_session(forever_model)
    ro = minfer.RunOptions()
    ro.deadline_ms = 30
    assert ro.deadline_ms == 30
    with pytest.raises(minfer.Fail, match="deadline of 30 ms passed") as info:
        sess.run(None, X, ro)
    assert type(info.value) is minfer.Fail
    with pytest.raises(minfer.InvalidArgument):
        ro.deadline_ms = -1


def test_session_run_deadline_from_a_config_entry(forever_model):
    sess = forever_session(forever_model, **{"minfer.run_deadline_ms": "25"})
    with pytest.raises(minfer.Fail, match="deadline of 25 ms passed"):
        sess.run(None, X)


def test_max_run_elements_from_a_config_entry(add_model):
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.max_run_elements", "5")
    sess = minfer.InferenceSession(add_model, so, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    with pytest.raises(minfer.Fail):
        sess.run(None, {"A": a, "B": a})
    so.add_session_config_entry("minfer.max_run_elements", "-1")
    with pytest.raises(minfer.InvalidArgument, match="minfer.max_run_elements"):
        minfer.InferenceSession(add_model, so, providers=["cpu"])


def test_model_size_limit_from_a_config_entry(add_model):
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.max_model_bytes", "16")
    with pytest.raises(minfer.Fail, match="16"):
        minfer.InferenceSession(add_model, so, providers=["cpu"])


def test_loop_iteration_limit_from_a_config_entry(forever_model):
    sess = forever_session(forever_model, **{"minfer.max_loop_iterations": "100"})
    with pytest.raises(minfer.Fail, match="100"):
        sess.run(None, X)


def test_run_tag_and_log_level_reach_the_run_log(dynamic_model, capfd):
    sess = minfer.InferenceSession(dynamic_model, providers=["cpu"])
    ro = minfer.RunOptions()
    assert ro.log_severity_level == -1
    ro.logid = "tagged-run"
    assert ro.run_tag == "tagged-run"
    ro.log_severity_level = 1  # info, for this run only (the session's is warning)
    capfd.readouterr()
    # A new input shape: the run logs, at info, that it builds a plan.
    sess.run(None, {"x": np.ones((1, 2), np.float32)}, ro)
    assert "minfer info: [tagged-run] " in capfd.readouterr().err
    sess.run(None, {"x": np.ones((2, 2), np.float32)})
    assert "building a plan" not in capfd.readouterr().err
    with pytest.raises(minfer.InvalidArgument):
        ro.log_severity_level = 7
    with pytest.raises(TypeError):
        sess.run(None, {"x": np.ones((1, 2), np.float32)}, run_options="fast")


# ---- Metadata and threads ------------------------------------------------------------


def test_get_modelmeta(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        doc_string="the graph's doc",
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="pytest", producer_version="8.0",
                              domain="org.minfer.test", model_version=7, doc_string="the model's doc")
    model.ir_version = 8
    helper.set_model_props(model, {"author": "minfer", "license": "MIT"})
    onnx.checker.check_model(model)
    path = tmp_path / "meta.onnx"
    onnx.save(model, str(path))
    meta = minfer.InferenceSession(str(path), providers=["cpu"]).get_modelmeta()
    assert meta.producer_name == "pytest"
    assert meta.producer_version == "8.0"
    assert meta.graph_name == "relu_graph"
    assert meta.domain == "org.minfer.test"
    assert meta.description == "the model's doc"
    assert meta.graph_description == "the graph's doc"
    assert meta.version == 7
    assert meta.ir_version == 8
    assert meta.custom_metadata_map == {"author": "minfer", "license": "MIT"}


def test_get_modelmeta_of_a_built_graph():
    b = minfer.Builder()
    b.add_input("x", "float", [2])
    b.add_node("Relu", ["x"], ["y"])
    b.add_output("y")
    meta = b.session(providers=["cpu"]).get_modelmeta()
    assert (meta.producer_name, meta.description, meta.custom_metadata_map) == ("", "", {})


def test_thread_count(add_model):
    so = minfer.SessionOptions()
    so.intra_op_num_threads = 2
    assert minfer.InferenceSession(add_model, so, providers=["cpu"]).thread_count() == 2
    so.intra_op_num_threads = 1
    assert minfer.InferenceSession(add_model, so, providers=["cpu"]).thread_count() == 1


def test_creation_deadline_from_a_config_entry(tmp_path):
    # 3000 Neg nodes in a chain: creation takes well over 1 ms.
    nodes = [helper.make_node("Neg", ["x" if i == 0 else "v%d" % (i - 1)], ["v%d" % i])
             for i in range(3000)]
    nodes.append(helper.make_node("Identity", ["v2999"], ["y"]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    path = str(tmp_path / "chain.onnx")
    save_model(path, nodes, [x], [y])
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.creation_deadline_ms", "1")
    with pytest.raises(minfer.Fail, match=r"session creation took longer than 1 ms \(the creation deadline\) at "):
        minfer.InferenceSession(path, so, providers=["cpu"])
    so.add_session_config_entry("minfer.creation_deadline_ms", "600000")
    sess = minfer.InferenceSession(path, so, providers=["cpu"])
    (out,) = sess.run(None, {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(out, np.ones(2, np.float32))
    so.add_session_config_entry("minfer.creation_deadline_ms", "-1")
    with pytest.raises(minfer.InvalidArgument):
        minfer.InferenceSession(path, so, providers=["cpu"])
