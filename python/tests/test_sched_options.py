"""SessionOptions.execution_mode and inter_op_num_threads onto minfer's
schedulers (docs/python.md, docs/scheduling.md): ORT_PARALLEL is the
parallel scheduler, inter_op_num_threads its nodes at once; the session's
schedule() (info()["schedule"]) says what it runs with."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import minfer
from conftest import save_model


@pytest.fixture(autouse=True)
def _no_user_scheduler(monkeypatch):
    """The default scheduler is the environment's when set: not here."""
    monkeypatch.delenv("MINFER_SCHEDULER", raising=False)
    monkeypatch.delenv("MINFER_INTER_OP_THREADS", raising=False)


@pytest.fixture
def branchy_model(tmp_path):
    """Four branches from x (a fire module's shape of graph), joined by Sum:
    y = relu(x) + neg(x) + abs(x) + exp(-x^2)."""
    v = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [64, 64])  # noqa: E731
    return save_model(
        tmp_path / "branchy.onnx",
        [
            helper.make_node("Relu", ["x"], ["a"]),
            helper.make_node("Neg", ["x"], ["b"]),
            helper.make_node("Abs", ["x"], ["c"]),
            helper.make_node("Mul", ["x", "x"], ["sq"]),
            helper.make_node("Neg", ["sq"], ["nsq"]),
            helper.make_node("Exp", ["nsq"], ["d"]),
            helper.make_node("Sum", ["a", "b", "c", "d"], ["y"]),
        ],
        [v("x")],
        [v("y")],
    )


def options(mode=minfer.ExecutionMode.ORT_SEQUENTIAL, inter=0, threads=2):
    so = minfer.SessionOptions()
    so.intra_op_num_threads = threads
    so.execution_mode = mode
    so.inter_op_num_threads = inter
    return so


def test_ort_parallel_runs_the_parallel_scheduler(branchy_model):
    x = np.random.default_rng(7).standard_normal((64, 64)).astype(np.float32)
    seq = minfer.InferenceSession(branchy_model, options(), providers=["cpu"])
    assert seq.info()["schedule"]["scheduler"] == "sequential"
    (want,) = seq.run(None, {"x": x})
    assert seq.info()["schedule"]["concurrent"] is False

    par = minfer.InferenceSession(branchy_model, options(minfer.ExecutionMode.ORT_PARALLEL, 2),
                                  providers=["cpu"])
    sched = par.info()["schedule"]
    assert sched["scheduler"] == "parallel" and sched["inter_op_threads"] == 2, sched
    assert sched["has_plan"] is True
    (got,) = par.run(None, {"x": x})
    sched = par.info()["schedule"]
    # The plan runs nodes at once (not the parallel scheduler's fallback to
    # the execution order), and gives the sequential scheduler's bits.
    assert sched["concurrent"] is True and sched["why_sequential"] == "", sched
    np.testing.assert_array_equal(got, want)


def test_inter_op_num_threads(branchy_model):
    # 0 (ORT's default): as many nodes at once as the pool has threads.
    par = minfer.InferenceSession(branchy_model, options(minfer.ExecutionMode.ORT_PARALLEL, 0, 2),
                                  providers=["cpu"])
    assert par.info()["schedule"]["inter_op_threads"] == 2
    par = minfer.InferenceSession(branchy_model, options(minfer.ExecutionMode.ORT_PARALLEL, 1, 2),
                                  providers=["cpu"])
    assert par.info()["schedule"]["inter_op_threads"] == 1
    # Never more than the pool's threads (the C option's rule).
    par = minfer.InferenceSession(branchy_model, options(minfer.ExecutionMode.ORT_PARALLEL, 8, 2),
                                  providers=["cpu"])
    assert par.info()["schedule"]["inter_op_threads"] == 2
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(minfer.InvalidArgument, match="inter_op_num_threads"):
            minfer.InferenceSession(branchy_model, options(inter=bad), providers=["cpu"])


def test_one_thread_runs_in_order(branchy_model):
    par = minfer.InferenceSession(branchy_model, options(minfer.ExecutionMode.ORT_PARALLEL, 0, 1),
                                  providers=["cpu"])
    par.run(None, {"x": np.ones((64, 64), np.float32)})
    sched = par.info()["schedule"]
    assert sched["scheduler"] == "parallel" and sched["concurrent"] is False, sched
    assert sched["why_sequential"], sched


def test_config_entries_win(branchy_model, monkeypatch):
    so = options(minfer.ExecutionMode.ORT_PARALLEL, 1)
    so.add_session_config_entry("minfer.scheduler", "pipeline")
    so.add_session_config_entry("minfer.inter_op_threads", "2")
    sess = minfer.InferenceSession(branchy_model, so, providers=["cpu"])
    assert sess.info()["schedule"]["scheduler"] == "pipeline"
    so = options(minfer.ExecutionMode.ORT_PARALLEL, 1)
    so.add_session_config_entry("minfer.scheduler", "sequential")
    sess = minfer.InferenceSession(branchy_model, so, providers=["cpu"])
    assert sess.info()["schedule"]["scheduler"] == "sequential"
    # ORT_SEQUENTIAL (the default) leaves the environment's choice.
    monkeypatch.setenv("MINFER_SCHEDULER", "parallel")
    sess = minfer.InferenceSession(branchy_model, options(), providers=["cpu"])
    assert sess.info()["schedule"]["scheduler"] == "parallel"
