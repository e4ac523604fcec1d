#!/usr/bin/env bash
# Hostile files and directories at the command line (issue 16, items 5, 9):
#  1. minfer test on a directory with three symbolic links to '.' (3^32
#     paths to walk before) finds its one case once and ends;
#  2. a FIFO named input_0.pb fails its data set, saying so, at once, and a
#     FIFO given as the model fails run, info and optimize at once;
#  3. --profile /dev/full (or a link to a device) fails with exit 1, with
#     --force too, and prints no "profile written"; a profile that cannot be
#     written whole (a file size limit) fails and leaves nothing behind;
#  4. an existing --profile, --outputs file, optimize -o or info --dot file
#     is refused without --force and left as it was; --force replaces it, and
#     replaces a symbolic link rather than writing through it;
#  5. a command whose standard output cannot be written exits 1.
# Every command runs under `timeout`, so a hang fails instead of blocking.
#
# usage: hostile_files.sh MINFER_CLI MODELS_DIR
set -u
cli=$1
models=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}
run() { timeout 60 "$cli" "$@"; }

sq=$models/squeezenet1_1
m=$sq/model.onnx
[[ -f $m && -f $sq/test_data_set_0/output_0.pb ]] || { echo "FAIL: $sq missing"; exit 1; }

# ---- 1. symbolic link loops -----------------------------------------------------
mkdir "$tmp/loop"
for l in a b c; do ln -s . "$tmp/loop/$l"; done
ln -s "$sq" "$tmp/loop/sq"
sets=$(find "$sq" -maxdepth 1 -name 'test_data_set_*' | wc -l)
out=$(run test --providers cpu "$tmp/loop" 2>&1)
rc=$?
[[ $rc -eq 0 && $out == *"$sets passed, 0 failed, 0 skipped"* ]] ||
    bad "minfer test over three links to '.': rc $rc, '$out'"
echo "symbolic link loops: ok"

# ---- 2. a FIFO as input_0.pb ----------------------------------------------------
mkdir -p "$tmp/fifo/test_data_set_0"
ln -s "$m" "$tmp/fifo/model.onnx"
mkfifo "$tmp/fifo/test_data_set_0/input_0.pb"
ln -s "$sq/test_data_set_0/output_0.pb" "$tmp/fifo/test_data_set_0/output_0.pb"
out=$(run test --providers cpu "$tmp/fifo" 2>&1)
rc=$?
[[ $rc -eq 1 && $out == *"input_0.pb"*"is not a regular file (it is a FIFO)"* ]] ||
    bad "minfer test with a FIFO input_0.pb: rc $rc, '$out'"
out=$(run run --providers cpu --inputs "$tmp/fifo/test_data_set_0" "$m" 2>&1)
rc=$?
[[ $rc -eq 1 && $out == *"it is a FIFO"* ]] || bad "minfer run --inputs with a FIFO: rc $rc, '$out'"
mkfifo "$tmp/fifo/model-fifo.onnx"
for cmd in run info optimize; do
    extra=(--providers cpu)
    [[ $cmd == optimize ]] && extra=(-o "$tmp/fifo/opt.onnx")
    out=$(run $cmd "${extra[@]}" "$tmp/fifo/model-fifo.onnx" 2>&1)
    rc=$?
    [[ $rc -eq 1 && $out == *"model-fifo.onnx"*"is not a regular file (it is a FIFO)"* ]] ||
        bad "minfer $cmd with a FIFO as the model: rc $rc, '$out'"
done
echo "FIFO input files: ok"

# ---- 3. profiles that cannot be written -------------------------------------------
for force in "" --force; do
    out=$(run run --providers cpu --profile /dev/full $force "$m" 2>&1 >/dev/null)
    rc=$?
    [[ $rc -eq 1 && $out == *"cannot write the profile to '/dev/full'"*"character device"* &&
        $out != *"profile written"* ]] || bad "--profile /dev/full $force: rc $rc, '$out'"
done
ln -s /dev/full "$tmp/full.json"
out=$(run run --providers cpu --force --profile "$tmp/full.json" "$m" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $out == *"a link to a character device"* ]] ||
    bad "--profile through a link to /dev/full: rc $rc, '$out'"
mkdir "$tmp/small"
out=$( (ulimit -f 4 && trap '' XFSZ && run run --providers cpu --profile "$tmp/small/p.json" "$m") 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $out == *"File too large"* && $out != *"profile written"* ]] ||
    bad "a profile over the file size limit: rc $rc, '$out'"
