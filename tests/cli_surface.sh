#!/usr/bin/env bash
# The CLI's user-facing surface (issue 24):
#  1. `minfer test` passes the shared models at its default tolerances;
#  2. --dim NAME=N and --shape IN=DIMS on run, bench and info: the shapes
#     used are printed; bad names, sizes and ranks fail naming them;
#     bench on tiny_encoder with --dim runs the real inputs' shape;
#     a size of 0 is an error; a mistyped command or option gets "did you mean";
#  3. message slips: --opt-level 7, an input file holding another name, a
#     shape error names symbolic dims as info does, a wrong output name;
#  4. bench prints one latency, the providers used, threads and shapes;
#     progress on a terminal only;
#  5. an unknown provider name is an error listing what is installed;
#     `providers` names devices (and --json); a provider on a CPU device
#     is not in the default order; bad MINFER_* values warn once;
#  6. --json on info, test and bench (valid JSON, the figures agree), test
#     --junit FILE, model metadata in info, the node table's alignment.
#
# usage: cli_surface.sh MINFER_CLI MODELS_DIR
set -uo pipefail

cli=$1
models=$2
squeeze=$models/squeezenet1_1/model.onnx
encoder=$models/tiny_encoder/model.onnx
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-surface.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# ---- 1. shared models at the defaults ------------------------------------------
out=$("$cli" test --providers cpu "$models" 2>&1) || bad "minfer test at its defaults: $out"
[[ $(tail -n 1 <<<"$out") =~ ^[1-9][0-9]*\ passed,\ 0\ failed ]] || bad "test summary: $out"
echo "test at the defaults: ok ($(tail -n 1 <<<"$out"))"

# ---- 2. --dim and --shape ----------------------------------------------------------
out=$("$cli" run --providers cpu --dim N=2 "$squeeze" 2>&1) || bad "run --dim N=2: $out"
grep -q '^inputs: *input float \[2,3,224,224\]$' <<<"$out" || bad "run --dim N=2 inputs line: $out"
grep -q "^output 0 'output': float \[2,1000\]$" <<<"$out" || bad "run --dim N=2 output: $out"
out=$("$cli" run --providers cpu --shape input=3x3x224x224 "$squeeze" 2>&1) ||
    bad "run --shape: $out"
grep -q "^output 0 'output': float \[3,1000\]$" <<<"$out" || bad "run --shape output: $out"
out=$("$cli" run --providers cpu "$squeeze" 2>&1) || bad "run squeezenet: $out"
grep -q "note: input 'input' dimension 'N' set to 1 (--dim N=SIZE sets it)" <<<"$out" ||
    bad "run without --dim does not say N is 1: $out"
out=$("$cli" info --providers cpu --dim N=4 "$squeeze" 2>&1) || bad "info --dim: $out"
grep -Eq '^  input +float +\[4,3,224,224\]$' <<<"$out" || bad "info --dim N=4 input: $out"
grep -q '^memory plan:$' <<<"$out" || bad "info --dim N=4 plans for the fixed shape: $out"

check_fail() { # expected-rc expected-text command...
    local want=$1 text=$2
    shift 2
    local err rc
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    [[ $rc -eq $want && $err == *"$text"* && $(wc -l <<<"$err") -eq 1 ]] ||
        bad "'${*:2}': rc $rc (want $want), '$err' (want '$text')"
}
check_fail 1 "cannot set dimension 'bogus': no input has a dimension of that name (symbolic dimensions: N)" \
    "$cli" run --providers cpu --dim bogus=2 "$squeeze"
check_fail 1 "cannot set a dimension of 'data': no input has that name (inputs: input)" \
    "$cli" run --providers cpu --shape data=1x3x224x224 "$squeeze"
check_fail 1 "cannot set axis 1 of input 'input' to 4: the model fixes it at 3" \
    "$cli" bench --providers cpu --shape input=1x4x224x224 "$squeeze"
check_fail 2 "--shape 'input=1x3x224' gives 3 dimensions; input 'input' has 4" \
    "$cli" info --providers cpu --shape input=1x3x224 "$squeeze"
check_fail 2 "--dim 'N' is not NAME=SIZE" "$cli" run --dim N "$squeeze"
check_fail 2 "--dim 'N=-1' is not NAME=SIZE" "$cli" run --dim N=-1 "$squeeze"
check_fail 2 "--shape 'input=1xx3' is not INPUT=DIMS" "$cli" run --shape input=1xx3 "$squeeze"
# A size of 0 is an error, not 36 warnings and a NaN result (issue 34).
check_fail 2 "--dim 'seq=0': a size of 0 makes the inputs empty; give 1 or more" \
    "$cli" run --providers cpu --dim seq=0 "$encoder"
