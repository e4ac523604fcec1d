#!/usr/bin/env bash
# Generates the seed corpora and runs each libFuzzer target for a bounded
# time, replaying the kept regression inputs first.
#   run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET [WORK_DIR]
# BUILD_DIR is a build configured with CC=clang -DMINFER_FUZZ=ON and
# CMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined. Prints each
# target's executions; exits non-zero on a crash, leak or timeout (the
# reproducer is left in WORK_DIR/TARGET/crashes/, to be minimised with
# -minimize_crash=1 and added to tests/fuzz/regressions/TARGET/).
set -euo pipefail
build=$1 secs=$2
work=${3:-$build/fuzz-work}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
models=${MINFER_MODELS_DIR:-$src/../shared/models}
nodes=${MINFER_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
export MINFER_PROVIDERS= MINFER_PROVIDER_PATH=
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

rm -rf "$work"
for t in model tensor builder graph mfc mfc_struct; do mkdir -p "$work/$t/corpus" "$work/$t/crashes"; done

# model: the node test models, the cases' small models, and skeletons
# of the shared models.
while read -r name; do
  case $name in ''|\#*) continue ;; esac
  f=$nodes/$name/model.onnx
  [ -f "$f" ] && cp "$f" "$work/model/corpus/$name.onnx"
  for pb in "$nodes/$name"/test_data_set_0/*.pb; do
    [ -f "$pb" ] && cp "$pb" "$work/tensor/corpus/$name-$(basename "$pb")"
  done
done < "$src/tests/onnx_node_cases.txt"
for m in "$models"/*/model.onnx; do
  [ -f "$m" ] || continue
  n=$(basename "$(dirname "$m")")
  "$build/tests/fuzz/fuzz_seeds" skeleton "$m" "$work/model/corpus/skeleton-$n.onnx" || true
  for pb in "$(dirname "$m")"/test_data_set_0/input_*.pb; do
    [ -f "$pb" ] && [ "$(stat -c %s "$pb")" -le 1048576 ] && cp "$pb" "$work/tensor/corpus/$n-$(basename "$pb")"
  done
done
"$build/tests/fuzz/fuzz_seeds" builder "$work/builder/corpus"
"$build/tests/fuzz/fuzz_seeds" graph "$work/graph/corpus"
# mfc: the node test models compiled (every fourth one listed), by the
# target itself.
grep -v '^#' "$src/tests/onnx_node_cases.txt" | awk 'NF && NR % 4 == 0' |
  while read -r name; do [ -f "$nodes/$name/model.onnx" ] && echo "$nodes/$name/model.onnx"; done > "$work/mfc/models.txt"
FUZZ_MFC_SEEDS="$work/mfc/corpus" FUZZ_MFC_MODELS="$work/mfc/models.txt" "$build/tests/fuzz/fuzz_mfc"
# mfc_struct (the section-by-section mutator) starts from the same files.
cp "$work/mfc/corpus"/* "$work/mfc_struct/corpus/"

status=0
for t in model tensor builder graph mfc mfc_struct; do
  bin=$build/tests/fuzz/fuzz_$t
  reg=$here/regressions/$t
  if [ -d "$reg" ] && [ -n "$(ls -A "$reg" 2>/dev/null)" ]; then
    echo "fuzz_$t: replaying $(ls "$reg" | wc -l) regression inputs"
    # The same per-input time limit as the fuzzing below: some inputs
    # were hangs.
    "$bin" -runs=0 -timeout=20 -rss_limit_mb=4096 "$reg"/* > "$work/$t/regressions.log" 2>&1 || { echo "fuzz_$t: a regression input fails"; tail -40 "$work/$t/regressions.log"; status=1; }
  fi
  # FUZZ_DETERMINISTIC=1 (CI): a fixed seed and a fixed number of runs per
  # target instead of a time limit, so a CI run explores exactly what a run
  # here explored and cannot fail on a machine's speed or luck.
  if [ "${FUZZ_DETERMINISTIC:-0}" = 1 ]; then
    case $t in model) n=60000 ;; mfc|mfc_struct) n=20000 ;; tensor) n=3000000 ;; graph) n=20000 ;; *) n=150000 ;; esac
    limit="-seed=1 -runs=$n"
  else
    limit="-max_total_time=$secs"
  fi
  echo "fuzz_$t: seeds $(ls "$work/$t/corpus" | wc -l), $limit"
  if ! "$bin" $limit -timeout=20 -rss_limit_mb=4096 -max_len=1048576 \
        -print_final_stats=1 -artifact_prefix="$work/$t/crashes/" \
        "$work/$t/corpus" > "$work/$t/fuzz.log" 2>&1; then
    echo "fuzz_$t: FAILED"; grep -E "ERROR|SUMMARY|Test unit written|#0 |#1 |#2 |#3 " "$work/$t/fuzz.log" | head -30
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/$t/fuzz.log" | sed "s/^/fuzz_$t: /"
done
exit $status