[[ -z $(ls -A "$tmp/small") ]] || bad "a failed profile left files: $(ls -A "$tmp/small")"
out=$(run run --providers cpu --profile "$tmp/small/p.json" "$tmp/no-such-model.onnx" 2>&1)
[[ $? -eq 1 && -z $(ls -A "$tmp/small") ]] || bad "a failed session left a profile: '$out'"
echo "profile write errors: ok"

# ---- 4. existing files: refused without --force, replaced (not followed) with it
echo old >"$tmp/p.json"
out=$(run run --providers cpu --profile "$tmp/p.json" "$m" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $out == *"it exists (--force replaces it)"* && $(cat "$tmp/p.json") == old ]] ||
    bad "an existing --profile file: rc $rc, '$out'"
run run --providers cpu --force --profile "$tmp/p.json" "$m" >/dev/null 2>&1 &&
    python3 -m json.tool "$tmp/p.json" >/dev/null || bad "--force --profile did not write a profile"
echo target >"$tmp/target"
ln -s target "$tmp/link.json"
run run --providers cpu --profile "$tmp/link.json" "$m" >/dev/null 2>&1 &&
    bad "a --profile symbolic link was replaced without --force"
run run --providers cpu --force --profile "$tmp/link.json" "$m" >/dev/null 2>&1 ||
    bad "--force --profile over a symbolic link failed"
[[ $(cat "$tmp/target") == target && -f $tmp/link.json && ! -L $tmp/link.json ]] ||
    bad "--force --profile wrote through the symbolic link"

run run --providers cpu --outputs "$tmp/out" "$m" >/dev/null || bad "run --outputs failed"
sum=$(cksum <"$tmp/out/output_0.pb")
out=$(run run --providers cpu --outputs "$tmp/out" "$m" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $out == *"cannot write output 0 to '$tmp/out/output_0.pb': it exists"* &&
    $(cksum <"$tmp/out/output_0.pb") == "$sum" ]] || bad "an existing output_0.pb: rc $rc, '$out'"
run run --providers cpu --force --outputs "$tmp/out" "$m" >/dev/null || bad "run --force --outputs failed"

run optimize --level 1 "$m" -o "$tmp/opt.onnx" >/dev/null || bad "optimize -o failed"
out=$(run optimize --level 1 "$m" -o "$tmp/opt.onnx" 2>&1 >/dev/null)
[[ $? -eq 1 && $out == *"it exists (--force replaces it)"* ]] || bad "optimize over an existing file: '$out'"
run optimize --level 1 --force "$m" -o "$tmp/opt.onnx" >/dev/null || bad "optimize --force failed"

# compile -o naming its own source (by another path too): refused, --force
# or not, the model untouched (it was overwritten by its compiled form)
cp "$m" "$tmp/self.onnx"
sum=$(cksum <"$tmp/self.onnx")
out=$(run compile --providers cpu --force "$tmp/self.onnx" -o "$tmp/self.onnx" 2>&1 >/dev/null)
[[ $? -eq 1 && $out == *"it is the model being compiled"* && $(cksum <"$tmp/self.onnx") == "$sum" ]] ||
    bad "compile -o its own source: '$out'"
out=$(run compile --providers cpu --force "$tmp/self.onnx" -o "$tmp/./self.onnx" 2>&1 >/dev/null)
[[ $? -eq 1 && $out == *"it is the model being compiled"* && $(cksum <"$tmp/self.onnx") == "$sum" ]] ||
    bad "compile -o its own source by another path: '$out'"

run info --providers cpu --dot "$tmp/g.dot" "$m" >/dev/null || bad "info --dot failed"
out=$(run info --providers cpu --dot "$tmp/g.dot" "$m" 2>&1 >/dev/null)
[[ $? -eq 1 && $out == *"cannot write the graph to"*"it exists"* ]] || bad "info --dot over an existing file: '$out'"
run info --providers cpu --force --dot "$tmp/g.dot" "$m" >/dev/null || bad "info --force --dot failed"

leftover=$(find "$tmp" -name '*.part' -o -name '*.tmp')
[[ -z $leftover ]] || bad "temporary files left: $leftover"
echo "existing files and --force: ok"

# ---- 5. standard output that cannot be written ---------------------------------------
out=$(run run --providers cpu "$m" 2>&1 >/dev/full)
rc=$?
[[ $rc -eq 1 && $out == *"error writing standard output"* ]] || bad "run >/dev/full: rc $rc, '$out'"
echo "standard output errors: ok"

exit $fail
