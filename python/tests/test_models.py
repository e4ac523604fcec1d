"""Models through Python against their reference outputs: the shared models
(both data sets) and the whole ONNX backend test suite (libonnx-testdata),
less the cases tests/conformance_expected.txt lists with their reasons. In
sanitizer builds (MINFER_SANITIZED=1), where a case costs a hundred times
more, a slice of it covering the element types, sequences, optionals and
control flow; `conformance` runs the whole suite there through the CLI."""

import glob
import os

import numpy as np
import pytest

import minfer
from conftest import MODELS_DIR, ONNX_DATA_DIR

# One or more cases of each kind of value the bindings convert: float,
# int64, bool, string, float16, double, uint8, sequences, optionals, and
# models with several inputs and outputs, Loop, If and Scan.
SLICE_CASES = [
    "test_add_bcast", "test_relu", "test_matmul_4d", "test_gemm_all_attributes",
    "test_conv_with_strides_and_asymmetric_padding", "test_maxpool_2d_pads", "test_softmax_axis_1",
    "test_batchnorm_example", "test_argmax_default_axis_example", "test_gather_0",
    "test_concat_3d_axis_negative_1", "test_reshape_negative_dim", "test_slice_neg_steps",
    "test_equal", "test_where_example", "test_cast_FLOAT_to_FLOAT16", "test_cast_FLOAT16_to_DOUBLE",
    "test_cast_STRING_to_FLOAT", "test_cast_FLOAT_to_STRING", "test_dequantizelinear",
    "test_quantizelinear", "test_top_k", "test_split_equal_parts_1d", "test_expand_dim_changed",
    "test_layer_normalization_2d_axis0", "test_nonzero_example", "test_identity_sequence",
    "test_sequence_insert_at_back", "test_optional_get_element", "test_optional_has_element_empty",
    "test_if", "test_if_seq", "test_if_opt", "test_loop11", "test_loop13_seq",
    "test_loop16_seq_none", "test_scan9_sum", "test_sequence_map_add_2_sequences",
    "test_cast_BFLOAT16_to_FLOAT",
]
EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                        "conformance_expected.txt")


def _backend_cases():
    """Case paths relative to the suite's root ("node/test_relu")."""
    if os.environ.get("MINFER_SANITIZED") == "1":
        return ["node/" + name for name in SLICE_CASES]
    if not os.path.isdir(ONNX_DATA_DIR):
        return []
    with open(EXPECTED) as f:
        expected = {line.split()[0] for line in f if line.strip() and not line.startswith("#")}
    cases = (os.path.relpath(os.path.dirname(m), ONNX_DATA_DIR)
             for m in glob.glob(os.path.join(ONNX_DATA_DIR, "*", "*", "model.onnx")))
    return sorted(c for c in cases if c not in expected)


BACKEND_CASES = _backend_cases()


def _kind(arg):
    if arg.type.startswith("seq("):
        return "sequence"
    if arg.type.startswith("optional("):
        return "optional"
    return "tensor"


def _assert_close(got, want, where):
    if want is None or got is None:
        assert got is None and want is None, where
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for g, w in zip(got, want):
            _assert_close(g, w, where)
    elif want.dtype == object or want.dtype.kind in "biu":
        assert got.shape == want.shape, where
        assert got.tolist() == want.tolist(), where
    else:
        assert got.dtype == want.dtype, where
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=where)


def _check_case(case, providers):
    sess = minfer.InferenceSession(os.path.join(case, "model.onnx"), providers=providers)
    inputs, outputs = sess.get_inputs(), sess.get_outputs()
    sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    assert sets, case
    for data in sets:
        n_in = len(glob.glob(os.path.join(data, "input_*.pb")))
        feed = {a.name: minfer.load_tensor(os.path.join(data, "input_%d.pb" % i), _kind(a))
                for i, a in enumerate(inputs[:n_in])}
        got = sess.run(None, feed)
        for i, a in enumerate(outputs):
            want = minfer.load_tensor(os.path.join(data, "output_%d.pb" % i), _kind(a))
            _assert_close(got[i], want, "%s output %s" % (data, a.name))
    return len(sets)


@pytest.mark.parametrize("name", ["squeezenet1_1", "mobilenet_v2", "resnet18", "tiny_encoder"])
def test_shared_model(name):
    case = os.path.join(MODELS_DIR, name)
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    assert _check_case(case, ["cpu"]) >= 1


def test_backend_suite_found():
    if not os.path.isdir(ONNX_DATA_DIR):
        pytest.skip("no ONNX backend test data at %s (libonnx-testdata)" % ONNX_DATA_DIR)
    assert len(BACKEND_CASES) >= (len(SLICE_CASES) if os.environ.get("MINFER_SANITIZED") == "1"
                                  else 1000)


@pytest.mark.parametrize("name", BACKEND_CASES)
def test_backend_case(name):
    case = os.path.join(ONNX_DATA_DIR, name)
    if not os.path.isdir(ONNX_DATA_DIR):
        pytest.skip("no ONNX backend test data at %s (libonnx-testdata)" % ONNX_DATA_DIR)
    assert os.path.isdir(case), case
    _check_case(case, ["cpu"])


def test_shared_model_on_onednn():
    """The same reference through ORT's name for the oneDNN provider, when it loads here."""
    if "DnnlExecutionProvider" not in minfer.get_available_providers():
        pytest.skip("the oneDNN provider does not load here")
    case = os.path.join(MODELS_DIR, "squeezenet1_1")
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    _check_case(case, ["DnnlExecutionProvider", "CPUExecutionProvider"])


def test_precision_bf16_config_entry():
    """minfer.precision = bf16 reaches the session: on a CPU with bf16 products
    resnet18's outputs move by bfloat16's rounding (and no further), elsewhere
    they are float's; another value is an InvalidArgument naming it."""
    if "DnnlExecutionProvider" not in minfer.get_available_providers():
        pytest.skip("the oneDNN provider does not load here")
    case = os.path.join(MODELS_DIR, "resnet18")
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    model = os.path.join(case, "model.onnx")
    data = os.path.join(case, "test_data_set_0")
    x = minfer.load_tensor(os.path.join(data, "input_0.pb"))
    want = minfer.load_tensor(os.path.join(data, "output_0.pb"))
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.precision", "bf16")
    sess = minfer.InferenceSession(model, so, providers=["DnnlExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=0.05, atol=0.05)
    assert np.argmax(got) == np.argmax(want)
    with open("/proc/cpuinfo") as f:
        bf16_cpu = any(w in f.read().split() for w in ("avx512_bf16", "amx_bf16"))
    if bf16_cpu and not os.environ.get("DNNL_MAX_CPU_ISA"):
        assert np.max(np.abs(got - want)) > 1e-4, "bf16 was asked for and not used"
    so = minfer.SessionOptions()
    so.add_session_config_entry("minfer.precision", "fp16")
    with pytest.raises(minfer.InvalidArgument, match="precision 'fp16'"):
        minfer.InferenceSession(model, so, providers=["DnnlExecutionProvider"])
