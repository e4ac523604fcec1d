"""ONNX Runtime's minfer.capi namespace, for code that imports its exception classes from there."""
