#!/usr/bin/env bash
# The Python package's installs, each used from outside the build tree:
#
#   test_install.sh BUILD_DIR SOURCE_DIR PYTHON CPACK
#
#  1. the python3-minfer Debian package from cpack: Depends on libminfer0
#     (= the version), python3 and python3-numpy (of the ABI it was built
#     for); unpacked with libminfer0 into a fresh root (dpkg-deb -x, as
#     tests/test_packaging.sh does), `import minfer` from that root loads
#     that root's libminfer and cpu provider and runs. Installed binaries
#     carry no RPATH (Debian policy), so the root's multiarch libdir is on
#     LD_LIBRARY_PATH, where /usr/lib/<triplet> is on ld.so's path;
#  2. `pip install ./python` as written (build isolation on, offline: no
#     index) into a fresh virtual environment, with libminfer from the build
#     tree (MINFER_BUILD_DIR): the package holds its own libminfer, providers
#     and plugins, says so (get_build_info), names MIT in its metadata, and
#     runs a model with com.microsoft ops (the contrib plugin, found with no
#     option) on the fast CPU path; python3 -m minfer is the CLI it carries;
#  3. the same against the unpacked libminfer-dev through pkg-config.
# A copy of python/ and include/ is built, so the source tree stays clean.
set -euo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR PYTHON CPACK" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
python=$3
cpack=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-python-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset MINFER_PROVIDERS MINFER_PROVIDER_PATH LD_LIBRARY_PATH PKG_CONFIG_PATH PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- [${SECONDS}s] $*"; }

# Checks, from $tmp (not the source or build tree), that `import minfer` with
# the given python comes from under ROOT, that the libminfer it loaded is
# under LIBROOT, and that the cpu provider runs an Add.
check_import() { # PYTHON ROOT LIBROOT
    (cd "$tmp" && "$1" - "$2" "$3" <<'EOF') || fail "import minfer from $2"
import sys
import numpy as np
import minfer

root, libroot = sys.argv[1], sys.argv[2]
assert minfer.__file__.startswith(root), minfer.__file__
with open("/proc/self/maps") as f:
    libs = {line.split()[-1] for line in f if "libminfer.so" in line}
assert libs and all(p.startswith(libroot) for p in libs), libs
cpu = [p for p in minfer.providers() if p["name"] == "cpu"]
assert cpu and cpu[0]["usable"] and cpu[0]["path"].startswith(libroot), cpu
b = minfer.Builder(13)
b.add_input("a", "float", [1, 10])
b.add_input("b", "float", [1, 10])
b.add_node("Add", ["a", "b"], ["c"])
b.add_output("c")
s = b.session(providers=["CPUExecutionProvider"])
x = np.arange(10, dtype=np.float32).reshape(1, 10)
np.testing.assert_array_equal(s.run(None, {"a": x, "b": x})[0], 2 * x)
print("ok:", minfer.__file__, sorted(libs))
EOF
}

