"""ONNX Runtime's OrtValue, IOBinding, run_with_iobinding and
run_with_ort_values: outputs written into the caller's memory (the very
array, no copy), inputs read in place, devices other than the host refused."""

import ctypes

import numpy as np
import pytest

import minfer


def _ab():
    a = np.arange(10, dtype=np.float32).reshape(1, 10)
    return a, np.full((1, 10), 0.5, np.float32)


def test_ortvalue_from_numpy_shares_the_arrays_memory():
    a, _ = _ab()
    v = minfer.OrtValue.ortvalue_from_numpy(a, "cpu", 0)
    assert v.is_tensor() and v.has_value() and not v.is_tensor_sequence()
    assert v.device_name() == "cpu" and v.shape() == [1, 10]
    assert v.data_type() == "tensor(float)" and v.element_type() == 1
    assert v.data_ptr() == a.ctypes.data
    assert np.shares_memory(v.numpy(), a)
    a[0, 0] = 42
    assert v.numpy()[0, 0] == 42
    # Not contiguous: a contiguous copy.
    t = np.arange(6, dtype=np.int64).reshape(2, 3).T
    w = minfer.OrtValue.ortvalue_from_numpy(t)
    assert w.shape() == [3, 2] and w.element_type() == 7 and np.array_equal(w.numpy(), t)
    w.update_inplace(np.zeros((3, 2), np.int64))
    assert not w.numpy().any()
    with pytest.raises(minfer.InvalidArgument, match="update_inplace"):
        w.update_inplace(np.zeros((2, 3), np.int64))


def test_ortvalue_from_shape_and_type():
    v = minfer.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float16)
    assert v.shape() == [2, 3] and v.data_type() == "tensor(float16)" and not v.numpy().any()
    b = minfer.OrtValue.ortvalue_from_shape_and_type((4,), 16)  # bfloat16, by its ONNX number
    assert b.data_type() == "tensor(bfloat16)" and b.numpy().dtype == np.uint16
    with pytest.raises(minfer.InvalidArgument, match="negative"):
        minfer.OrtValue.ortvalue_from_shape_and_type([2, -1], np.float32)


def test_other_devices_are_refused_naming_them():
    a, _ = _ab()
    for device in ("cuda", "dml", "cann"):
        with pytest.raises(minfer.NotImplemented, match="'%s'.*host memory" % device):
            minfer.OrtValue.ortvalue_from_numpy(a, device, 0)
    with pytest.raises(minfer.InvalidArgument, match="device_id 1"):
        minfer.OrtValue.ortvalue_from_shape_and_type([1], np.float32, "cpu", 1)


def test_outputs_bound_to_arrays_are_written_in_place(add_model):
    sess = minfer.InferenceSession(add_model, providers=["CPUExecutionProvider"])
    a, b = _ab()
    out = minfer.OrtValue.ortvalue_from_shape_and_type([1, 10], np.float32)
    out.numpy()[:] = np.nan
    ptr = out.data_ptr()
    io = sess.io_binding()
    io.bind_cpu_input("A", a)
    io.bind_ortvalue_input("B", minfer.OrtValue.ortvalue_from_numpy(b))
    io.bind_ortvalue_output("C", out)
    sess.run_with_iobinding(io)
    (got,) = io.get_outputs()
    # The bound value itself, its memory written by the run.
    assert got is out and got.data_ptr() == ptr
    np.testing.assert_array_equal(out.numpy(), a + b)
    # Inputs bound to arrays are read in place: changing them changes the next run.
    a[:] = 100
    sess.run_with_iobinding(io, minfer.RunOptions())
    assert io.get_outputs()[0].data_ptr() == ptr
    np.testing.assert_array_equal(out.numpy(), 100.5)
    copies = io.copy_outputs_to_cpu()
    assert not np.shares_memory(copies[0], out.numpy())
    np.testing.assert_array_equal(copies[0], 100.5)


