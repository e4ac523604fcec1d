"""ONNX Runtime's global thread pools: SessionOptions.use_per_session_threads =
False puts sessions on the process's one pool (set_global_thread_pool_sizes),
as ORT does; results equal those of sessions with pools of their own, and the
sessions make no threads."""

import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import minfer
from conftest import save_model


def _os_threads():
    import os

    return len(os.listdir("/proc/self/task"))


@pytest.fixture
def mlp_model(tmp_path):
    """y = softmax(relu(x @ W1) @ W2), x float [batch, 64]: products the CPU
    provider splits over the pool."""
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((64, 256)).astype(np.float32) / 8
    w2 = rng.standard_normal((256, 16)).astype(np.float32) / 16
    return save_model(
        tmp_path / "mlp.onnx",
        [helper.make_node("MatMul", ["x", "w1"], ["h"]),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["z"]),
         helper.make_node("Softmax", ["z"], ["y"], axis=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )


def _options(per_session, parallel=False):
    so = minfer.SessionOptions()
    so.intra_op_num_threads = 2
    so.use_per_session_threads = per_session
    if parallel:
        so.execution_mode = minfer.ExecutionMode.ORT_PARALLEL
    return so


def test_sessions_share_the_global_pool(mlp_model):
    minfer.set_global_thread_pool_sizes(2, 0)
    assert minfer._minfer.global_thread_pool_size() == 2
    before = _os_threads()
    shared = [minfer.InferenceSession(mlp_model, _options(False, parallel=k % 2), providers=["cpu"])
              for k in range(4)]
    assert _os_threads() == before  # on the global pool's one worker
    own = [minfer.InferenceSession(mlp_model, _options(True), providers=["cpu"]) for _ in range(4)]
    assert _os_threads() == before + 4  # a worker each
    rng = np.random.default_rng(5)
    feeds = [rng.standard_normal((4 + 4 * i, 64)).astype(np.float32) for i in range(3)]
    expected = [own[0].run(None, {"x": x})[0] for x in feeds]
    errors = []

    def caller(sess, k):
        try:
            for r in range(20):
                i = (k + r) % len(feeds)
                np.testing.assert_array_equal(sess.run(None, {"x": feeds[i]})[0], expected[i])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=caller, args=(sess, k)) for sess in shared for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all(s.stats()["runs"] == 80 for s in shared)


def test_ort_script_global_pools(mlp_model):
    """ORT's own test of the global pools, as an ORT user writes it."""
    minfer.set_global_thread_pool_sizes(2, 2)
    so = minfer.SessionOptions()
    so.execution_mode = minfer.ExecutionMode.ORT_PARALLEL
    so.graph_optimization_level = minfer.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.use_per_session_threads = False
    sess = minfer.InferenceSession(mlp_model, so, providers=minfer.get_available_providers())
    x = np.ones((2, 64), np.float32)
    y = sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(y.sum(axis=1), [1, 1], rtol=1e-5)
    assert sess.info()["schedule"]["inter_op_threads"] == 2
    assert sess.thread_count() == 2


def test_pool_replaced_later_sessions_keep_theirs(mlp_model):
    minfer.set_global_thread_pool_sizes(2)
    first = minfer.InferenceSession(mlp_model, _options(False), providers=["cpu"])
    minfer.set_global_thread_pool_sizes(3)
    second = minfer.InferenceSession(mlp_model, _options(False), providers=["cpu"])
    assert minfer._minfer.global_thread_pool_size() == 3
    x = np.ones((3, 64), np.float32)
    np.testing.assert_array_equal(first.run(None, {"x": x})[0], second.run(None, {"x": x})[0])


@pytest.mark.parametrize("bad", [-1, 1025, 1.5, True])
def test_bad_sizes(bad):
    with pytest.raises(minfer.InvalidArgument):
        minfer.set_global_thread_pool_sizes(bad, 0)
