"""ONNX Runtime's provider names and options, as an ORT user writes them:
the fast CPU path by ORT's name, ORT's order, and ORT options that never
fail a session or change its providers (each ignored one warned about once,
by name)."""

import os
import warnings

import numpy as np
import onnx
import pytest

import minfer


def _usable():
    return [p["name"] for p in minfer.providers() if p["usable"]]


def _fast_cpu():
    return ["onednn", "cpu"] if "onednn" in _usable() else ["cpu"]


def _no_warnings():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def test_cpu_execution_provider_is_the_fast_cpu_path(add_model):
    sess = minfer.InferenceSession(add_model, providers=["CPUExecutionProvider"])
    assert sess.info()["providers"] == _fast_cpu()
    assert sess.get_providers()[-1] == "CPUExecutionProvider"
    # The reference keeps its own name.
    assert minfer.InferenceSession(add_model, providers=["cpu"]).info()["providers"] == ["cpu"]
    a = np.arange(10, dtype=np.float32).reshape(1, 10)
    np.testing.assert_array_equal(sess.run(None, {"A": a, "B": a})[0], 2 * a)


def test_available_providers_in_ort_order(add_model):
    avail = minfer.get_available_providers()
    assert avail[-1] == "CPUExecutionProvider"
    assert len(avail) == len(set(avail))
    if "onednn" in _usable():
        assert avail[0] == "DnnlExecutionProvider"
    sess = minfer.InferenceSession(add_model, providers=minfer.get_available_providers())
    assert sess.info()["providers"][0] == ("onednn" if "onednn" in _usable() else sess.info()["providers"][0])
    assert sess.info()["providers"][-1] == "cpu"
    assert "cpu" not in sess.info()["providers"][:-1]


@pytest.mark.skipif("onednn" not in _usable(), reason="the oneDNN provider is not installed")
def test_dnnl_options_in_ort_form(add_model):
    ctx = _no_warnings()
    try:
        # use_arena=1 is what minfer does: nothing to say.
        sess = minfer.InferenceSession(add_model, providers=[("DnnlExecutionProvider", {"use_arena": "1"})])
    finally:
        ctx.__exit__(None, None, None)
    assert sess.info()["providers"] == ["onednn", "cpu"]
    # A key with no meaning here: one warning naming it, the provider kept.
    with pytest.warns(UserWarning, match="bogus"):
        sess = minfer.InferenceSession(add_model, providers=[("DnnlExecutionProvider", {"bogus": 1})])
    assert sess.info()["providers"] == ["onednn", "cpu"]
    with pytest.warns(UserWarning, match="use_arena"):
        minfer.InferenceSession(add_model, providers=["DnnlExecutionProvider"],
                                provider_options=[{"use_arena": "0"}])
    # A key minfer's provider takes reaches it.
    sess = minfer.InferenceSession(add_model, providers=[("DnnlExecutionProvider", {"split": "off"})])
    assert sess.get_provider_options()["DnnlExecutionProvider"] == {"split": "off"}


def test_cpu_provider_option_warns_once(add_model):
    opts = {"arena_extend_strategy": "kSameAsRequested"}
    with pytest.warns(UserWarning, match="arena_extend_strategy") as rec:
        sess = minfer.InferenceSession(add_model, providers=[("CPUExecutionProvider", opts)])
        minfer.InferenceSession(add_model, providers=[("CPUExecutionProvider", opts)])
    assert len([w for w in rec if "arena_extend_strategy" in str(w.message)]) == 1
    assert sess.info()["providers"] == _fast_cpu()


def test_other_ort_providers_fall_back_as_in_ort(add_model):
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        sess = minfer.InferenceSession(add_model, providers=["CUDAExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_optimized_model_filepath_writes_the_model(tmp_path):
    from conftest import MODELS_DIR

    src = os.path.join(MODELS_DIR, "squeezenet1_1", "model.onnx")
    if not os.path.exists(src):
        pytest.skip("no shared squeezenet1_1")
    out = tmp_path / "opt.onnx"
    so = minfer.SessionOptions()
    so.optimized_model_filepath = str(out)
    sess = minfer.InferenceSession(src, so, providers=["cpu"])
    assert out.exists()
    model = onnx.load(str(out))
    assert len(model.graph.node) < len(onnx.load(src).graph.node)
    name = sess.get_inputs()[0].name
    shape = [d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    again = minfer.InferenceSession(str(out), providers=["cpu"])
    np.testing.assert_allclose(again.run(None, {name: x})[0], sess.run(None, {name: x})[0],
                               rtol=1e-4, atol=1e-4)
    # From bytes too.
    out2 = tmp_path / "opt2.onnx"
    so.optimized_model_filepath = str(out2)
    with open(src, "rb") as f:
        minfer.InferenceSession(f.read(), so, providers=["cpu"])
    assert out2.stat().st_size == out.stat().st_size


def test_ignored_session_options_warn_once(add_model):
    so = minfer.SessionOptions()
    so.enable_mem_pattern = False
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.load_model_format", "ONNX")  # what minfer does
    with pytest.warns(UserWarning) as rec:
        minfer.InferenceSession(add_model, so, providers=["cpu"])
        minfer.InferenceSession(add_model, so, providers=["cpu"])
    msgs = [str(w.message) for w in rec]
    assert len([m for m in msgs if "enable_mem_pattern" in m]) == 1, msgs
    assert len([m for m in msgs if "session.intra_op.allow_spinning" in m]) == 1, msgs
    assert not [m for m in msgs if "load_model_format" in m], msgs
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.warns(UserWarning, match="ConstantFolding"):
        minfer.InferenceSession(add_model, providers=["cpu"], disabled_optimizers=["ConstantFolding"])


def test_misspelt_minfer_config_key_is_an_error(add_model):
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.sheduler", "parallel")
    with pytest.raises(minfer.InvalidArgument, match="minfer.sheduler.*minfer.scheduler"):
        minfer.InferenceSession(add_model, so, providers=["cpu"])
