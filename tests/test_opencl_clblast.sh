#!/usr/bin/env bash
# The OpenCL provider's CLBlast back end (GEMM, convgemm) and its tuning
# cache, on two model test cases of MODELS_DIR (PoCL in CI):
#  1. gemm=clblast (MINFER_OPENCL_GEMM): every data set of tiny_encoder
#     (MatMul, Gemm) and squeezenet1_1 (Conv) passes `minfer test
#     --providers opencl,cpu` within rtol 1e-3, atol 1e-4, and the log names
#     the nodes CLBlast took (so a pass cannot come from the own kernels);
#  2. gemm=auto with an empty cache times (the device probe, and the shapes
#     when CLBlast is promising) and writes opencl-tune-*.txt; a second
#     session reads its choices from that file and times nothing.
# Exits 77 (skipped) when the provider was built without CLBlast.
#
# Cost: about 30 s of CPU on PoCL (CLBlast compiles its kernels in each
# process), several minutes of wall time on the loaded 2-core CI machine;
# under ASan tiny_encoder only.
#
# usage: test_opencl_clblast.sh MINFER_CLI MODELS_DIR
set -euo pipefail

minfer=$1
models=$2
[[ -d $models ]] || { echo "test_opencl_clblast: $models not found (set MINFER_MODELS_DIR)" >&2; exit 1; }
# The sanitizer pass (ASAN_OPTIONS set) shrinks to tiny_encoder: CLBlast's
# convolutions on PoCL are slow, and its code is not instrumented anyway.
names=(tiny_encoder squeezenet1_1)
[[ -z ${ASAN_OPTIONS:-} ]] || names=(tiny_encoder)
dirs=()
for m in "${names[@]}"; do
    [[ -d $models/$m ]] || { echo "test_opencl_clblast: no $m in $models" >&2; exit 1; }
    dirs+=("$models/$m")
done
sets=$(find -L "${dirs[@]}" -type d -name 'test_data_set_*' | wc -l)
((sets > 0)) || { echo "test_opencl_clblast: no test_data_set_* under $models" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-ocl-clblast.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache MINFER_LOG=info

rc=0
MINFER_OPENCL_GEMM=clblast "$minfer" test --providers opencl,cpu --rtol 1e-3 --atol 1e-4 \
    "${dirs[@]}" >"$tmp/out" 2>"$tmp/log" || rc=$?
summary=$(tail -n 1 "$tmp/out")
if ((rc != 0)) || [[ $summary != "$sets passed, 0 failed, 0 skipped" ]]; then
    cat "$tmp/out" >&2
    grep -v "^minfer info: \(node\|value\)" "$tmp/log" | tail -30 >&2
    echo "test_opencl_clblast: exit $rc, summary '$summary', want '$sets passed, 0 failed, 0 skipped'" >&2
    exit 1
fi
if grep -q "skipping provider 'opencl'" "$tmp/log"; then
    echo "test_opencl_clblast: the opencl provider was skipped" >&2
    exit 1
fi
taken=$(grep -c "GEMM on CLBlast (gemm=clblast)" "$tmp/log" || true)
convs=$(grep -c "convolution on CLBlast (gemm=clblast)" "$tmp/log" || true)
if ((taken == 0 && convs == 0)); then
    echo "test_opencl_clblast: no node ran on CLBlast: provider built without it" >&2
    exit 77
fi
if ((taken == 0 || (convs == 0 && ${#names[@]} > 1))); then
    echo "test_opencl_clblast: $taken GEMM and $convs Conv nodes on CLBlast; want both" >&2
    exit 1
fi
echo "test_opencl_clblast: $sets data sets pass with $taken GEMM and $convs Conv nodes (prepared) on CLBlast"

# The tuning cache: a model with GEMMs above the tuning threshold.
model=$models/tiny_encoder/model.onnx
rm -rf "$tmp/cache"
for pass in 1 2; do
    "$minfer" bench "$model" --providers opencl,cpu --dim seq=64 --runs 1 --warmup 0 \
        >/dev/null 2>"$tmp/tune$pass.log"
done
# Every timing logs "own kernel T ms, " and the other candidates' times.
timed1=$(grep -c "own kernel [0-9.]* ms, " "$tmp/tune1.log" || true)
timed2=$(grep -c "own kernel [0-9.]* ms, " "$tmp/tune2.log" || true)
files=$(find "$tmp/cache" -name 'opencl-tune-*.txt' | wc -l)
lines=$(cat "$tmp"/cache/minfer/opencl-tune-*.txt 2>/dev/null | wc -l)
if ((timed1 == 0 || files != 1 || lines != timed1 || timed2 != 0)); then
    grep -v "^minfer info: \(node\|value\)" "$tmp/tune1.log" | tail -20 >&2
    echo "test_opencl_clblast: tuning: first session timed $timed1 GEMMs, file(s) $files with" \
         "$lines line(s), second session timed $timed2 (want >0, 1, as many, 0)" >&2
    exit 1
fi
echo "test_opencl_clblast: $timed1 timing(s) made once, then read from the tuning cache"
