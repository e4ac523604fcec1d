#!/usr/bin/env bash
# The diagnostics of the `minfer` command (docs/diagnostics.md):
#  1. bench --profile on ResNet-18 writes a trace that `python3 -m json.tool`
#     accepts and check_trace.py validates (one event per node per run, with
#     op, provider, shapes and FLOPs; Conv FLOPs > 0; build and run events);
#     bench prints one latency line and the per-op-type table, and
#     its --json output stays valid JSON with those figures;
#  2. run --profile and --check-nan; an unwritable profile path fails early;
#  3. MINFER_LOG=verbose info --providers fakerefuse,cpu logs the reason the
#     first provider declined every node it declined, and info prints it;
#     --strict then fails naming the nodes;
#  4. info --dot on tiny_encoder: every node declared once, filled with its
#     provider's colour from the legend; `dot -Tsvg` renders it and --svg
#     works (skipped, saying so, without Graphviz); without `dot` on PATH,
#     --svg fails with one line naming the graphviz package.
#
# usage: diagnostics.sh MINFER_CLI MODELS_DIR FAKE_PROVIDER_DIR CHECK_TRACE_PY
set -u
cli=$1
models=$2
fakes=$3
check_trace=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "FAIL: $*"
    fail=1
}

if ! command -v python3 >/dev/null; then
    echo "FAIL: python3 is needed (tools/install-deps.sh installs it)"
    exit 1
fi

resnet=$models/resnet18/model.onnx
squeeze=$models/squeezenet1_1/model.onnx
encoder=$models/tiny_encoder/model.onnx
for m in "$resnet" "$squeeze" "$encoder"; do
    [[ -f $m ]] || { echo "FAIL: model $m missing"; exit 1; }
done

# Nodes that run (not folded into constants), from `minfer info`.
running_nodes() {
    awk '/^nodes per provider:/{on=1; next} on && /^  /{if ($1 != "(constant)") n += $2; next}
         on{exit} END{print n + 0}' <<<"$1"
}

# ---- 1. bench --profile ------------------------------------------------------
info=$("$cli" info --providers cpu "$resnet") || bad "info resnet18 failed"
nodes=$(running_nodes "$info")
[[ $nodes -gt 0 ]] || bad "no running nodes counted in 'minfer info' of resnet18"
trace=$tmp/bench.json
out=$("$cli" bench --providers cpu --runs 2 --warmup 1 --profile "$trace" "$resnet") ||
    bad "bench --profile failed: $out"
python3 -m json.tool "$trace" >/dev/null || bad "python3 -m json.tool rejects the bench trace"
# warm-up and timed runs are all profiled
python3 "$check_trace" "$trace" --runs 3 --nodes "$nodes" --flops-op Conv ||
    bad "check_trace.py rejects the bench trace"
grep -q '^latency: *min .* ms, median .* p90 .* mean .* max .* runs/s$' <<<"$out" ||
    bad "bench prints no latency for 2 runs: $out"
grep -q '^time per op type' <<<"$out" || bad "bench --profile prints no op-type table"
grep -Eq '^  (minfer:Fused)?Conv +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+ +([0-9.]+%|-)$' <<<"$out" ||
    bad "the op-type table has no Conv row with count, time, share, GFLOPS and share of peak"
grep -Eq '^  float [0-9]+ GFLOPS, int8 [0-9]+ GOPS' <<<"$out" ||
    bad "bench --profile prints no measured peak: $out"
json=$("$cli" bench --providers cpu --runs 2 --warmup 0 --json --profile "$tmp/b2.json" "$squeeze") ||
    bad "bench --json --profile failed"
python3 - "$json" <<'EOF' || bad "bench --json output lacks the statistics or op types"
import json, sys
d = json.loads(sys.argv[1])
s = d["stats"]
assert s["runs"] == 2, s
assert s["min_ms"] <= s["p50_ms"] <= s["p90_ms"] <= s["max_ms"], s
assert s["throughput_per_s"] > 0, s
ops = d["op_types"]
assert ops and all(o["count"] > 0 and o["total_ms"] >= 0 for o in ops), ops
assert abs(sum(o["share"] for o in ops) - 1) < 0.01, ops
assert [o["total_ms"] for o in ops] == sorted((o["total_ms"] for o in ops), reverse=True)
assert any(o["op"].endswith("Conv") and o["gflops"] > 0 for o in ops), ops
assert d["peak_fp32_gflops"] >= 0 and d["peak_int8_gops"] >= 0, d
EOF
echo "bench --profile: ok ($nodes nodes per run)"

# ---- 2. run --profile, --check-nan -----------------------------------------------
info=$("$cli" info --providers cpu "$squeeze") || bad "info squeezenet failed"
sq_nodes=$(running_nodes "$info")
"$cli" run --providers cpu --check-nan --profile "$tmp/run.json" "$squeeze" >/dev/null ||
    bad "run --check-nan --profile failed"
python3 "$check_trace" "$tmp/run.json" --runs 1 --nodes "$sq_nodes" --flops-op Conv ||
    bad "check_trace.py rejects the run trace"
