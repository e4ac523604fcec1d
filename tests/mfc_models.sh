#!/usr/bin/env bash
# Compiled models give the outputs of their ONNX sessions, bit for bit:
# each shared model is compiled for each provider list, and run from the
# ONNX file and from the compiled file on the same inputs with the same
# list; the written outputs must be identical files. Also checks that
# `minfer info` describes a compiled file and that the session from it
# skipped the optimizer.
#   mfc_models.sh MINFER MODELS_DIR [PROVIDER_LIST...]   (default: cpu onednn,cpu opencl,cpu)
# A provider list whose first provider does not load here is skipped (said so).
set -u
minfer=$1
models=$2
shift 2
lists=("$@")
[[ ${#lists[@]} -gt 0 ]] || lists=(cpu onednn,cpu opencl,cpu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
checked=0

for list in "${lists[@]}"; do
    first=${list%%,*}
    if ! "$minfer" run "$models/squeezenet1_1/model.onnx" --providers "$first" --strict >/dev/null 2>&1; then
        echo "skip: provider list '$list' ('$first' does not load or run here)"
        continue
    fi
    for dir in "$models"/*/; do
        name=$(basename "$dir")
        [[ -f $dir/model.onnx && -d $dir/test_data_set_0 ]] || continue
        out=$tmp/$name.$first
        mkdir -p "$out"
        if ! "$minfer" compile "$dir/model.onnx" -o "$out/model.mfc" --providers "$list" >"$out/compile.txt" 2>&1; then
            echo "FAIL: compile $name for $list:"; cat "$out/compile.txt"; fail=1; continue
        fi
        "$minfer" run "$dir/model.onnx" --providers "$list" --inputs "$dir/test_data_set_0" --outputs "$out/onnx" >/dev/null 2>"$out/err1" || { echo "FAIL: run $name.onnx ($list)"; cat "$out/err1"; fail=1; continue; }
        MINFER_LOG=info "$minfer" run "$out/model.mfc" --providers "$list" --inputs "$dir/test_data_set_0" --outputs "$out/mfc" >/dev/null 2>"$out/err2" || { echo "FAIL: run $name.mfc ($list)"; cat "$out/err2"; fail=1; continue; }
        if ! grep -q "not optimized again" "$out/err2"; then
            echo "FAIL: the session from $name.mfc ($list) did not skip the optimizer"; fail=1
        fi
        n=0
        for f in "$out"/onnx/output_*.pb; do
            n=$((n + 1))
            if ! cmp -s "$f" "$out/mfc/$(basename "$f")"; then
                echo "FAIL: $name ($list): $(basename "$f") differs between the ONNX and the compiled session"; fail=1
            fi
        done
        [[ $n -gt 0 ]] || { echo "FAIL: $name ($list): no outputs written"; fail=1; }
        checked=$((checked + 1))
        echo "ok: $name ($list): $n outputs identical"
    done
done

# minfer info on a compiled file: format version, sections, compiled-for settings.
m=$(ls "$tmp"/*/model.mfc 2>/dev/null | head -1)
if [[ -n $m ]]; then
    "$minfer" info "$m" >"$tmp/info.txt" 2>&1 || { echo "FAIL: info on $m"; cat "$tmp/info.txt"; fail=1; }
    for want in "compiled model: format version 1" "section WGTS" "compiled for: optimization level 3"; do
        grep -q "$want" "$tmp/info.txt" || { echo "FAIL: info does not say '$want':"; cat "$tmp/info.txt"; fail=1; }
    done
fi
[[ $checked -gt 0 ]] || { echo "FAIL: nothing was compared"; fail=1; }
exit $fail
