#!/usr/bin/env bash
# The ONNX backend node cases listed for the CPU provider (CASES), run
# through `minfer test` with the oneDNN provider first in the preference
# list: every listed case must pass, as it does on the CPU provider alone.
#
# usage: test_onednn_nodes.sh MINFER_CLI NODE_DATA_DIR CASES
set -euo pipefail

minfer=$1
node_dir=$2
cases=$3
[[ -d $node_dir ]] || { echo "test_onednn_nodes: $node_dir not found (install libonnx-testdata)" >&2; exit 1; }

dirs=()
while read -r name; do
    [[ -z $name || $name == \#* ]] && continue
    [[ -d $node_dir/$name ]] || { echo "test_onednn_nodes: no case $name in $node_dir" >&2; exit 1; }
    dirs+=("$node_dir/$name")
done <"$cases"

sets=0
for d in "${dirs[@]}"; do
    sets=$((sets + $(find "$d" -maxdepth 1 -type d -name 'test_data_set_*' | wc -l)))
done

out=$(mktemp "${TMPDIR:-/tmp}/minfer-onednn-nodes.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
"$minfer" test --providers onednn,cpu --atol 1e-7 "${dirs[@]}" | tee "$out" || rc=$?
summary=$(tail -n 1 "$out")
if ((rc != 0)); then
    echo "test_onednn_nodes: minfer test exited with $rc" >&2
    exit 1
fi
if [[ "$summary" != "$sets passed, 0 failed, 0 skipped" ]]; then
    echo "test_onednn_nodes: summary '$summary', want '$sets passed, 0 failed, 0 skipped'" >&2
    exit 1
fi
