#!/usr/bin/env bash
# The opt-in bfloat16 precision (docs/providers.md, "bfloat16"):
#  1. on a CPU with AVX512_BF16 or AMX, --precision bf16 on onednn,cpu says it
#     computes in bfloat16 (info log), changes resnet18's and tiny_encoder's
#     outputs (a default-tolerance `minfer test` fails: the products really
#     read bfloat16) and keeps them within bfloat16's rounding of ONNX
#     Runtime's (rtol/atol 0.05); MINFER_PRECISION=bf16 gives the same bytes;
#  2. with the ISA lowered below bf16 (DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI,
#     the case of a CPU without it) it warns and computes in float: the
#     default-tolerance test passes;
#  3. --precision fp32 is float; a bad --precision is a usage error (2), a bad
#     MINFER_PRECISION an error at creation naming it.
# Skipped (77) in a build without oneDNN; part 1 is skipped, said, on a CPU
# without bf16 products.
#   precision_bf16.sh MINFER MODELS_DIR HAVE_ONEDNN
set -u
minfer=$1
models=$2
have_onednn=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

if [[ $have_onednn != 1 ]]; then
    echo "skip: this build has no oneDNN provider"
    exit 77
fi
cases=("$models/resnet18" "$models/tiny_encoder")

if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    for c in "${cases[@]}"; do
        n=$(basename "$c")
        MINFER_LOG=info "$minfer" test "$c" --providers onednn,cpu --precision bf16 \
            >"$tmp/$n.strict" 2>&1 && bad "$n: bf16 outputs equal float ones at the default tolerance (bf16 not used?)"
        grep -q "precision bf16: convolutions and products with constant weights in bfloat16" \
            "$tmp/$n.strict" || bad "$n: no info line saying bfloat16 is used: $(head -3 "$tmp/$n.strict")"
        "$minfer" test "$c" --providers onednn,cpu --precision bf16 --rtol 0.05 --atol 0.05 \
            >"$tmp/$n.loose" 2>&1 || bad "$n: bf16 outside bfloat16's rounding: $(tail -3 "$tmp/$n.loose")"
        in="$c/test_data_set_0"
        "$minfer" run "$c/model.onnx" --providers onednn,cpu --precision bf16 --inputs "$in" \
            --outputs "$tmp/$n.opt" >/dev/null 2>&1 || bad "$n: run --precision bf16 failed"
        MINFER_PRECISION=bf16 "$minfer" run "$c/model.onnx" --providers onednn,cpu --inputs "$in" \
            --outputs "$tmp/$n.env" >/dev/null 2>&1 || bad "$n: MINFER_PRECISION=bf16 run failed"
        for f in "$tmp/$n.opt"/output_*.pb; do
            cmp -s "$f" "$tmp/$n.env/$(basename "$f")" || bad "$n: MINFER_PRECISION=bf16 differs from --precision bf16 ($(basename "$f"))"
        done
        echo "ok $n: bf16 used, within 0.05 of the reference"
    done
else
    echo "note: this CPU has no AVX512_BF16/AMX: part 1 (bf16 products) not run here"
fi

for c in "${cases[@]}"; do
    n=$(basename "$c")
    DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI "$minfer" test "$c" --providers onednn,cpu --precision bf16 \
        >"$tmp/$n.noisa" 2>&1 || bad "$n: without bf16 products, --precision bf16 is not float: $(tail -3 "$tmp/$n.noisa")"
    grep -q "neither AVX512_BF16 nor AMX; computing in float" "$tmp/$n.noisa" ||
        bad "$n: no warning that bf16 falls back to float: $(head -3 "$tmp/$n.noisa")"
    "$minfer" test "$c" --providers onednn,cpu --precision fp32 >"$tmp/$n.fp32" 2>&1 ||
        bad "$n: --precision fp32 is not float: $(tail -3 "$tmp/$n.fp32")"
    echo "ok $n: float without bf16 products and with fp32"
done

"$minfer" run "${cases[0]}/model.onnx" --precision fp16 >/dev/null 2>"$tmp/usage"
rc=$?
[[ $rc == 2 ]] || bad "--precision fp16 exited $rc, not 2"
grep -q -- "--precision 'fp16': use fp32 or bf16" "$tmp/usage" || bad "--precision fp16 message: $(cat "$tmp/usage")"
MINFER_PRECISION=half "$minfer" run "${cases[0]}/model.onnx" >/dev/null 2>"$tmp/env"
rc=$?
[[ $rc != 0 ]] || bad "MINFER_PRECISION=half was accepted"
grep -q "MINFER_PRECISION='half' is not a precision (fp32, bf16)" "$tmp/env" || bad "MINFER_PRECISION=half message: $(cat "$tmp/env")"

[[ $fail == 0 ]] && echo "precision_bf16: all checks passed"
exit $fail