check_fail 2 "--shape 'input_ids=1x0' is not INPUT=DIMS with up to" \
    "$cli" run --providers cpu --shape input_ids=1x0 "$encoder"
# Provider option values have no escapes: a ',' (a key more) is refused, as
# the C API and Python refuse it (issue 39).
check_fail 2 "--provider-option 'onednn:a=1,b=2': provider option 'a'='1,b=2': keys cannot be empty or hold ',', '=' or NUL, values cannot hold ',' or NUL" \
    "$cli" run --provider-option onednn:a=1,b=2 "$squeeze"
check_fail 2 "--provider-option 'onednn' is not PROVIDER:KEY=VALUE" \
    "$cli" bench --provider-option onednn "$squeeze"
# The creation deadline names the stage it ran out at (issue 39).
check_fail 1 "session creation took longer than 1 ms (the creation deadline) at " \
    "$cli" run --providers cpu --creation-deadline 1 "$models/resnet18/model.onnx"
# "did you mean" for a mistyped command or option; none for what is far from any.
check_fail 2 "unknown command 'bnech'; did you mean 'bench'?" "$cli" bnech "$squeeze"
check_fail 2 "unknown option '--thread'; did you mean '--threads'?" "$cli" bench --thread 2 "$squeeze"
check_fail 2 "unknown option '--provider'; did you mean '--providers'?" "$cli" run --provider cpu "$squeeze"
check_fail 2 "unknown command 'frobnicate' (try 'minfer --help')" "$cli" frobnicate

# tiny_encoder: [batch,seq] runs at 1x1 unless told; --dim gives the real
# inputs' shape, and bench then reports the same shape as with them.
data=$models/tiny_encoder/test_data_set_0
real=$("$cli" bench --providers cpu --runs 2 --warmup 1 --inputs "$data" "$encoder" 2>&1) ||
    bad "bench tiny_encoder --inputs: $real"
