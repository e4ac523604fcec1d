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

A call through a function pointer shows in no object's symbols, so the
check also reads tools/layering-indirections.txt (or --indirections FILE):
every function pointer core/ declares (`(*name)(` in its sources) must be
listed there with the files that call through it and the functions it may
hold. One that holds exactly one function is read as a direct call from each
caller to it: a circle or an upward edge that call makes fails, unless its
line says `known:` why it still stands (then it is printed as known on every
run). An unlisted pointer fails, and so does a listed one that is gone.

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


LOCAL_FUNCS = {}  # object (core-relative source) -> its static functions


def nm_symbols(obj, rel=None):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, used, local = set(), set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRCVWG" or kind in "SI":
            defined.add(name)
        elif kind == "t":
            local.add(name.split(".")[0])  # a static function (gcc may suffix .part.0)
    if rel:
        LOCAL_FUNCS[rel] = local | defined
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
    objs = {rel_object(f): nm_symbols(f, rel_object(f)) for f in files}
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


POINTER_RE = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def declared_pointers(src):
    """Every function pointer's declarator in core/: name -> files."""
    found = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith((".c", ".h")):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = COMMENT_RE.sub(" ", fh.read())
                for name in POINTER_RE.findall(text):
                    found.setdefault(name, set()).add(os.path.relpath(path, src))
    return found


def read_indirections(path):
    """NAME -> (callers, targets, known or None), from the list's lines."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            if len(fields) < 3 or not fields[1].startswith("callers:") or \
                    not fields[2].startswith("targets:"):
                sys.exit("check-layering: %s:%d: want 'NAME | callers: ... | targets: ... "
                         "[| known: why]'" % (path, n))
            callers = [c for c in fields[1][len("callers:"):].split() if c != "-"]
            targets = [t for t in fields[2][len("targets:"):].split() if t not in ("-",)]
            known = None
            if len(fields) > 3 and fields[3].startswith("known:"):
                known = fields[3][len("known:"):].strip()
            out[fields[0]] = (callers, targets, known)
    return out


def indirection_edges(src, listed, bad_lines):
    """The direct calls the one-target pointers stand for: (a, b) -> [name]."""
    declared = declared_pointers(src)
    for name in sorted(set(declared) - set(listed)):
        bad_lines.append("function pointer %s (%s) is not in the indirections list: add it "
                         "with its callers and targets" % (name, ", ".join(sorted(declared[name]))))
    for name in sorted(set(listed) - set(declared)):
        bad_lines.append("indirection %s is listed but core/ declares no such pointer: take "
                         "its line out" % name)
    edges = {}
    for name, (callers, targets, _) in sorted(listed.items()):
        for t in targets:
            if t == "table":
                continue
            tf, _, fn = t.partition(":")
            if fn not in LOCAL_FUNCS.get(tf, ()):
                bad_lines.append("indirection %s: target %s is not a function of %s"
                                 % (name, fn, tf))
        for c in callers:
            if not os.path.exists(os.path.join(src, c)):
                bad_lines.append("indirection %s: caller %s does not exist" % (name, c))
        if len(targets) != 1 or targets[0] == "table":
            continue
        tf, _, fn = targets[0].partition(":")
        for c in callers:
            if c != tf:
                edges.setdefault((c, tf), []).append("%s (through %s)" % (fn, name))
    return edges


def problems(kind, edges):
    """Circles (folders, then the middle's files) and upward edges: key -> lines."""
    out = {}
    for grain_kind, grain in ((kind, folder_of),
                              (kind + " (file)",
                               lambda f: f if folder_of(f) in FILE_CHECKED else None)):
        adj, why = {}, {}
        for (a, b), how in edges.items():
            fa, fb = grain(a), grain(b)
            if fa is None or fb is None or fa == fb:
                continue
            adj.setdefault(fa, set()).add(fb)
            why.setdefault((fa, fb), []).append(
                "%s -> %s: %s" % (a, b, ", ".join(sorted(set(how))[:4])))
        nodes = set(adj) | {b for v in adj.values() for b in v}
        for comp in circles(nodes, adj):
            lines = []
            for a in comp:
                for b in comp:
                    lines += why.get((a, b), [])[:6]
            out[(grain_kind, "circle", tuple(comp))] = (
                "%s circle between %s:" % (grain_kind, ", ".join(comp)), lines)
        if grain_kind == kind:
            for (a, b), lines in sorted(why.items()):
                if not allowed(a, b):
                    out[(kind, "edge", a, b)] = (
                        "%s edge against the layer order: %s -> %s" % (kind, a, b), lines[:6])
            out[(kind, "graph")] = adj
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    ind_path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "layering-indirections.txt")
    for a in sys.argv[1:]:
        if a.startswith("--indirections="):
            ind_path = a.split("=", 1)[1]
    if len(args) < 2:
        sys.exit(__doc__)
    src, objs = args[0], args[1:]
    inc = include_edges(src)
    calls = call_edges(objs)
    listed = read_indirections(ind_path)
    bad_lines = []
    through = indirection_edges(src, listed, bad_lines)
    bad = known = 0
    for line in bad_lines:
        print("check-layering: " + line)
        bad += 1
    merged = {k: list(v) for k, v in calls.items()}
    for k, v in through.items():
        merged.setdefault(k, []).extend(v)
    for kind, edges, plain in (("include", inc, None), ("call", merged, calls)):
        found = problems(kind, edges)
        before = problems(kind, plain) if plain is not None else found
        for key, val in sorted(found.items(), key=lambda kv: str(kv[0])):
            if key[1] == "graph":
                continue
            head, lines = val
            names = sorted({l.split("(through ")[1].rstrip(")").split(")")[0]
                            for l in lines if "(through " in l})
            made = key not in before  # only the pointers' calls make it
            knowns = [listed[n][2] for n in names if n in listed]
            if made and names and all(knowns):
                known += 1
                print("known (through %s): %s" % (", ".join(names), head))
                for n in names:
                    print("    %s: %s" % (n, listed[n][2]))
                continue
            bad += 1
            print(head)
            for line in lines:
                print("    " + line)
        if "--graph" in sys.argv:
            adj = found.get((kind, "graph"), {})
            print("%s graph between folders:" % kind)
            for a in sorted(adj):
                print("    %s -> %s" % (a, ", ".join(sorted(adj[a]))))
    if bad:
        print("check-layering: %d problem(s); order: %s; diag beside (uses %s)"
              % (bad, " < ".join(ORDER), ", ".join(sorted(BESIDE["diag"]))))
        return 1
    print("check-layering: no circle and every edge down %s, but for the %d known above "
          "(the calls through the %d function pointers of %s read too)"
          % (" < ".join(ORDER), known, len(listed), os.path.basename(ind_path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
