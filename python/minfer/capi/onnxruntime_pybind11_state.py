"""The exception classes where ONNX Runtime's code finds them:
``from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument``."""

from .._minfer import (  # noqa: F401
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    NoSuchFile,
    NotImplemented,
    RuntimeException,
)

# ORT's other classes, by the minfer status that raises the nearest thing.
InvalidProtobuf = InvalidGraph
NoModel = NoSuchFile
EngineError = Fail
ModelLoaded = Fail
