#!/usr/bin/python3
"""layout.py - check the shape of lib/: every #include points down the
folder order below (or within its own folder), includes name their folder,
no include cycle between modules (a module is folder/stem: foo.c with
foo.h), and no source file over MAX_LINES lines.

usage: layout.py [LIBDIR]   (default lib); prints each breach, exits 1 on any.
The order is also written down in ARCHITECTURE.md; keep the two in step."""
import os
import re
import sys

# Bottom to top: a folder may include its own headers and those of folders
# before it, never after.
ORDER = ["ir", "quant", "chip", "passes", "front", "back", "sim", "run",
         "calib", "ops", "tool"]
MAX_LINES = 1500
EXTERNAL = {"onnx.pb-c.h"}          # generated into $(B)/gen


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
    for b in bad:
        print(b)
    return 1 if bad else 0


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
