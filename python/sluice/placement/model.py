"""Problem model for the placement engine.

A :class:`Problem` is a topology (an undirected :class:`networkx.Graph` whose
nodes carry ``cores`` and whose links carry ``capacity`` and ``delay``), a set
of :class:`Service` definitions (how many flows one core running the service
can carry), and the :class:`Flow` s to place, each with its service chain.

Units are the user's, but must be consistent: the examples and docs use Mbit/s
for link capacity and flow bandwidth and milliseconds for delays.

Links are full duplex: ``capacity`` applies to each direction separately, so
internally every link is two *arcs* ``(u, v)`` and ``(v, u)``.

Everything here is pure: no file or network access (see :mod:`.io` for that).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeGuard, cast

import networkx as nx

Arc = tuple[str, str]
# Bandwidth per arc. At run time a Counter (a missing arc reads 0); typed as
# a dict because typeshed gives a Counter's values the type int.
Load = dict[Arc, float]


def new_load(init: Mapping[Arc, float] | None = None) -> Load:
    """A Counter of bandwidth per arc, empty or a copy of ``init``."""
    return cast(Load, Counter(init or {}))


class ProblemError(ValueError):
    """The problem description is malformed (not merely infeasible).

    ``issues`` lists every problem found, each a complete sentence that names
    the offending item and says what to do.
    """

    def __init__(self, issues: list[str] | str):
        if isinstance(issues, str):
            issues = [issues]
        self.issues = list(issues)
        super().__init__("; ".join(self.issues))


@dataclass(frozen=True)
class Service:
    """A network function type: ``flows_per_core`` is P_j in SDNFV's MILP."""

    name: str
    flows_per_core: int


@dataclass(frozen=True)
class Flow:
    """A flow to place: it enters at ``ingress``, must visit ``chain`` in order
    and leave at ``egress``, using ``bandwidth`` on every link it crosses and
    tolerating at most ``max_delay`` of total link delay (``math.inf``: none)."""

    id: str
    chain: tuple[str, ...]
    ingress: str
    egress: str
    bandwidth: float
    max_delay: float = math.inf
    flow_class: str | None = None


@dataclass(frozen=True, eq=False)
class Problem:
    """A placement problem. Build it with :func:`make_problem`, which checks it."""

    graph: nx.Graph[str]
    services: dict[str, Service]
    flows: tuple[Flow, ...]
    name: str = "problem"
    # Optional per-node override of flows per core: {(node, service): P_ij}.
    node_flows_per_core: dict[tuple[str, str], int] = field(default_factory=dict)

    # ----- topology accessors -------------------------------------------------
    @property
    def nodes(self) -> list[str]:
        return list(self.graph.nodes)

    @cached_property
    def arcs(self) -> list[Arc]:
        """Both directions of every link, in a deterministic order."""
        out: list[Arc] = []
        for u, v in self.graph.edges:
            out.append((u, v))
            out.append((v, u))
        return out

    def cores(self, node: str) -> int:
        return int(self.graph.nodes[node]["cores"])

    def capacity(self, u: str, v: str) -> float:
        return float(self.graph.edges[u, v]["capacity"])

    def delay(self, u: str, v: str) -> float:
        return float(self.graph.edges[u, v]["delay"])

    def flows_per_core(self, node: str, service: str) -> int:
        """P_ij: flows one core of ``node`` carries when it runs ``service``."""
        override = self.node_flows_per_core.get((node, service))
        if override is not None:
            return override
        return self.services[service].flows_per_core

    @cached_property
    def total_cores(self) -> int:
        return sum(self.cores(n) for n in self.graph.nodes)

    @cached_property
    def min_delay(self) -> dict[str, dict[str, float]]:
        """All-pairs shortest link delay (ignoring capacity)."""
        return {
            src: dist
            for src, dist in nx.all_pairs_dijkstra_path_length(self.graph, weight="delay")
        }

    def dist(self, u: str, v: str) -> float:
        return self.min_delay.get(u, {}).get(v, math.inf)

    @cached_property
    def flow_by_id(self) -> dict[str, Flow]:
        return {f.id: f for f in self.flows}

    def with_flows(self, flows: list[Flow] | tuple[Flow, ...]) -> Problem:
        """The same network and services with another set of flows."""
        return Problem(
            graph=self.graph,
            services=self.services,
            flows=tuple(flows),
            name=self.name,
            node_flows_per_core=self.node_flows_per_core,
        )

    def scaled(self, multiplier: float) -> Problem:
        """Scale link capacities and per-core flow capacities by ``multiplier``
        (SDNFV Fig. 5's "1-100x of the original CPU and link capacity"; cores
        per node stay the same, each core gets faster)."""
        g = self.graph.copy()
        for _, _, data in g.edges(data=True):
            data["capacity"] = data["capacity"] * multiplier
        services = {
            name: Service(name, max(1, int(round(s.flows_per_core * multiplier))))
            for name, s in self.services.items()
        }
        overrides = {
            k: max(1, int(round(v * multiplier))) for k, v in self.node_flows_per_core.items()
        }
        return Problem(g, services, self.flows, f"{self.name} x{multiplier:g}", overrides)


