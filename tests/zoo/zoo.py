#!/usr/bin/python3
"""The model corpus in ctest (label `zoo`, docs/models.md).

usage:
  zoo.py build CORPUS_DIR
      makes CORPUS_DIR a link to the corpus built by build_zoo.py, cached in
      $MINFER_ZOO_CACHE (default ~/.cache/minfer-zoo) under a hash of
      build_zoo.py and the versions it builds with; a clean machine builds it
      (about 2 minutes on 2 cores), installing the ONNX Runtime peer
      (onnxruntime-node, pinned) with npm first when it is missing.
  zoo.py test [--threads N] MINFER_CLI CORPUS_DIR PROVIDERS [CASE...]
      runs `minfer test --rtol 1e-3 --atol 1e-4 --threads N --providers
      PROVIDERS` (N 2 unless given) on every case of the corpus (or the
      named ones): every data
      set of every case must pass, except the cases known_failures.txt lists
      for this provider list (each with its reason and issue), which are
      reported as XFAIL; a listed case that passes is reported so that its
      line can go.
  zoo.py build3 CORPUS_DIR
      the round-3 corpus (build_zoo3.py: fp16, int8, control flow, a two-stage
      detector, models from npm packages), cached beside the first as
      r3-HASH, HASH of build_zoo3.py, build_zoo.py, ort_run3.js and the
      versions; a clean machine builds it (about 2 minutes on 2 cores).
  zoo.py test3 [--threads N] MINFER_CLI CORPUS_DIR PROVIDERS [CASE...]
      runs the round-3 cases, each compared as its zoo.json's `check` says:
      float at rtol/atol, fp16 at rtol 1e-2 / atol 1e-3, quantized within one
      quantization step of every element (`minfer test --rtol 0 --atol STEP`)
      and with ORT's argmax where ORT's top value leads the next by more than
      two steps (`minfer run`'s outputs); known_failures3.txt's cases XFAIL.
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_VERSION = "1.30.0"
PEER_DIR = os.environ.get("MINFER_PEER_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "minfer-peer"))
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch and python3-onnx


def cache_key(files=("build_zoo.py",)):
    h = hashlib.sha256()
    for name in files:
        with open(os.path.join(HERE, name), "rb") as f:
            h.update(f.read())
    probe = subprocess.run(
        [PYTHON, "-c", "import torch, torchvision, onnx; "
                       "print(torch.__version__, torchvision.__version__, onnx.__version__)"],
        capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit("zoo: Debian's python3-torch, python3-torchvision and python3-onnx are "
                 "needed to build the corpus (tools/install-deps.sh): "
                 + probe.stderr.strip().splitlines()[-1])
    h.update(probe.stdout.encode())
    h.update(ORT_VERSION.encode())
    return h.hexdigest()[:16]


def ensure_peer():
    if os.path.isdir(os.path.join(PEER_DIR, "node_modules", "onnxruntime-node")):
        return
    os.makedirs(PEER_DIR, exist_ok=True)
    if not os.path.exists(os.path.join(PEER_DIR, "package.json")):
        subprocess.run(["npm", "init", "-y"], cwd=PEER_DIR, check=True,
                       stdout=subprocess.DEVNULL)
    r = subprocess.run(["npm", "install", "--ignore-scripts", f"onnxruntime-node@{ORT_VERSION}"],
                       cwd=PEER_DIR, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"zoo: npm could not install onnxruntime-node@{ORT_VERSION}: "
                 + (r.stderr.strip().splitlines() or ["?"])[-1])


GROUP3_FILES = ("build_zoo3.py", "build_zoo.py", "ort_run3.js")


def build(corpus, group=1):
    root = os.environ.get("MINFER_ZOO_CACHE",
                          os.path.join(os.path.expanduser("~"), ".cache", "minfer-zoo"))
    os.makedirs(root, exist_ok=True)
    if group == 3:
        key, script = "r3-" + cache_key(GROUP3_FILES), "build_zoo3.py"
    else:
        key, script = cache_key(), "build_zoo.py"
    dest = os.path.join(root, key)
    with open(dest + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # build trees wanting this corpus take turns
        if not os.path.exists(os.path.join(dest, "failed.json")):
            ensure_peer()
            tmp = dest + ".partial"  # an interrupted build goes on from its cases
            print(f"zoo: building the corpus into {dest}", flush=True)
            env = dict(os.environ, MINFER_PEER_DIR=PEER_DIR)
            r = subprocess.run([PYTHON, os.path.join(HERE, script), tmp], env=env)
            if r.returncode != 0:
                sys.exit(f"zoo: {script} exited with {r.returncode}")
            os.rename(tmp, dest)
        else:
            print(f"zoo: the corpus is cached at {dest}", flush=True)
    with open(os.path.join(dest, "failed.json")) as f:
        for e in json.load(f):
            print(f"zoo: not exportable: {e['model']} (opset {e['opset']}): {e['reason']}")
    if os.path.islink(corpus) or os.path.exists(corpus):
        if os.path.isdir(corpus) and not os.path.islink(corpus):
            shutil.rmtree(corpus)
        else:
            os.remove(corpus)
    os.symlink(dest, corpus)
    return 0


def known_failures(providers, listing="known_failures.txt"):
    """{case: reason} listed for this provider list in LISTING."""
    known = {}
    with open(os.path.join(HERE, listing)) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            case, lists, reason = [x.strip() for x in line.split("|", 2)]
            if lists == "*" or providers in lists.split():
                known[case] = reason
    return known


def cases_of(corpus):
    return sorted(d for d in os.listdir(corpus)
                  if os.path.exists(os.path.join(corpus, d, "model.onnx")))


def test(minfer, corpus, providers, only, threads=2):
    corpus = os.path.realpath(corpus)
    cases = only or cases_of(corpus)
    if not cases:
        sys.exit(f"zoo: no cases in {corpus}")
    cmd = [minfer, "test", "--json", "--rtol", "1e-3", "--atol", "1e-4", "--threads", str(threads),
           "--providers", providers] + [os.path.join(corpus, c) for c in cases]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        res = json.loads(r.stdout)
    except json.JSONDecodeError:
        sys.exit(f"zoo: minfer test exited with {r.returncode} and no JSON report")
    by_case = {}
    for e in res["results"]:
        by_case.setdefault(os.path.basename(e["case"]), []).append(e)
    known = known_failures(providers)
    bad = 0
    for c in cases:
        sets = by_case.get(c, [])
        ms = sum(e["time_ms"] for e in sets)
        failed = [e for e in sets if e["status"] != "pass"]
        if len(sets) < 2:
            failed.append({"data_set": "-", "message": f"{len(sets)} data sets ran, 2 expected"})
        if not failed:
            if c in known:
                print(f"PASS  {c} ({ms:.0f} ms; listed in known_failures.txt: remove its line)")
            else:
                print(f"PASS  {c} ({ms:.0f} ms)")
            continue
        for e in failed:
            tag = "XFAIL" if c in known else "FAIL "
            print(f"{tag} {c}/{e['data_set']}: {e['message']}")
        if c in known:
            print(f"      known: {known[c]}")
        else:
            bad += 1
    print(f"zoo on {providers} at {threads} threads: {len(cases)} cases, {bad} failed "
          f"({sum(1 for c in cases if c in known)} known failures)")
    return 1 if bad else 0


def load_tensor(path):
    import numpy as np  # only the round-3 checks need them
    from onnx import TensorProto, numpy_helper
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return np.asarray(numpy_helper.to_array(t))


def argmax_check(minfer, cdir, providers, threads, axis, steps, tmp):
    """minfer's argmax along AXIS of each output equals ORT's wherever ORT's
    top value leads the next by more than two steps; the first difference, or
    None."""
    import numpy as np
    for ds in sorted(d for d in os.listdir(cdir) if d.startswith("test_data_set_")):
        out = os.path.join(tmp, os.path.basename(cdir), ds)
        r = subprocess.run([minfer, "run", "--providers", providers, "--threads", str(threads),
                            "--inputs", os.path.join(cdir, ds), "--outputs", out, "--force",
                            os.path.join(cdir, "model.onnx")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            return f"{ds}: minfer run: " + (r.stderr.strip().splitlines() or ["?"])[-1]
        for j, step in enumerate(steps):
            want = load_tensor(os.path.join(cdir, ds, f"output_{j}.pb")).astype(np.float64)
            got = load_tensor(os.path.join(out, f"output_{j}.pb")).astype(np.float64)
            if want.ndim == 0 or got.shape != want.shape:
                continue
            srt = np.sort(want, axis=axis)
            lead = np.take(srt, -1, axis=axis) - np.take(srt, -2, axis=axis)
            a, b = np.argmax(want, axis=axis), np.argmax(got, axis=axis)
            bad = (lead > 2 * step) & (a != b)
            if bad.any():
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                return (f"{ds}: output {j}: argmax at {at} is {int(b[at])}, ORT's {int(a[at])} "
                        f"({int(bad.sum())} of {int((lead > 2 * step).sum())} positions differ)")
    return None


def test3(minfer, corpus, providers, only, threads=2):
    """The round-3 corpus, each case compared as its zoo.json says."""
    import tempfile
    corpus = os.path.realpath(corpus)
    cases = only or cases_of(corpus)
    if not cases:
        sys.exit(f"zoo: no cases in {corpus}")
    checks = {}
    for c in cases:
        try:
            with open(os.path.join(corpus, c, "zoo.json")) as f:
                checks[c] = json.load(f)["check"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"zoo: {c}: no usable zoo.json in {corpus}: {e}")
    groups = {}  # (rtol, atol) -> cases: one minfer test a tolerance
    for c in cases:
        ck = checks[c]
        tol = (0.0, max(ck["steps"]) * (1 + 1e-6)) if ck["kind"] == "quant" \
            else (ck["rtol"], ck["atol"])
        groups.setdefault(tol, []).append(c)
    by_case = {}
    for (rtol, atol), cs in sorted(groups.items()):
        cmd = [minfer, "test", "--json", "--rtol", repr(rtol), "--atol", repr(atol),
               "--threads", str(threads), "--providers", providers] + \
              [os.path.join(corpus, c) for c in cs]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            res = json.loads(r.stdout)
        except json.JSONDecodeError:
            sys.exit(f"zoo: minfer test exited with {r.returncode} and no JSON report")
        for e in res["results"]:
            by_case.setdefault(os.path.basename(e["case"]), []).append(e)
    known = known_failures(providers, "known_failures3.txt")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in cases:
            sets = by_case.get(c, [])
            ms = sum(e["time_ms"] for e in sets)
            failed = [e for e in sets if e["status"] != "pass"]
            if len(sets) < 2:
                failed.append({"data_set": "-", "message": f"{len(sets)} data sets ran, 2 expected"})
            ck = checks[c]
            if not failed and ck["kind"] == "quant" and ck.get("argmax_axis") is not None:
                why = argmax_check(minfer, os.path.join(corpus, c), providers, threads,
                                   ck["argmax_axis"], ck["steps"], tmp)
                if why:
                    failed.append({"data_set": "-", "message": "argmax: " + why})
            how = (f"within {max(ck['steps']):.3g}" if ck["kind"] == "quant"
                   else f"rtol {ck['rtol']:g} atol {ck['atol']:g}")
            if not failed:
                note = "; listed in known_failures3.txt: remove its line" if c in known else ""
                print(f"PASS  {c} ({how}, {ms:.0f} ms{note})")
                continue
            for e in failed:
                tag = "XFAIL" if c in known else "FAIL "
                print(f"{tag} {c}/{e['data_set']} ({how}): {e['message']}")
            if c in known:
                print(f"      known: {known[c]}")
            else:
                bad += 1
    print(f"zoo3 on {providers} at {threads} threads: {len(cases)} cases, {bad} failed "
          f"({sum(1 for c in cases if c in known)} known failures)")
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "build":
        return build(argv[1])
    if len(argv) >= 2 and argv[0] == "build3":
        return build(argv[1], group=3)
    if len(argv) >= 6 and argv[0] == "test3" and argv[1] == "--threads" and argv[2].isdigit() \
            and int(argv[2]) > 0:
        return test3(argv[3], argv[4], argv[5], argv[6:], int(argv[2]))
    if len(argv) >= 4 and argv[0] == "test3" and argv[1] != "--threads":
        return test3(argv[1], argv[2], argv[3], argv[4:])
    if len(argv) >= 6 and argv[0] == "test" and argv[1] == "--threads" and argv[2].isdigit() \
            and int(argv[2]) > 0:
        return test(argv[3], argv[4], argv[5], argv[6:], int(argv[2]))
    if len(argv) >= 4 and argv[0] == "test" and argv[1] != "--threads":
        return test(argv[1], argv[2], argv[3], argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
