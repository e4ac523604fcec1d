"""A script written for onnxruntime runs unchanged with `import minfer as onnxruntime`."""

import glob
import os
import subprocess
import sys

import pytest

import minfer

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
    plugin = _example_plugin()
    r = subprocess.run([sys.executable, script, MODELS_DIR, str(tmp_path)] + ([plugin] if plugin else []),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    last = lines[-1]
    assert last.startswith("ok: ")
    assert set(last[4:].split(", ")) >= {"mobilenet_v2", "resnet18", "squeezenet1_1", "tiny_encoder"}
    # Both data sets of the transformer, at their own shapes, and the custom op ran.
    assert sum(line.startswith("tiny_encoder test_data_set_") for line in lines) == 2, r.stdout
    assert any(line.startswith("custom ops: com.example Swish") for line in lines) == bool(plugin), r.stdout
    # CPUExecutionProvider is the fast CPU path: oneDNN runs the CNNs where it is built.
    if "DnnlExecutionProvider" in minfer.get_available_providers():
        for name in ("mobilenet_v2", "resnet18", "squeezenet1_1"):
            assert "providers %s: DnnlExecutionProvider," % name in r.stdout, r.stdout


def _example_plugin():
    """plugins/example's library, as built beside this package, or None."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(minfer.__file__))))
    for d in (os.path.join(build, "plugins"), os.path.join(os.path.dirname(minfer.__file__), "minfer", "plugins")):
        found = glob.glob(os.path.join(d, "libminfer_plugin_example.so"))
        if found:
            return found[0]
    return None
