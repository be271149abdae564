#!/usr/bin/env python3
"""layers: which files of lib/ call which, from the symbols of their
objects (nm), and the circles among them (strongly connected components).

Usage: test/layers.py [LIBDIR]   (make layers; LIBDIR defaults to lib)
Prints one line per circle, its files, and for each file of a circle the
functions it takes from the others; exits 1 when there is a circle.
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


def graph(libdir):
    objs = sorted(f for f in os.listdir(libdir) if f.endswith(".o"))
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


def main():
    libdir = sys.argv[1] if len(sys.argv) > 1 else "lib"
    edges = graph(libdir)
    found = circles(edges)
    for comp in found:
        print(f"circle of {len(comp)}: {' '.join(comp)}")
        members = set(comp)
        for f in comp:
            for g in sorted(set(edges[f]) & members):
                print(f"  {f} -> {g}: {' '.join(sorted(edges[f][g]))}")
    if not found:
        print("no circles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
