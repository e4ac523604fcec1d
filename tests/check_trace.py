#!/usr/bin/env python3
"""Validates a minfer profile (ONNX Runtime's profile format).

usage: check_trace.py TRACE --runs R [--nodes N] [--flops-op SUFFIX]...

Checks that the file is a JSON array of trace events, as ONNX Runtime's
profiler writes (and Perfetto opens), each with cat, name, ph, ts, dur, pid
and tid; that the build-phase events ("cat": "Session") name the session's
phases; that there are R run events ("cat": "Session", "name": "model_run");
and that each run event encloses one complete ("ph": "X") node event per node
that runs ("cat": "Node", "name": "NODE_kernel_time"; N of them, when given),
the same node names in every run, each with args op_name, provider,
input_type_shape and output_type_shape (lists of {element type: dims}) and
flops. Every node whose op ends with a --flops-op suffix (e.g. Conv) must
have flops > 0, and at least one such node must exist. Copy events ("cat":
"Copy"), if any, carry the bytes they moved. Prints one line; exits 1 on the
first problem.
"""
import argparse
import json
import sys

BUILD_PHASES = ("load providers", "optimize", "infer shapes", "assign providers")


def fail(msg):
    print(f"check_trace: FAIL: {msg}")
    sys.exit(1)


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--flops-op", action="append", default=[])
    a = ap.parse_args()

    try:
        with open(a.trace, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{a.trace}: not readable JSON: {e}")
    if not isinstance(doc, list):
        fail("the top level is not a JSON array of events (ONNX Runtime's profile format)")
    events = doc
    meta = [e for e in events if isinstance(e, dict) and e.get("ph") == "M"]
    if not meta or meta[0].get("args", {}).get("dropped_events") is None:
        fail("no metadata event with args.dropped_events")
    if meta[0]["args"]["dropped_events"]:
        fail(f"{meta[0]['args']['dropped_events']} events were dropped")

    by_cat = {}
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not isinstance(e.get("name"), str) or "ph" not in e:
            fail(f"event {i} lacks a name or ph: {e!r}")
        if not isinstance(e.get("cat"), str) or not isinstance(e.get("args", {}), dict):
            fail(f"event {i} ('{e['name']}') lacks a cat, or its args are no object")
        if e["ph"] == "M":
            continue
        if e["ph"] != "X":
            fail(f"event {i} ('{e['name']}') has ph {e['ph']!r}, expected 'X'")
        for k in ("ts", "dur", "pid", "tid"):
            if not number(e.get(k)):
                fail(f"event {i} ('{e['name']}') has no numeric {k}")
        if e["dur"] < 0:
            fail(f"event {i} ('{e['name']}') has a negative duration")
        by_cat.setdefault(e.get("cat"), []).append(e)

    session = by_cat.get("Session", [])
    build = [e["name"] for e in session if e["name"] != "model_run"]
    missing = [p for p in BUILD_PHASES if p not in build]
    if missing:
        fail(f"build-phase events missing: {missing} (have {build})")

    runs = sorted((e for e in session if e["name"] == "model_run"), key=lambda e: e["ts"])
    if len(runs) != a.runs:
        fail(f"{len(runs)} run events, expected {a.runs}")

    nodes = by_cat.get("Node", [])
    for e in nodes:
        args = e.get("args")
        if not e["name"].endswith("_kernel_time"):
            fail(f"node event '{e['name']}' is not named NODE_kernel_time")
        if not isinstance(args, dict):
            fail(f"node event '{e['name']}' has no args")
        for k in ("op_name", "provider"):
            if not isinstance(args.get(k), str) or not args[k]:
                fail(f"node event '{e['name']}' has no args.{k}")
        for k in ("input_type_shape", "output_type_shape"):
            v = args.get(k)
            if not isinstance(v, list) or not all(
                    isinstance(t, dict) and len(t) == 1 and isinstance(next(iter(t.values())), list)
                    and all(isinstance(d, int) for d in next(iter(t.values()))) for t in v):
                fail(f"node event '{e['name']}' args.{k} is not a list of {{type: dims}}: {v!r}")
        if not args["output_type_shape"]:
            fail(f"node event '{e['name']}' has no outputs")
        if not number(args.get("flops")) or args["flops"] < 0:
            fail(f"node event '{e['name']}' has no non-negative args.flops")

    # Each run encloses its node events (runs are sequential in bench/run).
    per_run = []
    for r in runs:
        lo, hi = r["ts"], r["ts"] + r["dur"]
        inside = [e for e in nodes if e["tid"] == r["tid"] and lo <= e["ts"]
                  and e["ts"] + e["dur"] <= hi + 1e-3]
        per_run.append(sorted(e["name"] for e in inside))
    if sum(len(p) for p in per_run) != len(nodes):
        fail(f"{len(nodes)} node events, but {sum(len(p) for p in per_run)} lie inside runs")
    for k, names in enumerate(per_run):
        if a.nodes is not None and len(names) != a.nodes:
            fail(f"run {k} has {len(names)} node events, expected {a.nodes}")
        if names != per_run[0]:
            fail(f"run {k} has other nodes than run 0")

    for suffix in a.flops_op:
        hits = [e for e in nodes if e["args"]["op_name"].endswith(suffix)]
        if not hits:
            fail(f"no node event with an op ending in '{suffix}'")
        zero = [e["name"] for e in hits if not e["args"]["flops"] > 0]
        if zero:
            fail(f"{len(zero)} '{suffix}' events have no FLOP estimate, e.g. {zero[0]}")

    for e in by_cat.get("Copy", []):
        if not isinstance(e.get("args"), dict) or not number(e["args"].get("bytes")):
            fail(f"copy event at ts {e['ts']} has no args.bytes")

    print(f"check_trace: OK: {len(nodes)} node events in {len(runs)} runs "
          f"({len(per_run[0]) if per_run else 0} per run), {len(build)} build phases, "
          f"{len(by_cat.get('Copy', []))} copies")


if __name__ == "__main__":
    main()
