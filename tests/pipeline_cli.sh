#!/usr/bin/env bash
# The pipeline scheduler on the command line (docs/scheduling.md): `minfer
# info` lists stages that cover the execution order in order (text and
# --json), `bench --concurrency` drives the asynchronous API under it (and
# warms callers and workers alike under every scheduler), and
# MINFER_SCHEDULER / --scheduler name it in their errors. `bench --versus S`
# times a second session under S in the same process, the two alternating
# round by round, and reports each round and the ratios.
#
# usage: pipeline_cli.sh MINFER_CLI MODEL
set -u
cli=$1
model=$2
fail=0
err() { echo "FAIL: $*"; fail=1; }

json=$("$cli" --scheduler pipeline --inter-op-threads 2 info --json --providers cpu "$model") ||
    err "info --json failed"
python3 - "$json" <<'PY' || fail=1
import json, sys
s = json.loads(sys.argv[1])["scheduler"]
assert s["name"] == "pipeline", s
st = s["stages"]
assert len(st) == 2, st
nxt = 0
for x in st:
    assert x["first_step"] == nxt and x["nodes"] > 0 and x["provider"] == "cpu", x
    nxt = x["last_step"] + 1
assert abs(sum(x["cost_share"] for x in st) - 1) < 1e-6, st
# a worker per stage, each request in flight with its own arenas
assert s["requests_in_flight"] == 2 and s["arena_bytes_per_request"] > 0, s
print("info --json: stages", [(x["first_step"], x["last_step"]) for x in st])
PY
out=$("$cli" --scheduler pipeline --inter-op-threads 2 info --providers cpu "$model") ||
    err "info failed"
grep -q '^  pipeline  *2 stages' <<<"$out" || err "info does not print the stages: $out"
grep -q '^  stage 1 ' <<<"$out" || err "info does not print stage 1"
grep -q '^  arenas  *[0-9]* bytes per request in flight' <<<"$out" || err "info: no arena cost"

out=$("$cli" --scheduler pipeline bench --providers cpu --threads 2 --concurrency 3 --runs 2 \
    --warmup 1 "$model") || err "bench failed"
grep -q 'requests in flight through the pipeline' <<<"$out" ||
    err "bench --concurrency under the pipeline does not drive the asynchronous API: $out"
grep -q '^runs:  *6 ' <<<"$out" || err "bench: expected 6 runs (3 x 2): $out"

# --concurrency warms the callers of the sequential and parallel schedulers
# (one code path in bench) before the timed runs, as it warms the pipeline's
# workers: 1 warm-up run, then 1 from each of the 2 callers, then 2 x 1
# timed: 5 runs in the profile.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for sched in sequential; do
    "$cli" --scheduler "$sched" bench --providers cpu --threads 2 --concurrency 2 --runs 1 \
        --warmup 1 --profile "$tmp/$sched.json" "$model" >/dev/null ||
        err "bench --profile under $sched failed"
    python3 - "$tmp/$sched.json" "$sched" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
runs = sum(1 for e in d if e.get("name") == "model_run")
assert runs == 5, "%s: %d runs in the profile, expected 5 (1 + 2 warm-up, 2 timed)" % (sys.argv[2], runs)
PY
done

# The providers of a pipeline session are set up for a stage's share of the
# threads: at 2 threads in 2 stages oneDNN builds no pieces for 2 threads
# (run one after another in a one-thread stage they cost ~7% more CPU);
# with 1 stage of 2 threads, or under the sequential scheduler, it does.
if "$cli" providers 2>/dev/null | grep -Eq '^ *onednn +[^ ]+ +[0-9]+ +yes'; then
    pieces() {
        MINFER_THREADS=2 MINFER_LOG=verbose "$cli" "$@" info --providers onednn,cpu "$model" 2>&1 |
            grep -c 'runs in [0-9]* pieces'
    }
    n=$(pieces --scheduler pipeline)
    [[ $n -eq 0 ]] || err "pipeline, 2 stages of 1 thread: $n oneDNN nodes split in pieces"
    n=$(pieces --scheduler pipeline --inter-op-threads 1)
    [[ $n -gt 0 ]] || err "pipeline, 1 stage of 2 threads: no oneDNN node split in pieces"
    n=$(pieces --scheduler sequential)
    [[ $n -gt 0 ]] || err "sequential at 2 threads: no oneDNN node split in pieces"
