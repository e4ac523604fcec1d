#!/usr/bin/env bash
# The work-group kernels (gemm_local*, conv_local*) as candidates of the
# OpenCL provider's measured choice per shape (gemm.c, conv.c, tune.c), on
# tiny_encoder (MatMul, Gemm) and squeezenet1_1 (Conv) of MODELS_DIR:
#  1. a first session writes the tuning file with the device's probes;
#  2. the file's local probe is set to 1 (what a device on which they are
#     within twice the own kernel records; on PoCL they lose), so a second
#     session times own, local1 and local2 on every shape above the
#     threshold: every data set passes `minfer test --providers opencl,cpu`
#     within rtol 1e-3, atol 1e-4 and the log shows GEMM and Conv shapes
#     timed with both variants;
#  3. every recorded choice is rewritten to local1 (3, OCL_GEMM_LOCAL1) and
#     to local2 (4): sessions that read them run those nodes on the
#     work-group kernels (the log names them) and pass again.
# Cost: about 10 s on PoCL (the work-group kernels are slow there).
#
# usage: test_opencl_tune_local.sh MINFER_CLI MODELS_DIR
set -euo pipefail

minfer=$1
models=$2
dirs=("$models/tiny_encoder" "$models/squeezenet1_1")
for d in "${dirs[@]}"; do
    [[ -d $d ]] || { echo "test_opencl_tune_local: $d not found (set MINFER_MODELS_DIR)" >&2; exit 1; }
done
sets=$(find -L "${dirs[@]}" -type d -name 'test_data_set_*' | wc -l)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-ocl-tune-local.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A tuning file of its own; the program binaries and PoCL's kernel cache
# of the caller's cache (ctest's, in the build tree) are linked in, so
# that no kernel compiles again.
mkdir -p "$tmp/cache/minfer"
if [[ -n ${XDG_CACHE_HOME:-} && -d $XDG_CACHE_HOME ]]; then
    [[ -d $XDG_CACHE_HOME/pocl ]] && ln -s "$XDG_CACHE_HOME/pocl" "$tmp/cache/pocl"
    for f in "$XDG_CACHE_HOME"/minfer/opencl-*.bin; do
        [[ -e $f ]] && ln -s "$f" "$tmp/cache/minfer/"
    done
fi
export XDG_CACHE_HOME=$tmp/cache MINFER_LOG=info
unset MINFER_OPENCL_GEMM

# run NAME: minfer test on the two models; every data set must pass.
run() {
    local rc=0 summary
    "$minfer" test --providers opencl,cpu --rtol 1e-3 --atol 1e-4 "${dirs[@]}" \
        >"$tmp/$1.out" 2>"$tmp/$1.log" || rc=$?
    summary=$(tail -n 1 "$tmp/$1.out")
    if ((rc != 0)) || [[ $summary != "$sets passed, 0 failed, 0 skipped" ]]; then
        cat "$tmp/$1.out" >&2
        grep -v "^minfer info: \(node\|value\)" "$tmp/$1.log" | tail -30 >&2
        echo "test_opencl_tune_local: $1: exit $rc, summary '$summary'" >&2
        exit 1
    fi
    if grep -q "skipping provider 'opencl'" "$tmp/$1.log"; then
        echo "test_opencl_tune_local: $1: the opencl provider was skipped" >&2
        exit 77
    fi
}

"$minfer" bench "$models/tiny_encoder/model.onnx" --providers opencl,cpu --dim seq=64 --runs 1 \
    --warmup 0 >/dev/null 2>"$tmp/probe.log" || { tail -20 "$tmp/probe.log" >&2; exit 1; }
file=$(find "$tmp/cache" -name 'opencl-tune-*.txt' | head -n 1)
if [[ -z $file ]] || ! grep -q "^probe:f32:local" "$file"; then
    grep -q "skipping provider 'opencl'" "$tmp/probe.log" && exit 77
    echo "test_opencl_tune_local: no local probe in the tuning file '$file'" >&2
    exit 1
fi
grep -v "^\(gemm2\|conv2\):" "$file" >"$tmp/kept" || true
cp "$tmp/kept" "$file"
echo "probe:f32:local256 1" >>"$file"

echo "test_opencl_tune_local: probes written (${SECONDS}s)"
run timed
grep "opencl: \(gemm2\|conv2\):" "$tmp/timed.log" | sed "s/^minfer info: opencl: //" | awk "{print \$NF}" | sort | uniq -c |
    sed "s/^/test_opencl_tune_local: chosen: /"
for key in gemm2 conv2; do
    n=$(grep -c "opencl: $key:.* local1 [0-9.]* ms, local2 [0-9.]* ms" "$tmp/timed.log" || true)
    if ((n == 0)); then
        grep "opencl: \(gemm2\|conv2\|probe\)" "$tmp/timed.log" | head >&2
        echo "test_opencl_tune_local: no $key shape timed with local1 and local2" >&2
        exit 1
    fi
    echo "test_opencl_tune_local: $n $key shape(s) timed with own, local1, local2 (${SECONDS}s)"
done

for v in 3:local1 4:local2; do
    sed -i "s/^\(\(gemm2\|conv2\):[^ ]*\) [0-9]*/\1 ${v%%:*}/" "$file"
    run "${v#*:}"
    g=$(grep -c "GEMM on ${v#*:}" "$tmp/${v#*:}.log" || true)
    c=$(grep -c "convolution on ${v#*:} (tuning cache)" "$tmp/${v#*:}.log" || true)
    if ((g == 0 || c == 0)); then
        echo "test_opencl_tune_local: cached ${v#*:}: $g GEMM and $c Conv nodes on it; want both" >&2
        exit 1
    fi
    echo "test_opencl_tune_local: $sets data sets pass with $g GEMM and $c Conv nodes on ${v#*:} (cached, ${SECONDS}s)"
done
