"""Shared helpers for the placement tests: tiny problems and a brute-force
optimiser to check the MILP against."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from itertools import pairwise
from pathlib import Path

import networkx as nx
import pytest

from sluice.placement.model import Flow, Problem, make_problem

ROOT = Path(__file__).resolve().parents[2]

EXAMPLES = ROOT / "examples" / "placement"


def graph(nodes: dict[str, int], links: list[tuple[str, str, float, float]]) -> nx.Graph:
    """nodes: name -> cores; links: (a, b, capacity, delay)."""
    g = nx.Graph()
    for n, c in nodes.items():
        g.add_node(n, cores=c)
    for a, b, cap, d in links:
        g.add_edge(a, b, capacity=cap, delay=d)
    return g


def problem(nodes, links, services, flows, name="t") -> Problem:
    return make_problem(graph(nodes, links), services, flows, name)


def flow(fid, chain, ingress, egress, bw=1.0, max_delay=math.inf) -> Flow:
    return Flow(fid, tuple(chain), ingress, egress, float(bw), max_delay)


def random_tiny(seed: int) -> Problem:
    """A random 3- or 4-node instance small enough to brute-force."""
    rng = random.Random(seed)
    n = rng.choice([3, 4])
    names = "ABCD"[:n]
    nodes = {x: rng.choice([0, 1, 1, 2]) for x in names}
    nodes[names[rng.randrange(n)]] = 1  # at least one node can host
    edges = [(names[i], names[i + 1]) for i in range(n - 1)]
    extra = [(a, b) for a, b in itertools.combinations(names, 2) if (a, b) not in edges]
    edges += rng.sample(extra, rng.randint(1, len(extra)))
    links = [(a, b, float(rng.choice([6, 10])), float(rng.randint(1, 3))) for a, b in edges]
    services = {"s1": rng.choice([1, 2]), "s2": rng.choice([1, 2, 3])}
    flows = []
    for i in range(4):
        a, b = rng.sample(names, 2)
        chain = rng.choice([["s1"], ["s2"], ["s1", "s2"]]) if n == 3 else rng.choice(
            [["s1"], ["s2"]]
        )
        flows.append(
            flow(f"f{i}", chain, a, b, bw=rng.choice([3, 4, 5, 6]),
                 max_delay=rng.choice([math.inf, 4.0, 6.0]))
        )
    return make_problem(graph(nodes, links), services, flows, f"tiny{seed}")


def brute_force(p: Problem) -> tuple[int, float]:
    """(most flows that can be placed, least U among placements of that
    many), by enumerating hosts and simple-path routes for every flow."""
    g = p.graph
    paths: dict[tuple[str, str], list[tuple[str, ...]]] = {}

    def simple(a: str, b: str) -> list[tuple[str, ...]]:
        if (a, b) not in paths:
            paths[(a, b)] = [(a,)] if a == b else [tuple(x) for x in nx.all_simple_paths(g, a, b)]
        return paths[(a, b)]

    options: list[list[tuple[Counter, Counter] | None]] = []
    for f in p.flows:
        opts: list[tuple[Counter, Counter] | None] = [None]
        for hosts in itertools.product(p.nodes, repeat=len(f.chain)):
            if any(p.cores(h) == 0 for h in hosts):
                continue
            ends = [f.ingress, *hosts, f.egress]
            for segs in itertools.product(*[simple(a, b) for a, b in pairwise(ends)]):
                arcs = Counter(arc for s in segs for arc in pairwise(s))
                if sum(p.delay(*arc) * c for arc, c in arcs.items()) > f.max_delay + 1e-9:
                    continue
                load = Counter({arc: c * f.bandwidth for arc, c in arcs.items()})
                served = Counter(zip(hosts, f.chain, strict=True))
                opts.append((load, served))
        options.append(opts)

    best = [-1, math.inf]
    load: Counter = Counter()
    served: Counter = Counter()

    def feasible() -> float | None:
        if any(v > p.capacity(*a) + 1e-9 for a, v in load.items()):
            return None
        cores: Counter = Counter()
        work: Counter = Counter()
        for (n, s), c in served.items():
            if c:
                cores[n] += math.ceil(c / p.flows_per_core(n, s))
                work[n] += c / p.flows_per_core(n, s)
        if any(cores[n] > p.cores(n) for n in cores):
            return None
        return max([0.0] + [v / p.capacity(*a) for a, v in load.items()]
                   + [w / p.cores(n) for n, w in work.items()])

    def dfs(i: int, accepted: int) -> None:
        if accepted + (len(options) - i) < best[0]:
            return  # cannot beat the best count any more
        u = feasible()
        if u is None:
            return
        if i == len(options):
            if (accepted, -u) > (best[0], -best[1]):
                best[0], best[1] = accepted, u
            return
        for o in options[i][1:]:
            load.update(o[0])
            served.update(o[1])
            dfs(i + 1, accepted + 1)
            load.subtract(o[0])
            served.subtract(o[1])
        dfs(i + 1, accepted)

    dfs(0, 0)
    return best[0], best[1]


@pytest.fixture
def example_problem():
    from sluice.placement.io import load_problem

    return load_problem(EXAMPLES / "topology.yaml", EXAMPLES / "flows.yaml")
