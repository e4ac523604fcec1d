"""python3 -m minfer is the minfer command line (test, --dim, --shape,
--json, exit codes, a closed pipe), and the Python fallback without one."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minfer
import minfer.__main__ as cli_main
from conftest import MODELS_DIR


def _minfer(*args, **kw):
    env = dict(os.environ, MINFER_PROVIDERS="cpu")
    return subprocess.run([sys.executable, "-m", "minfer", *args], capture_output=True, text=True, env=env, **kw)


def _case(name):
    case = os.path.join(MODELS_DIR, name)
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    return case


@pytest.fixture(autouse=True)
def _needs_the_cli():
    if cli_main._cli()[0] is None:
        pytest.skip("no minfer CLI here")


def test_it_is_the_cli():
    r = _minfer("--help")
    assert r.returncode == 0
    for command in ("test PATH", "run MODEL", "info MODEL", "bench MODEL", "providers", "plugins"):
        assert command in r.stdout, r.stdout
    version = _minfer("--version")
    assert version.returncode == 0 and minfer.__version__ in version.stdout


def test_test_command_runs_a_case():
    r = _minfer("test", _case("squeezenet1_1"), "--providers", "cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed, 0 failed" in r.stdout, r.stdout


def test_run_writes_the_reference_output(tmp_path):
    case = _case("squeezenet1_1")
    r = _minfer("run", os.path.join(case, "model.onnx"), "--inputs", os.path.join(case, "test_data_set_0"),
                "--outputs", str(tmp_path), "--providers", "cpu")
    assert r.returncode == 0, r.stderr
    got = minfer.load_tensor(tmp_path / "output_0.pb")
    want = minfer.load_tensor(os.path.join(case, "test_data_set_0", "output_0.pb"))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_info_json_with_dim_and_shape(dynamic_model):
    r = _minfer("info", dynamic_model, "--json", "--dim", "batch=3", "--shape", "x=3x5")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert isinstance(doc, dict) and doc, r.stdout[:300]
    assert "3" in json.dumps(doc.get("inputs", doc))


def test_failures_exit_1_with_a_reason(tmp_path):
    r = _minfer("run", str(tmp_path / "missing.onnx"))
    assert r.returncode == 1
    assert "missing.onnx" in r.stderr
    assert _minfer("frobnicate").returncode == 2


def test_closed_pipe_is_quiet():
    # The reader goes away at once: no "[Errno 32] Broken pipe", no traceback.
    p = subprocess.Popen([sys.executable, "-m", "minfer", "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, MINFER_PROVIDERS="cpu"))
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait()
    assert "Broken pipe" not in err and "Traceback" not in err, err


def test_python_fallback(add_model, dynamic_model, capsys):
    """Without a CLI, Python's run, bench and info; a closed pipe is quiet there too."""
    assert cli_main.python_main(["bench", add_model, "--runs", "5", "--warmup", "1",
                                 "--providers", "CPUExecutionProvider"]) == 0
    assert "runs: 5" in capsys.readouterr().out
    assert cli_main.python_main(["info", dynamic_model]) == 0
    assert "x tensor(float) ['batch', 'n']" in capsys.readouterr().out
    code = ("import sys, minfer.__main__ as m; sys.exit(m.python_main(['info', %r]))" % dynamic_model)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait()
    assert "Broken pipe" not in err and "Traceback" not in err, err
