#!/usr/bin/env bash
# The session's default thread count (threads 0) is one per CPU the process
# may run on: its affinity mask, not the machine's online CPUs, so that a
# process under taskset or a cpuset does not crowd its CPUs (issue 18).
# An explicit count is kept whatever the mask.
#
# usage: threads_default.sh MINFER_CLI
set -uo pipefail
cli=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
command -v taskset >/dev/null || { echo "FAIL: taskset (util-linux) is needed"; exit 1; }

# A one-node model (Relu on [1, 1024]): cheap to run, under the sanitizers too.
model=$tmp/relu.onnx
/usr/bin/python3 - "$model" <<'PY' || { echo "FAIL: could not write the model (python3-onnx)"; exit 1; }
import sys
from onnx import TensorProto, helper, save
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1024])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
save(m, sys.argv[1])
PY

# threads_of [taskset CPUS] [--threads N]: the pool size minfer bench reports.
threads_of() {
    local pin=()
    if [[ ${1:-} == taskset ]]; then
        pin=(taskset -c "$2")
        shift 2
    fi
    "${pin[@]}" "$cli" bench "$model" --providers cpu --runs 1 --warmup 0 --json "$@" 2>/dev/null |
        sed -n 's/.*"threads": *\([0-9]*\).*/\1/p'
}

allowed=$(nproc) # nproc counts the affinity mask too
first=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
n=$(threads_of)
[[ $n == "$allowed" ]] || bad "default threads '$n', want $allowed (nproc)"
n=$(threads_of taskset "$first")
[[ $n == 1 ]] || bad "under taskset -c $first: '$n' threads, want 1"
n=$(threads_of taskset "$first" --threads 3)
[[ $n == 3 ]] || bad "--threads 3 under taskset -c $first: '$n' threads"
((fails == 0)) && echo "default threads: $allowed here, 1 under taskset -c $first; --threads kept"
exit $((fails > 0))
