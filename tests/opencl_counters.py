#!/usr/bin/python3
"""Device counters per run on opencl,cpu (issue 38; docs/opencl.md "Run
counters"): each model runs on its test_data_set_0 inputs under `minfer bench
--json`, and the last timed run must

  - wait for the device once (syncs == 1: the synchronize at the run's end;
    shape arithmetic folded per plan, no value crossing to the host mid-run);
  - enqueue no more commands than the plan runs nodes (launches <= nodes):
    every node one launch at most, on average.

On a CPU device (PoCL: the provider's own kernels, CLBlast kept out by its
probe) a model named in MAX_LAUNCHES must also launch no more than its
entry there: today's counts, so a fusion that stops firing fails the test
(lower an entry when a change makes a model launch less).

The plan's node count comes from a second, profiled bench (`--profile`: the
nodes that ran, folded ones left out). Prints one line per model.

usage: opencl_counters.py MINFER_CLI DIR [DIR...]
  DIR: a model directory (model.onnx, test_data_set_0/), or a directory of
  them with names MODEL,MODEL,... after a colon: /path/zoo:tiny_lm_op13,...
Exit 77 (skipped) when the session has no opencl provider (no device)."""
import json
import os
import subprocess
import sys
import tempfile


# Launches per run on a CPU device (docs/opencl.md "Run counters").
MAX_LAUNCHES = {
    "tiny_encoder": 85, "resnet18": 23, "squeezenet1_1": 38, "mobilenet_v2": 54,
    "t5_encoder_op13": 70, "gpt2_decoder_op13": 76, "llama_decoder_op13": 99,
    "tiny_lm_op13": 51, "vit_small_op13": 48, "vit_s16_op17": 88,
    "transformer_seq2seq_op13": 116, "densenet121_op13": 188, "densenet121_op17": 188,
    "googlenet_op13": 81, "efficientnet_b0_op13": 99, "mobilenet_v3_small_op13": 64,
    "regnet_y_400mf_op13": 103,
}


def cpu_device(cli):
    """1 when the opencl provider's device is a CPU (minfer providers --json)."""
    r = subprocess.run([cli, "providers", "--json"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return False
    for p in json.loads(r.stdout).get("providers", []):
        if p.get("name") == "opencl":
            return p.get("device_kind") == "cpu"
    return False


def bench(cli, model, extra):
    cmd = [cli, "bench", os.path.join(model, "model.onnx"), "--providers", "opencl,cpu",
           "--runs", "2", "--warmup", "1", "--inputs", os.path.join(model, "test_data_set_0"),
           "--json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return json.loads(r.stdout)


def models(args):
    for a in args:
        if ":" in a:
            root, names = a.split(":", 1)
            for n in names.split(","):
                yield os.path.join(root, n)
        else:
            yield a


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cli = sys.argv[1]
    bad = []
    bounded = cpu_device(cli)
    print("%-28s %8s %6s %9s %6s" % ("model", "launches", "syncs", "transfers", "nodes"))
    with tempfile.TemporaryDirectory() as tmp:
        for m in models(sys.argv[2:]):
            if not os.path.isfile(os.path.join(m, "model.onnx")):
                bad.append("%s: no model.onnx" % m)
                continue
            d = bench(cli, m, [])
            if "opencl" not in d["providers"]:
                print("skipped: opencl runs no node of %s (no OpenCL device?)" % m)
                return 77
            c = [x for x in d.get("device_counters", []) if x["provider"] == "opencl"]
            if not c:
                bad.append("%s: no device counters for opencl" % m)
                continue
            c = c[0]
            p = bench(cli, m, ["--profile", os.path.join(tmp, "profile.json"), "--force"])
            nodes = sum(o["count"] for o in p["op_types"])
            name = os.path.basename(m.rstrip("/"))
            print("%-28s %8d %6d %9d %6d" % (name, c["launches"], c["syncs"], c["transfers"],
                                             nodes))
            if c["syncs"] != 1:
                bad.append("%s: %d host synchronisations per run, want 1" % (name, c["syncs"]))
            if c["launches"] > nodes:
                bad.append("%s: %d launches per run for %d nodes" % (name, c["launches"], nodes))
            if bounded and name in MAX_LAUNCHES and c["launches"] > MAX_LAUNCHES[name]:
                bad.append("%s: %d launches per run, at most %d on a CPU device" %
                           (name, c["launches"], MAX_LAUNCHES[name]))
    for b in bad:
        print("FAIL " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
