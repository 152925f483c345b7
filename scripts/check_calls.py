#!/usr/bin/env python3
"""Calls between sluiced's modules, read from the static library's objects.

    scripts/check_calls.py [OBJDIR]     (default build/src/mgr/libsluiced_mgr.a.p)

A module is a folder of src/mgr (flow/, rules/, registry/...) or a file at
its top (control.c, io.c...); X_rpc.c counts as X. For every object the
symbols it uses (nm: U) and defines (T, D, B, R) give an edge "module A
calls or reads module B". It prints the modules, every group of modules
that reach each other (a strongly connected component: a cycle), and for
each edge inside such a group the symbols that make it, so the cycle can be
cut where it is cheapest. It also lists every external symbol the objects
define with the prefix `sl_`, which names libsluice's public API and the
code sluiced shares with NFs (src/common): sluiced's own are `mgr_` or
static. Exit status 1 when a cycle exists (issue 28: "calls between
sluiced's modules form no cycle") or such a symbol does; `make lint` runs
it.
base/ (the methods' helpers and read-only views) is a module like the
others, and must stay below them.
"""

from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import networkx as nx

FOLDERS = ("base", "ctl", "flow", "ports", "registry", "requests", "rules", "stats")


def module(obj: Path) -> str:
    name = obj.name.removesuffix(".o").removesuffix(".c")  # flow_table.c.o -> flow_table
    for folder in FOLDERS:
        if name == folder or name.startswith(folder + "_"):
            return folder
    return name.removesuffix("_rpc")


def call_graph(objdir: Path) -> tuple[nx.DiGraph[str], dict[str, str]]:
    """The module call graph, and every defined symbol -> its module."""
    defs: dict[str, str] = {}
    uses: dict[str, set[str]] = collections.defaultdict(set)
    for obj in sorted(objdir.glob("*.o")):
        m = module(obj)
        out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defs[parts[2]] = m
            elif len(parts) == 2 and parts[0] == "U":
                uses[m].add(parts[1])
    g: nx.DiGraph[str] = nx.DiGraph()
    for m, syms in uses.items():
        g.add_node(m)
        for s in sorted(syms):
            if s in defs and defs[s] != m:
                if not g.has_edge(m, defs[s]):
                    g.add_edge(m, defs[s], syms=[])
                g[m][defs[s]]["syms"].append(s)
    return g, defs


def main() -> int:
    objdir = Path(sys.argv[1] if len(sys.argv) > 1 else "build/src/mgr/libsluiced_mgr.a.p")
    if not objdir.is_dir():
        print(f"check_calls: {objdir} not found: build first (make build)", file=sys.stderr)
        return 2
    g, defs = call_graph(objdir)
    print("modules:", " ".join(sorted(g.nodes)))
    public = sorted(s for s in defs if s.startswith("sl_"))
    for s in public:
        print(f"check_calls: {defs[s]} defines {s}: sl_ is libsluice's public prefix; "
              f"name it mgr_{s[3:]} or make it static")
    groups = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    for group in groups:
        print("cycle among:", " ".join(group))
        for a in group:
            for b in group:
                if g.has_edge(a, b):
                    syms = g[a][b]["syms"]
                    print(f"  {a} -> {b}: {', '.join(syms[:5])}{' ...' if len(syms) > 5 else ''}")
    if not groups:
        print("check_calls: no cycle")
    return 1 if groups or public else 0


if __name__ == "__main__":
    sys.exit(main())
