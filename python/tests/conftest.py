"""Shared fixtures: where the shared models and the ONNX backend suite are,
and small models written with the onnx package (python3-onnx), as a user of
ONNX Runtime makes them."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
# ../shared/models beside the repository, as the C tests find them.
MODELS_DIR = os.environ.get("MINFER_MODELS_DIR") or os.path.join(HERE, "..", "..", "..", "shared", "models")
ONNX_DATA_DIR = os.environ.get("MINFER_ONNX_DATA_DIR", "/usr/share/libonnx-testdata/data")
# Set by ctest in sanitizer builds, where RSS says nothing about leaks.
SANITIZED = os.environ.get("MINFER_SANITIZED") == "1"


@pytest.fixture(autouse=True)
def _no_user_provider_settings(monkeypatch):
    """Tests name their providers; a user's MINFER_PROVIDERS must not change them."""
    monkeypatch.delenv("MINFER_PROVIDERS", raising=False)


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """An option minfer ignores is warned about once per process: once per test here."""
    import minfer

    minfer._warned.clear()
    yield
    minfer._warned.clear()


def save_model(path, nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture
def add_model(tmp_path):
    """C = A + B over float [1, 10]: the per-call overhead model."""
    return save_model(
        tmp_path / "add.onnx",
        [helper.make_node("Add", ["A", "B"], ["C"])],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT, [1, 10])],
    )


@pytest.fixture
def dynamic_model(tmp_path):
    """y = relu(x) and s = sum over axis 1, keepdims; x is float [batch, n]."""
    return save_model(
        tmp_path / "dyn.onnx",
        [helper.make_node("Relu", ["x"], ["y"]),
         helper.make_node("ReduceSum", ["y", "axes"], ["s"], keepdims=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "n"]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 1])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )


@pytest.fixture
def gather_model(tmp_path):
    """An embedding lookup: out = Gather(table, ids) with int64 ids [batch, seq]."""
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    return save_model(
        tmp_path / "gather.onnx",
        [helper.make_node("Gather", ["table", "ids"], ["out"], axis=0),
         helper.make_node("Shape", ["ids"], ["ids_shape"])],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 4]),
         helper.make_tensor_value_info("ids_shape", TensorProto.INT64, [2])],
        [helper.make_tensor("table", TensorProto.FLOAT, [10, 4], table.flatten())],
    )
