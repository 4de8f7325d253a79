#!/usr/bin/python3
"""layout.py - check the shape of lib/: every #include points down the
folder order below (or within its own folder), includes name their folder,
no include cycle between modules (a module is folder/stem: foo.c with
foo.h), and no source file over MAX_LINES lines.  Given the folder of the
library's objects too, the same rules hold for calls: a module's undefined
symbols (nm) are defined only in its own folder or below, and no modules
call each other in a cycle.  The one exception is the operator table
op_defs (lib/ops/registry.c), which the stages below reach through its
declaration in lib/ir/op.h: the op files plug into every stage.

usage: layout.py [LIBDIR [OBJDIR]]   (default lib); prints each breach,
exits 1 on any.  The order is also written down in ARCHITECTURE.md; keep
the two in step."""
import os
import re
import subprocess
import sys

# Bottom to top: a folder may include its own headers and those of folders
# before it, never after.
ORDER = ["ir", "quant", "chip", "passes", "front", "back", "sim", "run",
         "calib", "ops", "tool", "api"]
MAX_LINES = 1500
EXTERNAL = {"onnx.pb-c.h"}          # generated into $(B)/gen
INVERTED = {"op_defs"}              # defined above, declared below (see top)


def main():
    lib = sys.argv[1] if len(sys.argv) > 1 else "lib"
    rank = {f: i for i, f in enumerate(ORDER)}
    bad = []
    edges = {}
    for folder in sorted(os.listdir(lib)):
        path = os.path.join(lib, folder)
        if not os.path.isdir(path):
            if folder.endswith((".c", ".h")):
                bad.append(f"{lib}/{folder}: source outside a stage folder")
            continue
        if folder not in rank:
            bad.append(f"{lib}/{folder}: folder not in the order {' < '.join(ORDER)}")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h", ".c.in")):
                continue
            src = f"{folder}/{name}"
            mod = f"{folder}/{name.split('.')[0]}"
            edges.setdefault(mod, set())
            with open(os.path.join(path, name), encoding="utf-8") as f:
                lines = f.read().split("\n")
            if len(lines) - 1 > MAX_LINES:
                bad.append(f"{lib}/{src}: {len(lines) - 1} lines, over {MAX_LINES}")
            for no, line in enumerate(lines, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m or m.group(1) in EXTERNAL:
                    continue
                inc = m.group(1)
                where = f"{lib}/{src}:{no}"
                if "/" not in inc:
                    bad.append(f'{where}: #include "{inc}" does not name its folder')
                    continue
                to = inc.split("/")[0]
                if to not in rank:
                    bad.append(f'{where}: #include "{inc}": no folder {to} in the order')
                elif rank[to] > rank[folder]:
                    bad.append(f'{where}: #include "{inc}" points up ({folder} is below {to})')
                tomod = inc.rsplit(".", 1)[0]
                if tomod != mod:
                    edges[mod].add(tomod)
    for cyc in cycles(edges):
        bad.append("include cycle between modules: " + " -> ".join(cyc + [cyc[0]]))
    if len(sys.argv) > 2:
        bad += calls(lib, sys.argv[2], rank)
    for b in bad:
        print(b)
    return 1 if bad else 0


def calls(lib, objdir, rank):
    """Breaches of the order and cycles in who calls whom, from nm."""
    defs, undef, bad = {}, {}, []
    for folder in sorted(os.listdir(objdir)):
        if folder not in rank:
            continue
        for name in sorted(os.listdir(os.path.join(objdir, folder))):
            if not name.endswith(".o") or not os.path.exists(
                    os.path.join(lib, folder, name[:-2] + ".c")):
                continue                    # not ours, or stale
            mod = f"{folder}/{name[:-2]}"
            out = subprocess.run(["nm", os.path.join(objdir, folder, name)],
                                 capture_output=True, text=True, check=True).stdout
            undef[mod] = set()
            for line in out.splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "TDBRC":
                    defs[f[2]] = mod
                elif len(f) == 2 and f[0] == "U" and f[1] not in INVERTED:
                    undef[mod].add(f[1])
    edges = {}
    for mod, syms in sorted(undef.items()):
        edges[mod] = set()
        for sym in sorted(syms):
            to = defs.get(sym)
            if not to or to == mod:
                continue
            edges[mod].add(to)
            if rank[to.split("/")[0]] > rank[mod.split("/")[0]]:
                bad.append(f"{objdir}/{mod}.o calls {sym} of {to}: points up")
    for cyc in cycles(edges):
        bad.append("call cycle between modules: " + " -> ".join(cyc + [cyc[0]]))
    return bad


def cycles(edges):
    """One cycle per strongly connected component of more than one module
    (Tarjan), as a list of modules."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
                out.append(path_in(edges, set(comp), min(comp)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def path_in(edges, comp, start):
    """A cycle through start within comp (breadth-first back to start)."""
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges.get(v, ())):
            if w == start:
                cyc = [v]
                while prev[cyc[-1]] is not None:
                    cyc.append(prev[cyc[-1]])
                return cyc[::-1]
            if w in comp and w not in prev:
                prev[w] = v
                todo.append(w)
    return [start]


if __name__ == "__main__":
    sys.exit(main())