# ---- 1. the Debian package -------------------------------------------------------
step "cpack"
(cd "$build" && "$cpack" -G DEB -B "$tmp/pkgs" >"$tmp/cpack.log" 2>&1) ||
    { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
deb_of() {
    local f
    for f in "$tmp"/pkgs/*.deb; do
        [[ $(dpkg-deb -f "$f" Package) == "$1" ]] && { echo "$f"; return 0; }
    done
    return 1
}
pydeb=$(deb_of python3-minfer) || fail "cpack made no python3-minfer"
version=$(dpkg-deb -f "$(deb_of libminfer0)" Version) || fail "cpack made no libminfer0"
deps=$(dpkg-deb -f "$pydeb" Depends)
echo "python3-minfer: Depends: $deps"
for want in "libminfer0 (= $version)" "python3 (>= " "python3-numpy" "python3-numpy-abi"; do
    [[ $deps == *"$want"* ]] || fail "python3-minfer does not depend on $want"
done
files=$(dpkg-deb -c "$pydeb" | awk '$1 !~ /^d/ {print $6}')
for f in minfer/__init__.py minfer/__main__.py minfer/_ortvalue.py minfer/capi/onnxruntime_pybind11_state.py; do
    grep -q "/dist-packages/$f\$" <<<"$files" || fail "python3-minfer lacks $f: $files"
done
grep -q '/dist-packages/minfer/_minfer\.cpython-.*\.so$' <<<"$files" ||
    fail "python3-minfer lacks the extension: $files"

step "import minfer from the unpacked python3-minfer and libminfer0"
root=$tmp/root
for pkg in libminfer0 python3-minfer; do
    dpkg-deb -x "$(deb_of $pkg)" "$root"
done
site=$(dirname "$(dirname "$(find "$root" -path '*/dist-packages/minfer/__init__.py')")")
rootlib=$(dirname "$(find "$root" -name libminfer.so.0)")
LD_LIBRARY_PATH=$rootlib PYTHONPATH=$site check_import "$python" "$root" "$root"
out=$(cd "$tmp" && LD_LIBRARY_PATH=$rootlib PYTHONPATH=$site "$python" -m minfer info "$src/python/tests/conftest.py" 2>&1) &&
    fail "python3 -m minfer info on a non-model succeeded: $out"
[[ $out == "minfer info: "* ]] || fail "python3 -m minfer info: want a one-line reason, got: $out"

# ---- 2. pip, with libminfer from the build tree -----------------------------------
step "pip install ./python (MINFER_BUILD_DIR, build isolation, no index)"
mkdir -p "$tmp/src"
cp -r "$src/python" "$src/include" "$src/LICENSE" "$tmp/src/"
# Not a user's earlier in-tree pip build.
rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info
"$python" -m venv --system-site-packages "$tmp/venv" || fail "python3 -m venv (python3-venv)"
MINFER_BUILD_DIR=$build "$tmp/venv/bin/pip" install -v "$tmp/src/python" \
    >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log" >&2; fail "pip install"; }
grep -q "minfer build: carries its own libminfer" "$tmp/pip.log" ||
    fail "pip install did not say what it links: $(grep 'minfer build' "$tmp/pip.log")"
check_import "$tmp/venv/bin/python" "$tmp/venv" "$tmp/venv"
(cd "$tmp" && "$tmp/venv/bin/python" - "$tmp/venv" <<'EOF') || fail "the pip-installed package"
import glob
import sys
from math import erf

import numpy as np
from onnx import TensorProto, helper

import minfer

venv = sys.argv[1]
info = minfer.get_build_info()
assert "carries its own libminfer" in info and "libminfer_plugin_contrib.so" in info, info
meta = glob.glob(venv + "/lib/python3*/site-packages/minfer-*.dist-info/METADATA")
text = open(meta[0]).read()
assert "License: MIT" in text and "License :: OSI Approved :: MIT License" in text, text[:400]
usable = {p["name"]: p["path"] for p in minfer.providers() if p["usable"]}
assert all(path.startswith(venv) for path in usable.values()), usable
# A com.microsoft model, as ORT's optimizer writes them: the package's contrib
# plugin serves it with no option set.
node = helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("com.microsoft", 1)])
model.ir_version = 8
sess = minfer.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)
(y,) = sess.run(None, {"x": x})
want = np.array([v * 0.5 * (1 + erf(v / 2 ** 0.5)) for v in x.ravel()], np.float32).reshape(2, 8)
np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
print("ok: com.microsoft Gelu on", sess.get_providers(), "|", info)
EOF

# python3 -m minfer is the CLI the package carries, run on the package's libminfer.
out=$(cd "$tmp" && PATH=/usr/bin:/bin "$tmp/venv/bin/python" -m minfer providers 2>&1) ||
    fail "python3 -m minfer providers (pip): $out"
[[ $out == *"$tmp/venv/"*"libminfer_provider_cpu.so"* ]] ||
    fail "python3 -m minfer providers (pip) does not list the package's providers: $out"
out=$(cd "$tmp" && "$tmp/venv/bin/python" -m minfer bnech x.onnx 2>&1) && fail "a mistyped command succeeded"
[[ $out == *"did you mean 'bench'"* ]] || fail "python3 -m minfer (pip) is not the CLI: $out"

# ---- 3. pip, against the unpacked libminfer-dev through pkg-config ----------------
step "pip install ./python (pkg-config minfer)"
dpkg-deb -x "$(deb_of libminfer-dev)" "$root"
pc=$(dirname "$(find "$root" -name minfer.pc)")
"$python" -m venv --system-site-packages "$tmp/venv2"
PKG_CONFIG_PATH=$pc "$tmp/venv2/bin/pip" install -v "$tmp/src/python" \
    >"$tmp/pip2.log" 2>&1 || { cat "$tmp/pip2.log" >&2; fail "pip install against libminfer-dev"; }
grep -q "minfer build: links the installed libminfer" "$tmp/pip2.log" ||
    fail "pip install did not say what it links: $(grep 'minfer build' "$tmp/pip2.log")"
check_import "$tmp/venv2/bin/python" "$tmp/venv2" "$root"
echo "python_install: all checks passed"
