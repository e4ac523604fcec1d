#!/usr/bin/env bash
# The ONNX backend node cases of CASES through `minfer test --providers
# opencl,cpu`: every case the CPU provider passes must pass with the OpenCL
# provider first in the list (nodes it declines run on cpu). The 3-D pools
# (absent from the shared CASES list) are added here; `minfer info` must
# place them on opencl.
#
# usage: test_opencl_nodes.sh MINFER_CLI NODE_DATA_DIR CASES
set -euo pipefail

minfer=$1
node_dir=$2
cases=$3
[[ -d $node_dir ]] || { echo "test_opencl_nodes: $node_dir not found (install libonnx-testdata)" >&2; exit 1; }

extra=(test_maxpool_3d_default test_averagepool_3d_default)
dirs=()
while read -r name; do
    [[ -z $name || $name == \#* ]] && continue
    [[ -d $node_dir/$name ]] || { echo "test_opencl_nodes: no case $name in $node_dir" >&2; exit 1; }
    dirs+=("$node_dir/$name")
done < <(cat "$cases"; printf '%s\n' "${extra[@]}")

for name in "${extra[@]}"; do
    # The whole report first: grep -q would stop reading early, and the
    # writer's SIGPIPE would fail the pipeline.
    info=$("$minfer" info --providers opencl,cpu "$node_dir/$name/model.onnx" 2>&1) || true
    if ! grep -Eq '^ +1 +opencl|opencl +1$' <<<"$info"; then
        echo "test_opencl_nodes: $name is not placed on opencl:" >&2
        echo "$info" >&2
        exit 1
    fi
done

sets=0
for d in "${dirs[@]}"; do
    sets=$((sets + $(find "$d" -maxdepth 1 -type d -name 'test_data_set_*' | wc -l)))
done

out=$(mktemp "${TMPDIR:-/tmp}/minfer-ocl-nodes.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
"$minfer" test --providers opencl,cpu --atol 1e-7 "${dirs[@]}" | tee "$out" || rc=$?
summary=$(tail -n 1 "$out")
if ((rc != 0)) || [[ "$summary" != "$sets passed, 0 failed, 0 skipped" ]]; then
    echo "test_opencl_nodes: exit $rc, summary '$summary', want '$sets passed, 0 failed, 0 skipped'" >&2
    exit 1
fi
