"""python3 -m minfer run|bench|info."""

import os
import subprocess
import sys

import numpy as np
import pytest

import minfer
from conftest import MODELS_DIR


def _minfer(*args):
    env = dict(os.environ, MINFER_PROVIDERS="cpu")
    return subprocess.run([sys.executable, "-m", "minfer", *args], capture_output=True, text=True, env=env)


def test_run_writes_the_reference_output(tmp_path):
    case = os.path.join(MODELS_DIR, "squeezenet1_1")
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    r = _minfer("run", os.path.join(case, "model.onnx"), "--inputs", os.path.join(case, "test_data_set_0"),
                "--outputs", str(tmp_path), "--providers", "cpu")
    assert r.returncode == 0, r.stderr
    got = minfer.load_tensor(tmp_path / "output_0.pb")
    want = minfer.load_tensor(os.path.join(case, "test_data_set_0", "output_0.pb"))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_bench_and_info(add_model, dynamic_model):
    r = _minfer("bench", add_model, "--runs", "50", "--warmup", "5", "--providers", "CPUExecutionProvider")
    assert r.returncode == 0, r.stderr
    assert "runs: 50" in r.stdout and "python run, ms: median" in r.stdout
    r = _minfer("info", dynamic_model)
    assert r.returncode == 0, r.stderr
    assert "x tensor(float) ['batch', 'n']" in r.stdout
    assert "nodes: 2" in r.stdout and "memory (dynamic dimensions at 1): arena" in r.stdout


def test_failures_exit_1_with_a_reason(tmp_path):
    r = _minfer("run", str(tmp_path / "missing.onnx"))
    assert r.returncode == 1
    assert r.stderr.startswith("minfer run: ") and "missing.onnx" in r.stderr
    assert _minfer("bench", "x.onnx", "--runs", "0").returncode == 2
    assert _minfer("frobnicate").returncode == 2
