#!/usr/bin/env bash
# Bad inputs to the `minfer` CLI: each must fail with exit status 1 or 2 (not
# a signal) and a reason on stderr. Deterministic: every broken file is
# derived from the shared models or a fixed-seed generator.
#
# usage: bad_inputs.sh MINFER_CLI MAKE_BAD_MODELS MODELS_DIR
set -euo pipefail

minfer=$1
make_bad=$2
models=$3
src=$models/squeezenet1_1/model.onnx
[[ -f $src ]] || { echo "bad_inputs: $src not found" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-bad-inputs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect_error NAME PATTERN LINES -- CMD...: CMD must exit 1 or 2; stderr's
# last line must match PATTERN (grep -E); stderr must be at most LINES lines
# (the one-line reason, plus any warnings the case expects).
expect_error() {
    local name=$1 pattern=$2 max_lines=$3
    shift 4
    local rc=0
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    local lines last
    lines=$(wc -l <"$tmp/err")
    last=$(tail -n 1 "$tmp/err")
    if [[ $rc -ne 1 && $rc -ne 2 ]]; then
        if ((rc >= 128)); then
            fail "$name: killed by signal $((rc - 128))"
        else
            fail "$name: exit status $rc, want 1 or 2"
        fi
    elif [[ -z $last ]]; then
        fail "$name: no reason on stderr"
    elif ! grep -qE -- "$pattern" <<<"$last"; then
        fail "$name: reason '$last' does not match /$pattern/"
    elif ((lines > max_lines)); then
        fail "$name: $lines lines on stderr, want at most $max_lines"
    else
        echo "ok: $name: $last"
        return 0
    fi
    sed 's/^/    stderr: /' "$tmp/err"
}

# Truncated model: the first 64 KiB of a valid one.
head -c 65536 "$src" >"$tmp/truncated.onnx"
expect_error truncated-model "truncated\.onnx" 1 -- "$minfer" run "$tmp/truncated.onnx" --providers cpu
expect_error truncated-model-info "truncated\.onnx" 1 -- "$minfer" info "$tmp/truncated.onnx" --providers cpu

# Cut at a few more places: inside the header, mid-initializer, one byte short.
size=$(stat -c %s "$src")
for cut in 7 1000 $((size / 2)) $((size - 1)); do
    head -c "$cut" "$src" >"$tmp/cut$cut.onnx"
    expect_error "truncated-at-$cut" "cut$cut\.onnx" 1 -- "$minfer" run "$tmp/cut$cut.onnx" --providers cpu
done

# Random bytes.
"$make_bad" random "$tmp/random.onnx" 4096 12345
expect_error random-bytes "random\.onnx" 1 -- "$minfer" run "$tmp/random.onnx" --providers cpu
"$make_bad" random "$tmp/random2.onnx" 100000 987654321
expect_error random-bytes-2 "random2\.onnx" 1 -- "$minfer" run "$tmp/random2.onnx" --providers cpu

# Empty file.
: >"$tmp/empty.onnx"
expect_error empty-file "empty\.onnx" 1 -- "$minfer" run "$tmp/empty.onnx" --providers cpu

# Nonexistent file.
expect_error missing-file "does-not-exist\.onnx" 1 -- "$minfer" run "$tmp/does-not-exist.onnx" --providers cpu

# A directory where a model file should be.
mkdir "$tmp/adir.onnx"
expect_error directory-as-model "adir\.onnx.*([Dd]irectory|not a regular file)" 1 -- "$minfer" run "$tmp/adir.onnx" --providers cpu

# A node reads a value that nothing produces.
"$make_bad" dangle "$src" "$tmp/dangling.onnx" >"$tmp/dangle.txt"
read -r dvalue dnode <"$tmp/dangle.txt"
expect_error dangling-value "$dvalue" 1 -- "$minfer" run "$tmp/dangling.onnx" --providers cpu
expect_error dangling-value-info "$dvalue" 1 -- "$minfer" info "$tmp/dangling.onnx" --providers cpu
echo "    (dangling input of node '$dnode')"

# An input of the wrong shape.
mkdir "$tmp/wrong_shape"
"$make_bad" wrong-shape "$src" "$tmp/wrong_shape/input_0.pb" >"$tmp/shape.txt"
read -r iname idim <"$tmp/shape.txt"
expect_error wrong-input-shape "$iname.*$idim" 1 -- "$minfer" run "$src" --providers cpu --inputs "$tmp/wrong_shape"

# An input directory without input_0.pb.
mkdir "$tmp/no_inputs"
expect_error missing-input-file "input_0\.pb|no_inputs" 1 -- "$minfer" run "$src" --providers cpu --inputs "$tmp/no_inputs"

# An input file that is not a TensorProto.
mkdir "$tmp/bad_pb"
"$make_bad" random "$tmp/bad_pb/input_0.pb" 333 42
expect_error garbage-input-pb "input_0\.pb" 1 -- "$minfer" run "$src" --providers cpu --inputs "$tmp/bad_pb"

# A provider list without any usable provider.
expect_error no-usable-provider "nosuch" 2 -- "$minfer" run "$src" --providers nosuch

# Unknown command and option: usage errors.
expect_error unknown-command "frobnicate" 1 -- "$minfer" frobnicate
expect_error unknown-option "--no-such-flag" 1 -- "$minfer" run "$src" --no-such-flag

# A provider name that is neither installed nor one of minfer's is a typo,
# even before cpu: one line listing what is installed (issue 24).
expect_error unknown-provider "unknown provider 'nosuch' \(installed: .*cpu" 1 -- \
    "$minfer" run "$src" --providers nosuch,cpu

if ((failures)); then
    echo "$failures bad-input case(s) failed"
    exit 1
fi
echo "all bad-input cases passed"
