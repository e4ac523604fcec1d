"""OrtValue on the OpenCL device (docs/python.md, "Values on the OpenCL
device"): an output bound to 'opencl' stays in the device's memory, and
feeding it to the next run of the session reads it in place. Chained runs
give the values of the same runs through host memory, and the provider's
counters show no transfer between host and device in the chained run;
wrong devices, shapes and sessions raise naming them."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import minfer

from conftest import save_model

pytestmark = pytest.mark.skipif(
    "OpenCLExecutionProvider" not in minfer.get_available_providers(),
    reason="no OpenCL device")

B = np.array([[0.5, -1, 2], [0.25, 3, -0.75]], np.float32)
W = np.array([[2, 0.5, -1], [4, 1.5, -2]], np.float32)
X = np.array([[1, -2, 3.5], [0.25, -1.5, 2]], np.float32)


@pytest.fixture
def chain_model(tmp_path):
    """y = (x + b) * w over float [2, 3]: a run's output is the next's input."""
    return save_model(
        tmp_path / "chain.onnx",
        [helper.make_node("Add", ["x", "b"], ["t"]), helper.make_node("Mul", ["t", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(B, "b"), numpy_helper.from_array(W, "w")],
    )


def _session(path, **kw):
    return minfer.InferenceSession(path, providers=["OpenCLExecutionProvider"], **kw)


def _transfers(sess):
    return sess._sess.device_counters()["opencl"]["transfers"]


@pytest.mark.parametrize("fp16", ["0", "1"])
def test_chained_runs_stay_on_the_device(chain_model, fp16):
    sess = minfer.InferenceSession(chain_model, providers=["OpenCLExecutionProvider"],
                                   provider_options=[{"fp16": fp16}])
    # through the host
    y1 = sess.run(None, {"x": X})[0]
    y2 = sess.run(None, {"x": y1})[0]
    assert _transfers(sess) >= 2
    # on the device: x goes up once, y1 and y2 stay
    x = minfer.OrtValue.ortvalue_from_numpy(X, "opencl", 0)
    assert x.device_name() == "opencl" and x.shape() == [2, 3]
    io = sess.io_binding()
    io.bind_ortvalue_input("x", x)
    io.bind_output("y", "opencl")
    sess.run_with_iobinding(io)
    (d1,) = io.get_outputs()
    assert d1.device_name() == "opencl" and d1.shape() == [2, 3]
    assert d1.data_type() == "tensor(float)"
    io.bind_ortvalue_input("x", d1)
    io.bind_output("y", "opencl")
    sess.run_with_iobinding(io)
    assert _transfers(sess) == 0
    (d2,) = io.get_outputs()
    np.testing.assert_array_equal(d2.numpy(), y2)
    np.testing.assert_array_equal(io.copy_outputs_to_cpu()[0], y2)
    # a bound device OrtValue is written in place, again with no transfer
    out = minfer.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "opencl", 0)
    io.bind_ortvalue_input("x", d2)
    io.bind_ortvalue_output("y", out)
    sess.run_with_iobinding(io)
    assert io.get_outputs()[0] is out
    y3 = sess.run(None, {"x": y2})[0]
    np.testing.assert_array_equal(out.numpy(), y3)
    # run_with_ort_values reads a device value in place; its outputs come to the host
    (h,) = sess.run_with_ort_values(["y"], {"x": d1})
    assert h.device_name() == "cpu"
    np.testing.assert_array_equal(h.numpy(), y2)
    # update_inplace writes the device memory
    d1.update_inplace(X)
    np.testing.assert_array_equal(d1.numpy(), X if fp16 == "0" else X.astype(np.float16))


def test_a_value_of_another_session_moves_through_the_host(chain_model):
    a, b = _session(chain_model), _session(chain_model)
    io = a.io_binding()
    io.bind_cpu_input("x", X)
    io.bind_output("y", "opencl")
    a.run_with_iobinding(io)
    (d,) = io.get_outputs()
    (h,) = b.run_with_ort_values(["y"], {"x": d})  # read back, then up to b's device
    np.testing.assert_array_equal(h.numpy(), a.run(None, {"x": a.run(None, {"x": X})[0]})[0])
    assert d.device_name() == "opencl"


def test_errors_are_clear(chain_model, add_model):
    with pytest.raises(minfer.NotImplemented, match="'cuda'.*'opencl'"):
        minfer.OrtValue.ortvalue_from_numpy(X, "cuda", 0)
    with pytest.raises(minfer.InvalidArgument, match="device_id 1"):
        minfer.OrtValue.ortvalue_from_numpy(X, "opencl", 1)
    with pytest.raises(minfer.InvalidArgument, match="strings"):
        minfer.OrtValue.ortvalue_from_numpy(np.array(["a"]), "opencl", 0)
    sess = _session(chain_model)
    io = sess.io_binding()
    with pytest.raises(minfer.NotImplemented, match="bind_ortvalue_output"):
        io.bind_output("y", "opencl", 0, np.float32, [2, 3], X.ctypes.data)
    with pytest.raises(minfer.NotImplemented, match="bind_ortvalue_input"):
        io.bind_input("x", "opencl", 0, np.float32, [2, 3], X.ctypes.data)
    # a wrong shape on the device
    io.bind_ortvalue_input("x", minfer.OrtValue.ortvalue_from_numpy(X.T.copy(), "opencl", 0))
    io.bind_output("y", "opencl")
    with pytest.raises(minfer.InvalidArgument, match="expects shape"):
        sess.run_with_iobinding(io)
    io.bind_cpu_input("x", X)
    io.bind_ortvalue_output("y", minfer.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32,
                                                                              "opencl"))
    with pytest.raises(minfer.InvalidArgument, match="device value given for it is"):
        sess.run_with_iobinding(io)
    # a session without OpenCL: the device value is refused naming it
    cpu = minfer.InferenceSession(add_model, providers=["cpu"])
    io = cpu.io_binding()
    io.bind_cpu_input("A", np.zeros((1, 10), np.float32))
    io.bind_cpu_input("B", np.zeros((1, 10), np.float32))
    io.bind_output("C", "opencl")
    with pytest.raises(minfer.InvalidArgument, match="no provider 'opencl'"):
        cpu.run_with_iobinding(io)
    v = minfer.OrtValue.ortvalue_from_numpy(np.zeros((1, 10), np.float32), "opencl")
    with pytest.raises(minfer.InvalidArgument, match="no provider 'opencl'"):
        cpu.run_with_ort_values(["C"], {"A": v, "B": v})
    # a closed session's device values hold nothing
    io = sess.io_binding()
    io.bind_cpu_input("x", X)
    io.bind_output("y", "opencl")
    sess.run_with_iobinding(io)
    (d,) = io.get_outputs()
    sess._sess.close()
    with pytest.raises(minfer.InvalidArgument, match="was freed"):
        d.numpy()
