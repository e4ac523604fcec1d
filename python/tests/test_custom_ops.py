"""SessionOptions.register_custom_ops_library: a custom-op plugin loaded from
Python as the C API (minfer_options_add_plugin) and the CLI (--plugin) load
one (docs/plugins.md), tested with plugins/example (com.example Swish)."""

import glob
import os
import shutil

import numpy as np
import pytest
from onnx import TensorProto, helper

import minfer


def _example_plugin():
    """plugins/example as built beside this package (build/plugins)."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(minfer.__file__))))
    for d in (os.path.join(build, "plugins"), os.path.join(os.path.dirname(minfer.__file__), "minfer", "plugins")):
        found = glob.glob(os.path.join(d, "libminfer_plugin_example.so"))
        if found:
            return found[0]
    pytest.skip("plugins/example is not built here")


@pytest.fixture
def swish_model(tmp_path):
    return _save(tmp_path / "swish.onnx", helper.make_node("Swish", ["x"], ["y"], domain="com.example", alpha=1.5))


def _save(path, node):
    import onnx

    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def _loaded(path):
    with open("/proc/self/maps") as f:
        return any(line.split()[-1] == path for line in f if line.strip().endswith(".so"))


def test_registered_plugin_runs_its_ops(swish_model, tmp_path):
    # A copy under a name of its own, so that the library the session runs is
    # the one registered, not one the plugin search would find.
    lib = str(tmp_path / "libmy_custom_ops.so")
    shutil.copy(_example_plugin(), lib)
    so = minfer.SessionOptions()
    so.register_custom_ops_library(lib)
    sess = minfer.InferenceSession(swish_model, so, providers=["CPUExecutionProvider"])
    assert _loaded(lib)
    x = np.linspace(-4, 4, 15, dtype=np.float32).reshape(3, 5)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, x / (1 + np.exp(-1.5 * x)), rtol=1e-5, atol=1e-6)
    # The options make more sessions with it.
    sess2 = minfer.InferenceSession(swish_model, so, providers=["cpu"])
    np.testing.assert_allclose(sess2.run(None, {"x": x})[0], y, rtol=1e-6)


def test_bad_libraries_fail_at_registration(tmp_path):
    so = minfer.SessionOptions()
    with pytest.raises(minfer.Error, match="no/such/libops.so"):
        so.register_custom_ops_library("no/such/libops.so")
    junk = tmp_path / "libjunk.so"
    junk.write_bytes(b"not a shared object")
    with pytest.raises(minfer.Error, match="libjunk.so"):
        so.register_custom_ops_library(str(junk))
    # Nothing was kept: the options still make sessions.
    assert so._plugins == []
