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


def cache_key():
    h = hashlib.sha256()
    with open(os.path.join(HERE, "build_zoo.py"), "rb") as f:
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


def build(corpus):
    root = os.environ.get("MINFER_ZOO_CACHE",
                          os.path.join(os.path.expanduser("~"), ".cache", "minfer-zoo"))
    os.makedirs(root, exist_ok=True)
    key = cache_key()
    dest = os.path.join(root, key)
    with open(dest + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # build trees wanting this corpus take turns
        if not os.path.exists(os.path.join(dest, "failed.json")):
            ensure_peer()
            tmp = dest + ".partial"  # an interrupted build goes on from its cases
            print(f"zoo: building the corpus into {dest}", flush=True)
            env = dict(os.environ, MINFER_PEER_DIR=PEER_DIR)
            r = subprocess.run([PYTHON, os.path.join(HERE, "build_zoo.py"), tmp], env=env)
            if r.returncode != 0:
                sys.exit(f"zoo: build_zoo.py exited with {r.returncode}")
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


def known_failures(providers):
    """{case: reason} listed for this provider list in known_failures.txt."""
    known = {}
    with open(os.path.join(HERE, "known_failures.txt")) as f:
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


def main(argv):
    if len(argv) >= 2 and argv[0] == "build":
        return build(argv[1])
    if len(argv) >= 6 and argv[0] == "test" and argv[1] == "--threads" and argv[2].isdigit() \
            and int(argv[2]) > 0:
        return test(argv[3], argv[4], argv[5], argv[6:], int(argv[2]))
    if len(argv) >= 4 and argv[0] == "test" and argv[1] != "--threads":
        return test(argv[1], argv[2], argv[3], argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
