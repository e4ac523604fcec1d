#!/usr/bin/env bash
# The plugin surface of the `minfer` CLI (docs/plugins.md): --plugin FILE on
# every command, MINFER_PLUGINS, discovery from the build tree, `minfer
# plugins` and what `minfer info` shows for a plugin node, on a model file
# with a com.example Swish node between two standard ops.
#
# usage: plugins_cli.sh MINFER_CLI BUILD_PLUGIN_DIR FAKE_PLUGIN_DIR
set -euo pipefail

minfer=$1
plugdir=$2
fakedir=$3
example=$plugdir/libminfer_plugin_example.so
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-plugins.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 "$here/plugins/make_swish_model.py" "$tmp/swish.onnx" 1.5

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# ok NAME CMD...: CMD succeeds.
ok() {
    local name=$1
    shift
    if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
        fail "$name: exit status $?: $(tail -n 3 "$tmp/err")"
        return 1
    fi
}

# err NAME PATTERN CMD...: CMD exits 1 or 2 (not a signal) and stderr matches PATTERN.
err() {
    local name=$1 pattern=$2 rc=0
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [[ $rc -ne 1 && $rc -ne 2 ]]; then
        fail "$name: exit status $rc, want 1 or 2"
    elif ! grep -Eq -- "$pattern" "$tmp/err"; then
        fail "$name: stderr does not match '$pattern': $(cat "$tmp/err")"
    fi
}

# --plugin on each command that takes a model, by path and by name.
ok "run --plugin path" "$minfer" run "$tmp/swish.onnx" --plugin "$example" --dim N=3
ok "run --plugin=name" "$minfer" run --plugin=example "$tmp/swish.onnx" --dim N=2
ok "bench --plugin" "$minfer" bench --plugin "$example" "$tmp/swish.onnx" --dim N=2 --runs 2
ok "optimize --plugin" "$minfer" optimize --plugin "$example" "$tmp/swish.onnx" -o "$tmp/opt.onnx"
ok "run the optimized file" "$minfer" run --plugin "$example" "$tmp/opt.onnx" --dim N=2
ok "info --plugin" "$minfer" info --plugin "$example" "$tmp/swish.onnx"
grep -Eq "swish.*plugin|plugin.*swish" "$tmp/out" ||
    fail "info does not show node swish on provider plugin: $(cat "$tmp/out")"

# The environment variable, and discovery from the build tree with neither.
ok "MINFER_PLUGINS" env MINFER_PLUGINS="$example" "$minfer" run "$tmp/swish.onnx" --dim N=2
ok "discovered" "$minfer" run "$tmp/swish.onnx" --dim N=2

# Bad plugins fail every command before any work, naming the file.
err "missing file" "no such file" "$minfer" run --plugin "$tmp/nothing.so" "$tmp/swish.onnx"
err "bad ABI" "libminfer_plugin_fpbadabi.so.*plugin ABI version 99" \
    "$minfer" info --plugin "$fakedir/libminfer_plugin_fpbadabi.so" "$tmp/swish.onnx"
err "missing symbol" "does not export minfer_plugin_entry" \
    "$minfer" run --plugin "$fakedir/libminfer_plugin_fpnosym.so" "$tmp/swish.onnx"
err "no value" "--plugin needs" "$minfer" run "$tmp/swish.onnx" --plugin
err "duplicate op" "com.example:Swish.*libminfer_plugin_(example|fptwin).so.*libminfer_plugin_(example|fptwin).so" \
    "$minfer" run --plugin "$example" --plugin "$fakedir/libminfer_plugin_fptwin.so" \
    "$tmp/swish.onnx" --dim N=2
err "bad MINFER_PLUGINS" "MINFER_PLUGINS.*plugin ABI version 99" \
    env MINFER_PLUGINS="$fakedir/libminfer_plugin_fpbadabi.so" "$minfer" run "$tmp/swish.onnx"

# minfer plugins: the build tree's example with its op; a --plugin that does
# not load is listed with the reason; --json.
ok "plugins" "$minfer" plugins --plugin "$fakedir/libminfer_plugin_fpnosym.so"
grep -q "$plugdir" "$tmp/out" || fail "plugins: search path lacks $plugdir"
grep -Eq "^  example +1\.0 +yes +.*libminfer_plugin_example\.so" "$tmp/out" ||
    fail "plugins: no usable example line: $(cat "$tmp/out")"
grep -q "op: com.example:Swish (opset 1+)" "$tmp/out" || fail "plugins: no Swish op line"
grep -q "why: .*does not export minfer_plugin_entry" "$tmp/out" ||
    fail "plugins: the broken --plugin has no reason: $(cat "$tmp/out")"
ok "plugins --json" "$minfer" plugins --json
python3 - "$tmp/out" <<'PY' || fail "plugins --json: not the expected JSON"
import json, sys
d = json.load(open(sys.argv[1]))
ex = [p for p in d["plugins"] if p["name"] == "example"]
assert ex and ex[0]["usable"] and "com.example:Swish (opset 1+)" in ex[0]["ops"], d
assert isinstance(d["search_path"], list) and d["search_path"], d
PY

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "plugins_cli: all passed"