def test_bind_by_buffer_pointer(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a, b = _ab()
    dst = np.zeros((1, 10), np.float32)
    io = sess.io_binding()
    io.bind_input("A", "cpu", 0, np.float32, [1, 10], a.ctypes.data)
    io.bind_cpu_input("B", b)
    io.bind_output("C", "cpu", 0, np.float32, [1, 10], dst.ctypes.data)
    sess.run_with_iobinding(io)
    np.testing.assert_array_equal(dst, a + b)
    assert io.get_outputs()[0].data_ptr() == dst.ctypes.data
    with pytest.raises(minfer.InvalidArgument, match="buffer_ptr"):
        io.bind_output("C", "cpu", 0, np.float32, [1, 10], 0)
    with pytest.raises(minfer.InvalidArgument, match="element_type and shape"):
        io.bind_output("C", "cpu", 0, None, None, dst.ctypes.data)
    with pytest.raises(minfer.NotImplemented, match="'cuda'"):
        io.bind_output("C", "cuda")


def test_outputs_bound_by_device_are_allocated(dynamic_model):
    sess = minfer.InferenceSession(dynamic_model, providers=["CPUExecutionProvider"])
    io = sess.io_binding()
    x = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
    io.bind_cpu_input("x", x)
    io.bind_output("s")
    io.bind_output("y", "cpu")
    sess.run_with_iobinding(io)
    s, y = io.get_outputs()  # in bind order
    assert s.shape() == [3, 1] and y.shape() == [3, 2] and y.device_name() == "cpu"
    np.testing.assert_array_equal(y.numpy(), np.maximum(x, 0))
    np.testing.assert_array_equal(s.numpy(), np.maximum(x, 0).sum(axis=1, keepdims=True))
    # Another shape: outputs allocated anew.
    io.bind_cpu_input("x", np.ones((5, 2), np.float32))
    sess.run_with_iobinding(io)
    assert [v.shape() for v in io.get_outputs()] == [[5, 1], [5, 2]]
    io.clear_binding_outputs()
    assert io.get_outputs() == []
    with pytest.raises(minfer.InvalidArgument, match="at least one output"):
        sess.run_with_iobinding(io)


def test_bound_array_of_the_wrong_shape_or_type_fails_naming_it(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a, b = _ab()
    io = sess.io_binding()
    io.bind_cpu_input("A", a)
    io.bind_cpu_input("B", b)
    io.bind_ortvalue_output("C", minfer.OrtValue.ortvalue_from_shape_and_type([2, 10], np.float32))
    with pytest.raises(minfer.InvalidArgument, match=r"output 'C' has shape \[1,10\]"):
        sess.run_with_iobinding(io)
    io.bind_ortvalue_output("C", minfer.OrtValue.ortvalue_from_shape_and_type([1, 10], np.float64))
    with pytest.raises(minfer.InvalidArgument, match="output 'C' is float"):
        sess.run_with_iobinding(io)
    ro = np.zeros((1, 10), np.float32)
    ro.flags.writeable = False
    with pytest.raises(minfer.InvalidArgument, match="writeable"):
        sess._sess.run(["C"], {"A": a, "B": b}, None, [ro])
    with pytest.raises(minfer.InvalidArgument, match="bound outputs for 1 requested"):
        sess._sess.run(["C"], {"A": a, "B": b}, None, [None, None])
    # A failed run leaves the session and the binding usable.
    good = minfer.OrtValue.ortvalue_from_shape_and_type([1, 10], np.float32)
    io.bind_ortvalue_output("C", good)
    sess.run_with_iobinding(io)
    np.testing.assert_array_equal(good.numpy(), a + b)
    other = minfer.InferenceSession(add_model, providers=["cpu"])
    with pytest.raises(minfer.InvalidArgument, match="another session"):
        other.run_with_iobinding(io)


def test_run_with_ort_values(dynamic_model):
    sess = minfer.InferenceSession(dynamic_model, providers=["CPUExecutionProvider"])
    x = minfer.OrtValue.ortvalue_from_numpy(np.full((2, 4), -1, np.float32))
    y, s = sess.run_with_ort_values(None, {"x": x})
    assert isinstance(y, minfer.OrtValue) and y.shape() == [2, 4] and not y.numpy().any()
    (only,) = sess.run_with_ort_values(["s"], {"x": x}, minfer.RunOptions())
    assert only.shape() == [2, 1]
    with pytest.raises(TypeError, match="input 'x' must be an OrtValue"):
        sess.run_with_ort_values(None, {"x": np.ones((2, 4), np.float32)})


def test_written_memory_is_the_callers_under_ctypes(add_model):
    """A raw ctypes buffer as the output: the run writes those very bytes."""
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a, b = _ab()
    buf = (ctypes.c_float * 10)()
    io = sess.io_binding()
    io.bind_cpu_input("A", a)
    io.bind_cpu_input("B", b)
    io.bind_output("C", "cpu", 0, np.float32, [1, 10], ctypes.addressof(buf))
    sess.run_with_iobinding(io)
    assert list(buf) == list((a + b).ravel())