err=$("$cli" run --providers cpu --profile /nonexistent-dir/t.json "$squeeze" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $err == *"cannot write the profile"* && $(wc -l <<<"$err") -eq 1 ]] ||
    bad "an unwritable --profile path: rc $rc, '$err'"
"$cli" test --providers cpu --check-nan --strict "$models/squeezenet1_1" >/dev/null ||
    bad "test --check-nan --strict failed on squeezenet"
echo "run --profile/--check-nan: ok"

# ---- 3. declined reasons, strict placement -------------------------------------
# At --opt-level 0 the Relus stay separate nodes, which fakerefuse refuses.
out=$(MINFER_PROVIDER_PATH=$fakes MINFER_LOG=verbose \
    "$cli" --opt-level 0 info --providers fakerefuse,cpu "$squeeze" 2>"$tmp/verbose.log") ||
    bad "MINFER_LOG=verbose info --providers fakerefuse,cpu failed"
n_run=$(running_nodes "$out")
n_log=$(grep -c "provider 'fakerefuse' declined: fakerefuse " "$tmp/verbose.log")
n_relu=$(grep -c "(op Relu, .*provider 'fakerefuse' declined: fakerefuse refuses Relu" "$tmp/verbose.log")
n_info=$(grep -c '^        declined by fakerefuse: fakerefuse ' <<<"$out")
n_cpu=$(grep -Ec '^  #[0-9]+ .* cpu$' <<<"$out")
[[ $n_run -gt 0 && $n_log -eq $n_run && $n_info -eq $n_run && $n_cpu -eq $n_run ]] ||
    bad "declined reasons: $n_run nodes run, $n_log logged, $n_info printed by info, $n_cpu on cpu"
[[ $n_relu -gt 0 ]] || bad "no Relu logged with 'fakerefuse refuses Relu'"
err=$(MINFER_PROVIDER_PATH=$fakes "$cli" --opt-level 0 info --strict --providers fakerefuse,cpu \
    "$squeeze" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $err == *"strict placement"* && $err == *"/features/features.1/Relu"* ]] ||
    bad "info --strict with fakerefuse first: rc $rc, '${err:0:300}'"
"$cli" info --strict --providers cpu "$squeeze" >/dev/null || bad "info --strict with cpu alone failed"
echo "declined reasons ($n_run nodes, $n_relu Relu) and --strict: ok"

# ---- 4. the DOT picture --------------------------------------------------------------
out=$("$cli" info --providers cpu --dot "$tmp/enc.dot" "$encoder") || bad "info --dot failed"
n_nodes=$(sed -n 's/^nodes (\([0-9]*\)):$/\1/p' <<<"$out")
python3 - "$tmp/enc.dot" "$n_nodes" <<'EOF' || bad "the DOT output does not show every node once in its provider's colour"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
want = int(sys.argv[2])
legend = dict((name, colour) for name, colour in re.findall(
    r'"legend_\d+" \[label="([^"]+)", fillcolor="([^"]+)"', text))
const = re.search(r'"legend_const" \[label="[^"]*", fillcolor="([^"]+)"', text)
assert legend and const, "no legend"
legend["constant"] = const.group(1)
decl = re.findall(r'^  "(n\d+)" \[label="(.*?)", fillcolor="([^"]+)"', text, re.M)
ids = [d[0] for d in decl]
assert len(ids) == want, f"{len(ids)} nodes declared, `minfer info` lists {want}"
assert len(set(ids)) == len(ids), "a node is declared twice"
for nid, label, colour in decl:
    prov = label.rsplit("\\n", 1)[-1].strip("[]")
    assert legend.get(prov) == colour, f"{nid} ({label}) on {prov} is filled {colour}"
edges = re.findall(r'^  "([^"]+)" -> "([^"]+)"', text, re.M)
for a, b in edges:
    for end in (a, b):
        assert end in set(ids) or end.startswith(("v:", "out:")), f"edge to undeclared {end}"
print(f"dot: {len(ids)} nodes, providers {sorted(legend)}, {len(edges)} edges")
EOF
if command -v dot >/dev/null; then
    dot -Tsvg -o "$tmp/enc.svg" "$tmp/enc.dot" || bad "dot -Tsvg cannot render the DOT output"
    grep -q '<svg' "$tmp/enc.svg" || bad "dot -Tsvg wrote no SVG"
    "$cli" info --providers cpu --svg "$tmp/enc2.svg" "$encoder" >/dev/null &&
        grep -q '<svg' "$tmp/enc2.svg" || bad "info --svg wrote no SVG"
    echo "dot -Tsvg and info --svg: ok"
else
    echo "SKIP: Graphviz's dot is not installed (Debian package graphviz): rendering not checked"
fi
err=$(PATH=/nonexistent "$cli" info --providers cpu --svg "$tmp/x.svg" "$encoder" 2>&1 >/dev/null)
rc=$?
[[ $rc -eq 1 && $err == *graphviz* && $(wc -l <<<"$err") -eq 1 ]] ||
    bad "--svg without dot on PATH: rc $rc, '$err'"

exit $fail
