#!/usr/bin/env bash
# Installs the Debian 12 packages minfer builds, tests and runs with.
# The one list of build dependencies: .ci/run and the README use this script.
# Runs apt-get as root, through sudo when started as another user.
set -euo pipefail

packages=(
    build-essential
    cmake
    pkg-config
    clang
    libclang-rt-14-dev  # libFuzzer and the sanitizer runtimes for clang (CI's fuzz run)
    libprotobuf-c-dev
    protobuf-c-compiler
    libcmocka-dev
    libjansson-dev  # the one JSON library: profiles, --json, bench --json
    libxxhash-dev   # the checksums of compiled model files (docs/format.md)
    libdnnl-dev
    ocl-icd-opencl-dev
    opencl-c-headers
    pocl-opencl-icd
    libclblast-dev  # CLBlast: the OpenCL provider's second GEMM back end (docs/opencl.md)
    oclgrind        # runs the OpenCL kernels in a checking simulator (ctest's opencl_oclgrind)
    libonnx-testdata
    dpkg-dev  # dpkg-shlibdeps and file: Depends of the cpack Debian packages
    file
    lintian   # Debian's package checker: no errors on the .debs (ctest's `packaging`)
    help2man  # man pages of minfer-tools, made from `minfer ... --help` at build time
    man-db    # man -l: the packaging test renders those pages
    graphviz  # dot: renders `minfer info --svg` and the tests' DOT output
    python3   # tests/check_trace.py validates profiling traces
    python3-onnx   # tests/verify_with_onnx.py reads the test suite's .pb files
    python3-numpy  # ... and compares minfer run's outputs with them
    python3-dev    # the Python package (python/): its extension's headers ...
    python3-pytest # ... its tests (ctest's `python`)
    python3-setuptools  # ... and `pip install` of it, offline (ctest's `python_install`)
    python3-wheel
    python3-pip
    python3-venv
    python3-torch        # tests/zoo/build_zoo.py exports the model corpus (ctest's `zoo`)
    python3-torchvision  # ... its architectures
    nodejs  # the ONNX Runtime peer (../shared/peer/ort_run.js) makes the corpus's references
)

as_root=()
if [[ $(id -u) -ne 0 ]]; then
    as_root=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
# npm installs the peer's onnxruntime-node (pinned) on first use. NodeSource's
# nodejs package carries its own npm and conflicts with Debian's.
if ! command -v npm >/dev/null; then
    "${as_root[@]}" apt-get install -y --no-install-recommends npm
fi
