"""ONNX Runtime's exception classes, separate as in ORT (an InvalidArgument
is no Fail), each keeping minfer's message and status; get_outputs() with
free-dimension overrides."""

import itertools

import numpy as np
import pytest

import minfer
from minfer.capi import onnxruntime_pybind11_state as state

CLASSES = ("Fail", "InvalidArgument", "NoSuchFile", "InvalidGraph", "NotImplemented", "EPFail",
           "RuntimeException", "Busy", "Cancelled")


def test_classes_are_separate():
    classes = [getattr(minfer, n) for n in CLASSES]
    for a, b in itertools.permutations(classes, 2):
        assert not issubclass(a, b), (a, b)
    for c in classes:
        assert issubclass(c, minfer.Error) and issubclass(c, RuntimeError)
        assert getattr(state, c.__name__, c) is c
    assert issubclass(minfer.NotImplemented, NotImplementedError)
    # ORT's names for what minfer reports as another class catch that class.
    assert state.InvalidProtobuf is minfer.InvalidGraph and state.NoModel is minfer.NoSuchFile


def test_each_error_keeps_minfers_message(tmp_path, add_model):
    with pytest.raises(minfer.NoSuchFile, match="missing.onnx") as e:
        minfer.InferenceSession(str(tmp_path / "missing.onnx"))
    assert not isinstance(e.value, minfer.Fail) and isinstance(e.value.status, int)
    with pytest.raises(minfer.InvalidGraph, match="not a valid ONNX model"):
        minfer.InferenceSession(b"\x08\x07garbage")
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    with pytest.raises(minfer.InvalidArgument, match="'A'") as e:
        sess.run(None, {"A": np.ones((1, 10), np.float64), "B": np.ones((1, 10), np.float32)})
    assert not isinstance(e.value, minfer.Fail)


def test_get_outputs_honours_free_dimension_overrides(dynamic_model):
    so = minfer.SessionOptions()
    so.add_free_dimension_override_by_name("batch", 3)
    sess = minfer.InferenceSession(dynamic_model, so, providers=["cpu"])
    assert sess.get_inputs()[0].shape == [3, "n"]
    assert [o.shape for o in sess.get_outputs()] == [[3, "n"], [3, 1]]
    y, s = sess.run(None, {"x": np.ones((3, 2), np.float32)})
    assert list(y.shape) == [3, 2] and list(s.shape) == [3, 1]
