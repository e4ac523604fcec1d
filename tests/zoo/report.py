#!/usr/bin/python3
"""Writes the corpus table of docs/models.md.

usage: report.py MINFER_CLI CORPUS_DIR [DOC]   (DOC: docs/models.md)

For every case of the corpus (build it with `zoo.py build DIR`): the model,
its exporter and opset, node count and parameters (from the case's
zoo.json), pass or fail of `minfer test --rtol 1e-3 --atol 1e-4` on cpu,
onednn,cpu and opencl,cpu, and the median latency of `minfer bench`
(2 threads, 10 runs after 2 warm-up runs) on test_data_set_0, which is at
batch 1 for every model. The table replaces the text between the
`<!-- zoo table -->` and `<!-- end zoo table -->` lines of DOC; the models
the exporter could not produce follow it, with the exporter's reason.
"""
import json
import os
import subprocess
import sys

LISTS = ["cpu", "onednn,cpu", "opencl,cpu"]
RUNS = os.environ.get("ZOO_BENCH_RUNS", "10")  # timed runs of each bench
HERE = os.path.dirname(os.path.abspath(__file__))


def run_tests(minfer, corpus, cases, providers):
    r = subprocess.run([minfer, "test", "--json", "--rtol", "1e-3", "--atol", "1e-4",
                        "--threads", "2", "--providers", providers]
                       + [os.path.join(corpus, c) for c in cases],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    status = {}
    for e in json.loads(r.stdout)["results"]:
        c = os.path.basename(e["case"])
        ok = e["status"] == "pass"
        status[c] = status.get(c, True) and ok
    return status


def bench(minfer, case_dir, providers):
    r = subprocess.run([minfer, "bench", os.path.join(case_dir, "model.onnx"), "--inputs",
                        os.path.join(case_dir, "test_data_set_0"), "--threads", "2",
                        "--runs", RUNS, "--warmup", "2", "--json", "--providers", providers],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)["median_ms"]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    minfer, corpus = argv[0], os.path.realpath(argv[1])
    doc = argv[2] if len(argv) > 2 else os.path.join(HERE, "..", "..", "docs", "models.md")
    env_clean = {"MINFER_PROVIDERS": "", "MINFER_PROVIDER_PATH": ""}
    os.environ.update(env_clean)
    cases = sorted(d for d in os.listdir(corpus)
                   if os.path.exists(os.path.join(corpus, d, "zoo.json")))
    info = {}
    for c in cases:
        with open(os.path.join(corpus, c, "zoo.json")) as f:
            info[c] = json.load(f)
    status = {p: run_tests(minfer, corpus, cases, p) for p in LISTS}
    rows = ["| model | kind | exporter, opset | nodes | parameters | "
            + " | ".join(f"`{p}`" for p in LISTS) + " | "
            + " | ".join(f"ms `{p}`" for p in LISTS) + " |",
            "|---|---|---|---:|---:|" + "---|" * len(LISTS) + "---:|" * len(LISTS)]
    for c in cases:
        i = info[c]
        res = ["pass" if status[p].get(c) else "**fail**" for p in LISTS]
        ms = []
        for p in LISTS:
            t = bench(minfer, os.path.join(corpus, c), p) if status[p].get(c) else None
            ms.append(f"{t:.1f}" if t is not None else "-")
        name = i["model"] + (" (reduced)" if i["reduced"] else "")
        rows.append(f"| {name} | {i['kind']} | torch 1.13, {i['opset']} | {i['nodes']} | "
                    f"{i['params'] / 1e6:.2f} M | " + " | ".join(res) + " | "
                    + " | ".join(ms) + " |")
        print(rows[-1], flush=True)
    failed = None
    if os.path.exists(os.path.join(corpus, "failed.json")):
        with open(os.path.join(corpus, "failed.json")) as f:
            failed = json.load(f)
    rows.append("")
    if failed is None:
        rows.append("(Made from a corpus whose build had not finished: the cases built so far.)")
    elif failed:
        rows.append("Not exported (the exporter's or the export check's reason):")
        rows.append("")
        for e in failed:
            rows.append(f"- {e['model']}, opset {e['opset']}: {e['reason']}")
    else:
        rows.append("Every model of build_zoo.py was exported.")
    with open(doc) as f:
        text = f.read()
    begin, end = "<!-- zoo table -->\n", "<!-- end zoo table -->"
    a, b = text.index(begin) + len(begin), text.index(end)
    with open(doc, "w") as f:
        f.write(text[:a] + "\n".join(rows) + "\n" + text[b:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