def make_problem(
    graph: nx.Graph[str],
    services: dict[str, Service] | dict[str, int],
    flows: list[Flow] | tuple[Flow, ...],
    name: str = "problem",
    node_flows_per_core: dict[tuple[str, str], int] | None = None,
) -> Problem:
    """Check and normalise a problem; raise :class:`ProblemError` listing every
    structural issue (unknown nodes or services, bad numbers, duplicate ids).

    Infeasibility (no route, delay too tight, too few cores) is *not* an error:
    the algorithms report such flows as rejected, with the reason.
    """
    issues: list[str] = []
    svc: dict[str, Service] = {}
    for key, value in services.items():
        sv = value if isinstance(value, Service) else Service(str(key), int(value))
        if sv.flows_per_core < 1:
            issues.append(
                f"service {sv.name!r}: flows_per_core must be a positive integer, "
                f"got {sv.flows_per_core}"
            )
        svc[sv.name] = sv

    g: nx.Graph[str] = nx.Graph(name=graph.graph.get("name", name))
    for node, data in graph.nodes(data=True):
        cores = data.get("cores", 0)
        if not isinstance(cores, int) or isinstance(cores, bool) or cores < 0:
            issues.append(f"node {node!r}: cores must be a non-negative integer, got {cores!r}")
            cores = 0
        g.add_node(str(node), **{**data, "cores": cores})
    for u, v, data in graph.edges(data=True):
        if u == v:
            issues.append(f"link {u!r}-{v!r}: a link must join two different nodes")
            continue
        cap = data.get("capacity")
        dly = data.get("delay", 0.0)
        if not _is_number(cap) or cap <= 0:
            issues.append(f"link {u!r}-{v!r}: capacity must be a positive number, got {cap!r}")
            cap = 1.0
        if not _is_number(dly) or dly < 0 or math.isnan(dly):
            issues.append(f"link {u!r}-{v!r}: delay must be a number >= 0, got {dly!r}")
            dly = 0.0
        g.add_edge(str(u), str(v), **{**data, "capacity": float(cap), "delay": float(dly)})

    if g.number_of_nodes() == 0:
        issues.append("the topology has no nodes: give it at least one (a host with cores)")

    seen: set[str] = set()
    known = _preview(sorted(g.nodes))
    for f in flows:
        where = f"flow {f.id!r}"
        if f.id in seen:
            issues.append(f"{where}: duplicate flow id; give every flow a unique id")
        seen.add(f.id)
        for role, node in (("ingress", f.ingress), ("egress", f.egress)):
            if node not in g:
                issues.append(f"{where}: {role} {node!r} is not a node of the topology "
                              f"({known}): fix the name or add the node to the topology")
        if not f.chain:
            issues.append(f"{where}: the service chain is empty: list the services the flow "
                          f"goes through")
        for s in f.chain:
            if s not in svc:
                issues.append(
                    f"{where}: service {s!r} in its chain is not defined "
                    f"(defined: {_preview(sorted(svc))})"
                )
        if not _is_number(f.bandwidth) or f.bandwidth < 0:
            issues.append(f"{where}: bandwidth must be a number >= 0, got {f.bandwidth!r}")
        if not _is_number(f.max_delay) or f.max_delay < 0 or math.isnan(f.max_delay):
            issues.append(f"{where}: max_delay must be a number >= 0, got {f.max_delay!r}")

    overrides = dict(node_flows_per_core or {})
    for (node, s), p in overrides.items():
        if node not in g or s not in svc:
            issues.append(f"flows_per_core override ({node!r}, {s!r}): unknown node or service")
        elif not isinstance(p, int) or p < 0:
            issues.append(f"flows_per_core override ({node!r}, {s!r}): must be an integer >= 0")
    if issues:
        raise ProblemError(issues)
    return Problem(g, svc, tuple(flows), name, overrides)


