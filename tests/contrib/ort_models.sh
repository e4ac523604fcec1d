#!/bin/bash
# ONNX Runtime-optimized models (levels extended and all) run with the
# contrib plugin and compared with ORT's own outputs (rtol 1e-3, atol 1e-4).
# usage: ort_models.sh MINFER PLUGIN CACHE_DIR [small]
#   make_ort_optimized.py makes the cases into CACHE_DIR once (ORT peer:
#   onnxruntime-node in ~/.cache/minfer-peer, installed by
#   ../shared/peer/ort-bench); later runs reuse them. With "small" (the
#   sanitizer builds) only squeezenet1_1 and the small exported transformer
#   and CNN models run. Exit 77 (skip) without the peer or python3-onnx.
set -u
minfer=$1 plugin=$2 cache=$3 small=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null || { echo "SKIP: python3-onnx missing"; exit 77; }
names=()
[ "$small" = small ] && names=(squeezenet1_1 bert_tiny gpt_tiny cnn_tiny)
# MINFER_CONTRIB_ZOO=DIR adds every case of DIR (the tests/zoo corpus) as a
# source (about 2.5 min of ORT and 1.4 GB of cases more; not in the default run).
from=()
[ -z "$small" ] && [ -n "${MINFER_CONTRIB_ZOO:-}" ] && from=(--from "$MINFER_CONTRIB_ZOO")
/usr/bin/python3 "$here/make_ort_optimized.py" "$cache" "${names[@]}" "${from[@]}" 2>/dev/null
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no ONNX Runtime peer"; exit 77; }
[ $rc -ne 0 ] && { echo "FAIL: make_ort_optimized.py ($rc)"; exit 1; }
cases=()
if [ ${#names[@]} -eq 0 ]; then cases=("$cache"); else
  for n in "${names[@]}"; do cases+=("$cache/${n}_extended" "$cache/${n}_all"); done
fi
out=$("$minfer" test --plugin "$plugin" --rtol 1e-3 --atol 1e-4 "${cases[@]}" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit 1
. "$here/check_results.sh"
check_results "$out" "${cases[@]}"
