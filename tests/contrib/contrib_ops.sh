#!/bin/bash
# Every plugins/contrib op against a composition of standard ONNX ops.
# usage: contrib_ops.sh MINFER PLUGIN WORK_DIR
#   make_op_cases.py writes the cases (model.onnx with the contrib op,
#   composition.onnx in standard ops, random inputs) into WORK_DIR; the CPU
#   provider runs each composition into output_K.pb, and `minfer test
#   --plugin PLUGIN` then checks the contrib ops against those outputs.
#   Cases under WORK_DIR/bad must each fail with the message in expect.txt.
# Exit 77 (skip) when /usr/bin/python3 lacks onnx or numpy (python3-onnx).
set -u
minfer=$1 plugin=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null || { echo "SKIP: python3-onnx missing"; exit 77; }
rm -rf "$work" && mkdir -p "$work" || exit 1
/usr/bin/python3 "$here/make_op_cases.py" "$work" || { echo "FAIL: make_op_cases.py"; exit 1; }
# Malformed nodes and inputs (bad/): a clear error naming what is wrong, no crash.
for d in "$work"/bad/*/; do
  "$minfer" run "$d/model.onnx" --plugin "$plugin" --inputs "$d/test_data_set_0" >"$work/bad.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ] || ! grep -qF "$(cat "$d/expect.txt")" "$work/bad.log"; then
    echo "FAIL: bad/$(basename "$d") (exit $rc), expected an error with: $(cat "$d/expect.txt")"
    cat "$work/bad.log"; exit 1
  fi
done
echo "$(ls -d "$work"/bad/*/ | wc -l) malformed cases refused with their messages"
mv "$work/bad" "$work.bad" && rm -rf "$work.bad"
for d in "$work"/*/; do
  ds=$d/test_data_set_0
  if ! "$minfer" run "$d/composition.onnx" --providers cpu --inputs "$ds" --outputs "$ds" >"$work/run.log" 2>&1; then
    echo "FAIL: the composition of $(basename "$d") did not run:"; cat "$work/run.log"; exit 1
  fi
done
out=$("$minfer" test --plugin "$plugin" --rtol 1e-3 --atol 1e-4 "$work" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || exit 1
# Every case must pass (a skipped one would hide an op that does not run),
# but for the default-domain ops (check_results.sh).
. "$here/check_results.sh"
check_results "$out" "$work"