shape=$(sed -n 's/^inputs: *input_ids int64 \(\[[0-9,]*\]\)$/\1/p' <<<"$real")
[[ -n $shape && $shape != "[1,1]" ]] || bad "bench --inputs prints no input shape: $real"
seq=${shape#*,}
seq=${seq%]}
batch=${shape#[}
batch=${batch%%,*}
out=$("$cli" bench --providers cpu --runs 2 --warmup 1 --dim "batch=$batch" --dim "seq=$seq" \
    "$encoder" 2>&1) || bad "bench tiny_encoder --dim: $out"
grep -q "^inputs: *input_ids int64 \\$shape$" <<<"$out" ||
    bad "bench --dim batch=$batch --dim seq=$seq does not run $shape: $out"
out=$("$cli" bench --providers cpu --runs 1 --warmup 0 "$encoder" 2>&1) || bad "bench tiny_encoder"
grep -q "note: input 'input_ids' dimension 'seq' set to 1 (--dim seq=SIZE sets it)" <<<"$out" ||
    bad "bench without --dim does not say seq is 1: $out"
echo "--dim/--shape: ok (tiny_encoder $shape)"

# ---- 3. message slips ------------------------------------------------------------------
err=$("$cli" --opt-level 7 info "$squeeze" 2>&1)
[[ $? -eq 2 && $err == "minfer: --opt-level '7' is not an integer in 0..3" ]] ||
    bad "--opt-level 7: '$err'"
mkdir -p "$tmp/wrong"
"$cli" run --providers cpu --outputs "$tmp/wrong" "$squeeze" >/dev/null 2>&1 || bad "run --outputs"
# output_0.pb holds 'output': fed as the input, the name does not match.
mv "$tmp/wrong/output_0.pb" "$tmp/wrong/input_0.pb"
err=$("$cli" run --providers cpu --inputs "$tmp/wrong" "$squeeze" 2>&1 >/dev/null)
[[ $err == *"holds a tensor named 'output'; it is fed to input 0 'input' by position"* ]] ||
    bad "an input file holding another name is fed silently: '$err'"
# (its shape [1,1000] then fails, naming the dims as info does)
[[ $err == *"input 'input' expects shape [N,3,224,224], got [1,1000]"* ]] ||
    bad "a shape error does not name the symbolic dim: '$err'"
# a bad picture path fails before any report is printed
out=$("$cli" info --providers cpu --svg /nonexistent-dir/x.svg "$squeeze" 2>"$tmp/svg.err")
rc=$?
[[ $rc -eq 1 && -z $out && $(wc -l <"$tmp/svg.err") -eq 1 ]] ||
    bad "info --svg /nonexistent-dir/x.svg: rc $rc, stdout '${out:0:80}', $(cat "$tmp/svg.err")"
echo "message slips: ok"

# ---- 4. bench's report ------------------------------------------------------------------
out=$("$cli" bench --providers cpu --threads 2 --runs 3 --warmup 1 "$squeeze" 2>/dev/null) ||
    bad "bench squeezenet"
[[ $(grep -c 'ms' <<<"$(grep -i 'latency\|p50\|stats' <<<"$out")") -eq 1 ]] ||
    bad "bench prints latency more than once: $out"
grep -Eq '^latency: +min [0-9.]+ ms, median [0-9.]+ ms, p90 [0-9.]+ ms, mean [0-9.]+ ms, max [0-9.]+ ms; [0-9.]+ runs/s$' <<<"$out" ||
    bad "bench latency line: $out"
grep -Eq '^providers used: +cpu \([0-9]+ nodes\)$' <<<"$out" || bad "bench providers used: $out"
grep -q '^threads: *2$' <<<"$out" || bad "bench threads: $out"
grep -q '^inputs: *input float \[1,3,224,224\]$' <<<"$out" || bad "bench inputs: $out"
# Progress on a terminal only (script(1) gives it one), erased before the figures.
err=$("$cli" bench --providers cpu --threads 2 --runs 3 --warmup 1 "$squeeze" 2>&1 >/dev/null)
[[ $err != *"minfer bench: warming up"* && $err != *"minfer bench: timing"* ]] || bad "bench progress without a terminal: $err"
if command -v script >/dev/null; then
    tty=$(script -qec "'$cli' bench --providers cpu --threads 1 --runs 30 --warmup 1 '$squeeze'" /dev/null 2>&1)
    grep -aq 'minfer bench: timing: [0-9]*/30 runs' <<<"$tty" || bad "bench progress on a terminal: $tty"
    grep -aq '^latency: ' <<<"${tty//$'\r'/$'\n'}" || bad "bench figures on a terminal: $tty"
fi
echo "bench report: ok"

# ---- 5. defaults: provider names, devices, environment ---------------------------------
check_fail 1 "unknown provider 'cdu' (installed: " "$cli" run --providers cdu,cpu "$squeeze"
err=$("$cli" run --providers cuda "$squeeze" 2>&1 >/dev/null)
[[ $err == *"unknown provider 'cuda' (installed: "*cpu*"minfer's providers: cpu, onednn, opencl)" &&
    $(wc -l <<<"$err") -eq 1 ]] || bad "--providers cuda: '$err'"
json=$("$cli" providers --json) || bad "providers --json"
python3 - "$json" >"$tmp/named_only" <<'EOF' || bad "providers --json: $json"
import json, sys
d = json.loads(sys.argv[1])
assert d["search_path"], d
for p in d["providers"]:
    if p["usable"]:
        assert p["device"] and p["device_kind"] in ("cpu", "gpu", "other"), p
    else:
        assert p["reason"] and p["device"] is None, p
    if p["name"] == "cpu":
        assert p["in_default_order"], p
print(" ".join(p["name"] for p in d["providers"] if p["usable"] and not p["in_default_order"]))
EOF
text=$("$cli" providers)
grep -Eq '^ +device: host CPU$' <<<"$text" || bad "providers names no device: $text"
# A provider on a CPU device (OpenCL on PoCL) is out of the default order,
# and loads when named.
for name in $(cat "$tmp/named_only"); do
    out=$("$cli" info "$squeeze" 2>&1) || bad "info with the default order"
    grep -q "^providers loaded.*$name" <<<"$out" && bad "$name is in the default order: $out"
    out=$("$cli" info --providers "$name,cpu" "$squeeze" 2>&1) || bad "info --providers $name,cpu"
    grep -q "^providers loaded (2): $name, cpu$" <<<"$out" || bad "$name named: $out"
    grep -q "(not in the default order: used only when named)" <<<"$text" ||
        bad "providers does not say $name is left out: $text"
done
err=$(MINFER_LOG=bogus MINFER_PLANNER=fast "$cli" test --providers cpu "$models" 2>&1 >/dev/null)
[[ $(grep -c "MINFER_LOG='bogus' is not one of error, warn, info, verbose or 0-3: ignored" <<<"$err") -eq 1 &&
    $(grep -c "MINFER_PLANNER='fast' is not one of greedy or linear: ignored" <<<"$err") -eq 1 ]] ||
    bad "bad environment values are not named once: '$err'"
echo "defaults: ok (named only: $(cat "$tmp/named_only"))"

# ---- 6. machine-readable output, metadata, the info report ---------------------------------
out=$("$cli" info --providers cpu "$encoder") || bad "info tiny_encoder"
grep -q '^producer: pytorch ' <<<"$out" || bad "info prints no producer: $out"
grep -q '^graph: ' <<<"$out" || bad "info prints no graph name: $out"
grep -Eq '^  planned buffers +[0-9]+ \([0-9]+ host, [0-9]+ device\)$' <<<"$out" ||
    bad "info does not split planned buffers by memory: $out"
grep -Eq '^  arena +[0-9]+ bytes \(.*\) in host memory$' <<<"$out" || bad "info arena line: $out"
json=$("$cli" info --providers cpu --json -v "$squeeze") || bad "info --json"
python3 - "$json" <<'EOF' || bad "info --json: ${json:0:300}"
import json, sys
d = json.loads(sys.argv[1])
assert d["inputs"][0]["name"] == "input" and d["inputs"][0]["shape"] == ["N", 3, 224, 224], d["inputs"]
assert d["providers"] == ["cpu"], d["providers"]
assert d["nodes"] and all(n["provider"] in ("cpu", "(constant)", "core") for n in d["nodes"])
assert sum(d["nodes_per_provider"].values()) == len(d["nodes"])
assert sum(d["op_types"].values()) == len(d["nodes"])
m = d["memory"]
assert m["symbolic_dims_set_to_1"] and m["planned_buffers"] == len(m["buffers"]) > 0, m
assert "producer_name" in d["metadata"] and isinstance(d["metadata"]["metadata_props"], dict)
assert d["optimization"]["nodes_after"] <= d["optimization"]["nodes_before"]
EOF
# A node name longer than the column: the table stays aligned.
out=$("$cli" info --providers cpu "$encoder" | sed -n '/^nodes (/,/^op types/p' | grep '^  #')
cols=$(awk 'match($0, /^  #[0-9]+ +[^ ]+ +/) {print RLENGTH}' <<<"$out" | sort -u | wc -l)
[[ $cols -eq 1 ]] || bad "info's op column is not aligned ($cols positions)"

json=$("$cli" test --providers cpu --json --junit "$tmp/junit.xml" "$models/squeezenet1_1" \
    "$tmp/nonexistent" 2>"$tmp/test.err")
rc=$?
[[ $rc -eq 1 ]] || bad "test with a missing path: rc $rc"
grep -q "^FAIL $tmp/nonexistent: " "$tmp/test.err" || bad "test --json: FAIL line not on stderr"
python3 - "$json" "$tmp/junit.xml" <<'EOF' || bad "test --json / --junit: $json"
import json, sys
import xml.etree.ElementTree as ET
d = json.loads(sys.argv[1])
assert (d["passed"], d["failed"], d["skipped"]) == (2, 1, 0), d
st = sorted(r["status"] for r in d["results"])
assert st == ["fail", "pass", "pass"], d["results"]
assert d["atol"] == 1e-5 and d["rtol"] == 1e-3
suite = ET.parse(sys.argv[2]).getroot().find("testsuite")
assert suite.get("tests") == "3" and suite.get("failures") == "1", suite.attrib
cases = suite.findall("testcase")
assert len(cases) == 3 and len([c for c in cases if c.find("failure") is not None]) == 1
EOF
check_fail 1 "cannot write the JUnit report to '$tmp/junit.xml': it exists (--force replaces it)" \
    "$cli" test --junit "$tmp/junit.xml" "$models/squeezenet1_1"
json=$("$cli" bench --providers cpu --runs 2 --warmup 0 --json "$squeeze" 2>/dev/null) || bad "bench --json"
python3 - "$json" <<'EOF' || bad "bench --json: $json"
import json, sys
d = json.loads(sys.argv[1])
assert d["inputs"] == [{"name": "input", "type": "float", "shape": [1, 3, 224, 224]}], d["inputs"]
assert d["providers"] == ["cpu"] and d["threads"] >= 1, d
assert d["min_ms"] <= d["median_ms"] <= d["max_ms"], d
EOF
[[ $(wc -l <<<"$json") -eq 1 ]] || bad "bench --json is not one line"
echo "machine-readable output and metadata: ok"

if [[ $fails -ne 0 ]]; then
    echo "cli_surface: $fails failure(s)"
    exit 1
fi
echo "cli_surface: all passed"
