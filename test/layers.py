#!/usr/bin/env python3
"""layers: which files of lib/ call which, from the symbols of their
objects (nm); the circles among them (strongly connected components), and
the calls that go up a layer.

Usage: test/layers.py [--levels] LIBDIR LAYER...   (make layers)
LIBDIR holds a folder per layer, named bottom first as LAYER...; a file
may call the files of its own layer and of those below it, never above,
and no file may be part of a circle.  Prints each circle (its files, and
for each the functions it takes from the others) and each call up a
layer, or "no circles, no calls up"; exits 1 when there is any, and 2
when LIBDIR holds a source file outside the layers' folders.  With
--levels it also prints each layer's files by level: those of level 0
call no file of their layer, those of level n only files below n.
"""
import os
import subprocess
import sys


def symbols(obj):
    """The global functions and data obj defines, and those it uses."""
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
    return defined, used


def graph(libdir, layers):
    objs = sorted(os.path.join(layer, f) for layer in layers
                  for f in os.listdir(os.path.join(libdir, layer))
                  if f.endswith(".o"))
    owner, uses = {}, {}
    for o in objs:
        d, u = symbols(os.path.join(libdir, o))
        name = o[:-2] + ".c"
        for s in d:
            owner[s] = name
        uses[name] = u
    edges = {}
    for f, u in uses.items():
        edges[f] = {}
        for s in u:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, set()).add(s)
    return edges


def circles(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def strays(libdir, layers):
    """Source files of libdir outside the layers' folders."""
    out = []
    for root, _, files in os.walk(libdir):
        rel = os.path.relpath(root, libdir)
        for f in files:
            if f.endswith(".c") and rel.split(os.sep)[0] not in layers:
                out.append(os.path.join(rel, f))
    return sorted(out)


def levels(edges, layers):
    """Each file's level within its layer (no circles)."""
    lv = {}

    def level(f):
        if f not in lv:
            lv[f] = 0
            same = [g for g in edges[f] if g.split("/")[0] == f.split("/")[0]]
            lv[f] = 1 + max((level(g) for g in same), default=-1)
        return lv[f]

    for layer in layers:
        files = [f for f in edges if f.startswith(layer + "/")]
        for n in range(max((level(f) for f in files), default=-1) + 1):
            names = sorted(f.split("/")[1][:-2] for f in files if lv[f] == n)
            print(f"{layer} {n}: {' '.join(names)}")


def main():
    args = sys.argv[1:]
    show = args[:1] == ["--levels"]
    args = args[1:] if show else args
    if len(args) < 2:
        print("usage: test/layers.py [--levels] LIBDIR LAYER...",
              file=sys.stderr)
        return 2
    libdir, layers = args[0], args[1:]
    bad = strays(libdir, layers)
    for f in bad:
        print(f"{f}: not in a layer's folder ({' '.join(layers)})")
    if bad:
        return 2
    edges = graph(libdir, layers)
    found = circles(edges)
    for comp in found:
        print(f"circle of {len(comp)}: {' '.join(comp)}")
        members = set(comp)
        for f in comp:
            for g in sorted(set(edges[f]) & members):
                print(f"  {f} -> {g}: {' '.join(sorted(edges[f][g]))}")
    rank = {layer: i for i, layer in enumerate(layers)}
    up = 0
    for f in sorted(edges):
        for g in sorted(edges[f]):
            if rank[g.split("/")[0]] > rank[f.split("/")[0]]:
                up += 1
                print(f"up a layer: {f} -> {g}: "
                      f"{' '.join(sorted(edges[f][g]))}")
    if not found and not up:
        print(f"no circles, no calls up: {len(edges)} files in "
              f"{len(layers)} layers")
        if show:
            levels(edges, layers)
    return 1 if found or up else 0


if __name__ == "__main__":
    sys.exit(main())
