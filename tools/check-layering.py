#!/usr/bin/env python3
"""Checks that core/ is layered: no include circle and no call circle.

Usage: tools/check-layering.py CORE_SRC_DIR OBJ... [--graph]

  CORE_SRC_DIR  the sources (core/ of the checkout)
  OBJ...        the object files of the minfer_core target, or the folder
                that holds them (BUILD/core/CMakeFiles/minfer_core.dir; a
                folder may hold objects of files since removed: ctest passes
                the target's own list)
  --graph       also print the folder graph that was derived

Two graphs are derived from the code itself, never from a list kept by hand:

1. Includes: every `#include "folder/file.h"` in core/**/*.{c,h}.
2. Calls (and data uses): `nm` on each object file gives the symbols it
   defines and the symbols it uses; a use of a symbol another core object
   defines is an edge from the user's file to the definer's file.

Both are checked at two grains:

- folders (the pipeline stages): the folder graph has no circle, and every
  edge goes down the order below. diag sits beside the pipeline: any stage
  may use it, and it uses only util and graph.
- files: no circle between the files of the pipeline's middle
  (place, plan, exec, session, diag), which is where the circles were.

It prints each circle or upward edge with the symbols or includes that make
it, and exits 1 if there is one. Run through ctest as `layering`.
"""

import os
import re
import subprocess
import sys

ORDER = ["util", "graph", "load", "shapes", "optimize", "place", "plan", "exec", "session"]
BESIDE = {"diag": {"util", "graph"}}  # folder -> the folders it may use
FILE_CHECKED = {"place", "plan", "exec", "session", "diag"}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel):
    return rel.split("/", 1)[0] if "/" in rel else ""


def include_edges(src):
    edges = {}  # (from_file, to_file) -> [how]
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for inc in INCLUDE_RE.findall(text):
                if not os.path.exists(os.path.join(src, inc)):
                    continue  # generated or public header
                edges.setdefault((rel, inc), []).append("#include \"%s\"" % inc)
    return edges


def nm_symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRCVWG" or kind in "SI":
            defined.add(name)
    return defined, used


def rel_object(path):
    """core-relative name of an object file: .../minfer_core.dir/exec/run.c.o -> exec/run.c"""
    marker = "minfer_core.dir" + os.sep
    k = path.rfind(marker)
    rel = path[k + len(marker):] if k >= 0 else os.path.basename(path)
    return rel[: -len(".o")]


def call_edges(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, f) for f in names if f.endswith(".c.o")]
        elif path.endswith(".o"):
            files.append(path)
    objs = {rel_object(f): nm_symbols(f) for f in files}
    if not objs:
        sys.exit("check-layering: no object files in %s (build first)" % " ".join(paths))
    owner = {}
    for rel, (defined, _) in objs.items():
        for sym in defined:
            owner[sym] = rel
    edges = {}
    for rel, (_, used) in objs.items():
        for sym in used:
            to = owner.get(sym)
            if to and to != rel:
                edges.setdefault((rel, to), []).append(sym)
    return edges


def circles(nodes, adj):
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def allowed(a, b):
    """May folder a use folder b?"""
    if a == b:
        return True
    if a in BESIDE:
        return b in BESIDE[a]
    if b in BESIDE:
        return True
    if a in ORDER and b in ORDER:
        return ORDER.index(b) < ORDER.index(a)
    return False  # a folder the order does not know: add it to ORDER


def report_circles(kind, edges, grain, members_of):
    adj, why = {}, {}
    for (a, b), how in edges.items():
        fa, fb = grain(a), grain(b)
        if fa is None or fb is None or fa == fb:
            continue
        adj.setdefault(fa, set()).add(fb)
        why.setdefault((fa, fb), []).append("%s -> %s: %s" % (a, b, ", ".join(sorted(set(how))[:4])))
    nodes = set(adj) | {b for s in adj.values() for b in s}
    bad = 0
    for comp in circles(nodes, adj):
        if not members_of(comp):
            continue
        bad += 1
        print("%s circle between %s:" % (kind, ", ".join(comp)))
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    for line in why[(a, b)][:6]:
                        print("    " + line)
    return bad, adj, why


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    src, objs = args[0], args[1:]
    inc = include_edges(src)
    calls = call_edges(objs)
    bad = 0
    for kind, edges in (("include", inc), ("call", calls)):
        n, adj, why = report_circles(kind, edges, folder_of, lambda c: True)
        bad += n
        for (a, b), lines in sorted(why.items()):
            if not allowed(a, b):
                bad += 1
                print("%s edge against the layer order: %s -> %s" % (kind, a, b))
                for line in lines[:6]:
                    print("    " + line)
        n, _, _ = report_circles(
            kind + " (file)", edges, lambda f: f if folder_of(f) in FILE_CHECKED else None,
            lambda c: True)
        bad += n
        if "--graph" in sys.argv:
            print("%s graph between folders:" % kind)
            for a in sorted(adj):
                print("    %s -> %s" % (a, ", ".join(sorted(adj[a]))))
    if bad:
        print("check-layering: %d problem(s); order: %s; diag beside (uses %s)"
              % (bad, " < ".join(ORDER), ", ".join(sorted(BESIDE["diag"]))))
        return 1
    print("check-layering: no circles; every edge goes down %s" % " < ".join(ORDER))
    return 0


if __name__ == "__main__":
    sys.exit(main())