def _is_number(x: object) -> TypeGuard[int | float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _preview(names: list[str], limit: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return f"known: {shown}" + (f", ... ({len(names)} in all)" if len(names) > limit else "")


# ----- topology builders (pure) ----------------------------------------------


def synthetic_graph(
    n_nodes: int,
    n_edges: int,
    seed: int,
    cores: int = 2,
    capacity: float = 1000.0,
    delay_per_unit: float = 10.0,
) -> nx.Graph[str]:
    """A seeded connected random graph with exactly ``n_edges`` links.

    Nodes get random positions in the unit square (attribute ``pos``); link
    delay is the Euclidean length times ``delay_per_unit`` (ms). Built as a
    random spanning tree plus uniformly chosen extra links, so it is always
    connected and the same seed gives the same graph.
    """
    if n_nodes < 2:
        raise ProblemError("a synthetic topology needs at least 2 nodes")
    max_edges = n_nodes * (n_nodes - 1) // 2
    if not n_nodes - 1 <= n_edges <= max_edges:
        raise ProblemError(
            f"a connected simple graph on {n_nodes} nodes has between {n_nodes - 1} "
            f"and {max_edges} links; {n_edges} were asked for: set edges in that range"
        )
    rng = random.Random(seed)
    names = [f"n{i:02d}" for i in range(n_nodes)]
    pos = {n: (rng.random(), rng.random()) for n in names}
    g: nx.Graph[str] = nx.Graph(name=f"synthetic-{n_nodes}n-{n_edges}e-s{seed}")
    for n in names:
        g.add_node(n, cores=cores, pos=pos[n])
    order = names[:]
    rng.shuffle(order)
    for i in range(1, n_nodes):  # random tree: attach each node to an earlier one
        g.add_edge(order[i], order[rng.randrange(i)])
    candidates = [
        (a, b) for i, a in enumerate(names) for b in names[i + 1 :] if not g.has_edge(a, b)
    ]
    for a, b in rng.sample(candidates, n_edges - (n_nodes - 1)):
        g.add_edge(a, b)
    for a, b in g.edges:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        g.edges[a, b]["capacity"] = float(capacity)
        g.edges[a, b]["delay"] = round(math.hypot(xa - xb, ya - yb) * delay_per_unit, 4)
    return g


def random_flows(
    graph: nx.Graph[str],
    count: int,
    chain: tuple[str, ...],
    seed: int,
    bandwidth: float | tuple[float, float] = 100.0,
    delay_stretch: float | None = 2.0,
    min_delay: float = 0.0,
    flow_class: str | None = None,
    prefix: str = "f",
) -> list[Flow]:
    """``count`` seeded flows between distinct random node pairs.

    ``max_delay`` is ``max(min_delay, delay_stretch * shortest delay)`` or
    unbounded when ``delay_stretch`` is None. ``bandwidth`` is a constant or a
    ``(low, high)`` range drawn uniformly (rounded to integers).
    """
    graph = nx.relabel_nodes(graph, str, copy=True)
    rng = random.Random(seed)
    nodes = sorted(graph.nodes)
    if len(nodes) < 2:
        raise ProblemError("random flows need a topology with at least 2 nodes: add nodes, "
                           "or list the flows under flows")
    dist = dict(nx.all_pairs_dijkstra_path_length(graph, weight="delay"))
    flows = []
    for i in range(count):
        a, b = rng.sample(nodes, 2)
        if isinstance(bandwidth, tuple):
            bw = float(rng.randint(int(bandwidth[0]), int(bandwidth[1])))
        else:
            bw = float(bandwidth)
        d = dist.get(a, {}).get(b, math.inf)
        if delay_stretch is None or math.isinf(d):
            md = math.inf
        else:
            md = round(max(min_delay, delay_stretch * d), 4)
        flows.append(Flow(f"{prefix}{i + 1}", tuple(chain), a, b, bw, md, flow_class))
    return flows
