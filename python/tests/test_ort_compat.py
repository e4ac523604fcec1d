"""A script written for onnxruntime runs unchanged with `import minfer as onnxruntime`."""

import os
import subprocess
import sys

import pytest

from conftest import HERE, MODELS_DIR


def test_ort_script_runs_with_minfer(tmp_path):
    if not os.path.isdir(MODELS_DIR):
        pytest.skip("no shared models at %s" % MODELS_DIR)
    script = os.path.join(HERE, "ort_script.py")
    with open(script) as f:
        imports = [line for line in f if "onnxruntime" in line and line.startswith(("import", "from"))]
    # The only minfer-specific line is the import.
    assert imports[0].startswith("import minfer as onnxruntime")
    assert all("minfer" not in line for line in imports[1:])
    r = subprocess.run([sys.executable, script, MODELS_DIR, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("ok: ")
    assert set(last[4:].split(", ")) >= {"mobilenet_v2", "resnet18", "squeezenet1_1", "tiny_encoder"}