fi

# ---- bench --versus: two schedulers in one process, alternating ----
json=$("$cli" bench --providers cpu --threads 2 --runs 2 --warmup 1 --versus parallel \
    --rounds 3 --json "$model" 2>/dev/null) || err "bench --versus parallel failed"
python3 - "$json" <<'PY' || fail=1
import json, statistics, sys
d = json.loads(sys.argv[1])
v = d["versus"]
assert v["scheduler"] == "parallel" and v["base_scheduler"] == "sequential", v
assert len(v["rounds"]) == 3 and v["runs_per_round"] == 2, v
assert d["runs"] == 6, d["runs"]  # this session's runs, pooled over the rounds
for r in v["rounds"]:
    assert all(x > 0 for x in r["median_ms"] + r["runs_per_s"]), r
lat = sorted(r["median_ms"][1] / r["median_ms"][0] for r in v["rounds"])
assert abs(v["latency_ratio"] - lat[1]) < 1e-9, (v["latency_ratio"], lat)
thr = sorted(r["runs_per_s"][1] / r["runs_per_s"][0] for r in v["rounds"])
assert abs(v["throughput_ratio"] - thr[1]) < 1e-9, (v["throughput_ratio"], thr)
print("bench --versus --json: latency ratio %.3f over 3 rounds" % v["latency_ratio"])
PY
out=$("$cli" --scheduler parallel bench --providers cpu --threads 2 --concurrency 2 --runs 1 \
    --warmup 1 --versus pipeline --rounds 2 "$model" 2>/dev/null) ||
    err "bench --versus pipeline --concurrency 2 failed"
grep -q '^versus: *pipeline (a second session) against parallel, 2 alternating rounds of 2 runs' \
    <<<"$out" || err "bench --versus: no versus line: $out"
[[ $(grep -c '^  round ' <<<"$out") -eq 2 ]] || err "bench --versus: expected 2 round lines: $out"
grep -q '^  pipeline / parallel: latency [0-9.]* (rounds ' <<<"$out" ||
    err "bench --versus: no ratio line: $out"
for bad_args in "--versus bogus" "--rounds 3" "--versus parallel --profile $tmp/v.json" \
    "--versus parallel --runs 1000000 --rounds 10000"; do
    # shellcheck disable=SC2086
    out=$("$cli" bench --providers cpu --runs 1 $bad_args "$model" 2>&1)
    rc=$?
    [[ $rc -eq 2 && $(wc -l <<<"$out") -eq 1 ]] ||
        err "bench $bad_args: expected one line and exit 2, got $rc: $out"
done

out=$("$cli" --scheduler bogus info "$model" 2>&1) && err "--scheduler bogus accepted"
grep -q 'pipeline' <<<"$out" || err "--scheduler's error does not list pipeline: $out"
out=$(MINFER_SCHEDULER=bogus "$cli" info --providers cpu "$model" 2>&1) &&
    err "MINFER_SCHEDULER=bogus accepted"
grep -q 'pipeline' <<<"$out" || err "MINFER_SCHEDULER's error does not list pipeline: $out"
out=$(MINFER_SCHEDULER=pipeline "$cli" info --providers cpu "$model") ||
    err "MINFER_SCHEDULER=pipeline failed"
grep -q '^  pipeline ' <<<"$out" || err "MINFER_SCHEDULER=pipeline not taken"
[[ $fail -eq 0 ]] && echo "pipeline_cli: ok"
exit $fail
