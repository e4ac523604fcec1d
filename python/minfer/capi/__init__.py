"""ONNX Runtime's capi namespace, for code that reaches its exception classes
through it (onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument)."""

from . import onnxruntime_pybind11_state  # noqa: F401
