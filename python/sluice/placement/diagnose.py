"""Per-flow feasibility analysis: why a flow cannot be placed at all, and
which hosts and arcs could possibly serve it (used to prune the MILP).

All checks are exact relaxations: a flow rejected here cannot be placed by
any algorithm, and pruned MILP variables cannot be part of any feasible
solution.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx

from .model import Arc, Flow, Problem
from .plan import (
    C_CAPACITY,
    C_CORES,
    C_DELAY,
    C_FLOWS_PER_CORE,
    C_LINK,
    C_ROUTE,
    EPS,
    Rejection,
)
from .state import Residual


@dataclass
class Reach:
    """Delay-feasible hosts and arcs of one flow.

    ``hosts[l]`` are the nodes that may serve chain position ``l``;
    ``arcs[s]`` the arcs segment ``s`` may use (segment ``s`` runs from
    position ``s-1``'s host, or the ingress, to position ``s``'s host, or the
    egress); ``best_delay`` the least total delay of any route.
    """

    hosts: list[list[str]]
    arcs: list[list[Arc]]
    best_delay: float
    # least delay from the ingress to a host of position l (having served
    # positions 1..l), and from it to the egress (serving the rest); index
    # 0 is the ingress stage, len(chain)+1 the egress stage
    fwd: list[dict[str, float]] | None = None
    bwd: list[dict[str, float]] | None = None
    dist: dict[str, dict[str, float]] | None = None  # the distances used


def _distances(problem: Problem, usable: Callable[[str, str], bool]) -> dict[str, dict[str, float]]:
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(problem.graph.nodes)
    for u, v in problem.arcs:
        if usable(u, v):
            g.add_edge(u, v, delay=problem.delay(u, v))
    return {s: d for s, d in nx.all_pairs_dijkstra_path_length(g, weight="delay")}


def _within(x: float, limit: float) -> bool:
    return x <= limit and not math.isinf(x)


class Analyzer:
    """Caches all-pairs distances per bandwidth threshold for one problem."""

    def __init__(self, problem: Problem, host_ok: Callable[[str, str], bool] | None = None):
        self.problem = problem
        self._dist: dict[float, dict[str, dict[str, float]]] = {}
        # host_ok(node, service): may the node run the service at all?
        self.host_ok = host_ok or (
            lambda n, s: problem.cores(n) > 0 and problem.flows_per_core(n, s) > 0
        )

    def dist(
        self, bandwidth: float, room: Callable[[Arc], float] | None = None
    ) -> dict[str, dict[str, float]]:
        if room is not None:  # residual-aware: not cached
            return _distances(self.problem, lambda u, v: room((u, v)) + EPS >= bandwidth)
        if bandwidth not in self._dist:
            p = self.problem
            self._dist[bandwidth] = _distances(
                p, lambda u, v: p.capacity(u, v) + EPS >= bandwidth
            )
        return self._dist[bandwidth]

    def reach(
        self,
        flow: Flow,
        room: Callable[[Arc], float] | None = None,
        host_ok: Callable[[str, str], bool] | None = None,
    ) -> Reach:
        """Exact delay-feasible hosts per position and arcs per segment."""
        p = self.problem
        ok = host_ok or self.host_ok
        dist = self.dist(flow.bandwidth, room)
        nodes = p.nodes
        length = len(flow.chain)

        def d(a: str, b: str) -> float:
            return dist.get(a, {}).get(b, math.inf)

        # stages: 0 = ingress, 1..L = chain positions, L+1 = egress
        stage_nodes: list[list[str]] = [[flow.ingress]]
        for svc in flow.chain:
            stage_nodes.append([n for n in nodes if ok(n, svc)])
        stage_nodes.append([flow.egress])
        fwd: list[dict[str, float]] = [{flow.ingress: 0.0}]
        for st in range(1, length + 2):
            prev = fwd[-1]
            fwd.append(
                {
                    n: min((t + d(m, n) for m, t in prev.items()), default=math.inf)
                    for n in stage_nodes[st]
                }
            )
        bwd: list[dict[str, float]] = [dict() for _ in range(length + 2)]
        bwd[length + 1] = {flow.egress: 0.0}
        for st in range(length, -1, -1):
            nxt = bwd[st + 1]
            bwd[st] = {
                n: min((t + d(n, m) for m, t in nxt.items()), default=math.inf)
                for n in stage_nodes[st]
            }
        best = fwd[length + 1].get(flow.egress, math.inf)
        limit = flow.max_delay + EPS
        hosts = [
            [n for n in stage_nodes[st] if _within(fwd[st][n] + bwd[st][n], limit)]
            for st in range(1, length + 1)
        ]
        arcs: list[list[Arc]] = []
        usable: Callable[[str, str], bool] = (
            lambda u, v: room((u, v)) + EPS >= flow.bandwidth
        ) if room else (
            lambda u, v: p.capacity(u, v) + EPS >= flow.bandwidth
        )
        for s in range(length + 1):
            # earliest arrival at each node within segment s, least remaining
            # delay from each node to the end of the route
            arrive = {
                u: min((t + d(m, u) for m, t in fwd[s].items()), default=math.inf)
                for u in nodes
            }
            remain = {
                v: min((d(v, m) + t for m, t in bwd[s + 1].items()), default=math.inf)
                for v in nodes
            }
            arcs.append(
                [
                    (u, v)
                    for u, v in p.arcs
                    if usable(u, v) and _within(arrive[u] + p.delay(u, v) + remain[v], limit)
                ]
            )
        return Reach(hosts, arcs, best, fwd, bwd, dist)

    def precheck(self, flow: Flow) -> Rejection | None:
        """Why ``flow`` cannot be placed even in an empty network, or None."""
        p = self.problem
        for svc in flow.chain:
            if not any(self.host_ok(n, svc) for n in p.nodes):
                return Rejection(
                    flow.id,
                    C_CORES,
                    f"no node can run service {svc!r}: every node has 0 cores or "
                    f"0 flows per core for it; add cores to a node",
                )
        dist = self.dist(flow.bandwidth)
        if math.isinf(dist.get(flow.ingress, {}).get(flow.egress, math.inf)):
            # maybe a wider graph connects them but too thin for the flow
            any_path = nx.has_path(p.graph, flow.ingress, flow.egress)
            if any_path:
                return Rejection(
                    flow.id,
                    C_LINK,
                    f"every path from {flow.ingress} to {flow.egress} has a link with less "
                    f"capacity than the flow's bandwidth {flow.bandwidth:g}",
                )
            return Rejection(
                flow.id,
                C_ROUTE,
                f"{flow.ingress} and {flow.egress} are not connected in the topology",
            )
        r = self.reach(flow)
        if math.isinf(r.best_delay):
            loose = self.reach(Flow(flow.id, flow.chain, flow.ingress, flow.egress, flow.bandwidth))
            missing = [svc for svc, hs in zip(flow.chain, loose.hosts, strict=True) if not hs]
            return Rejection(
                flow.id,
                C_ROUTE,
                f"no node reachable between {flow.ingress} and {flow.egress} can run "
                f"{', '.join(missing) or 'the chain'} over links with enough capacity",
            )
        if r.best_delay > flow.max_delay + EPS:
            return Rejection(
                flow.id,
                C_DELAY,
                f"the fastest route from {flow.ingress} through nodes able to run "
                f"{'-'.join(flow.chain)} to {flow.egress} takes {r.best_delay:.4g}, "
                f"the flow allows {flow.max_delay:.4g}",
            )
        return None


def capacity_reason(analyzer: Analyzer, flow: Flow, state: Residual) -> Rejection:
    """Why ``flow`` does not fit in the residual capacity ``state`` (called for
    flows that passed :meth:`Analyzer.precheck` but were not placed)."""
    r = analyzer.reach(flow, room=state.room, host_ok=lambda n, s: state.hostable(n, s))
    if not all(r.hosts):
        # Hosts with room exist, but the links that lead to them within the
        # delay bound are loaded: that is the link limit (8), not cores (7).
        wide = analyzer.reach(flow, host_ok=lambda n, s: state.hostable(n, s))
        if all(wide.hosts):
            bound = (f" within the delay bound {flow.max_delay:.4g}"
                     if math.isfinite(flow.max_delay) else "")
            return Rejection(
                flow.id,
                C_LINK,
                f"every route from {flow.ingress} to {flow.egress} through nodes with room "
                f"for {'-'.join(flow.chain)}{bound} crosses a link with less than "
                f"{flow.bandwidth:g} spare bandwidth (loaded by the flows already accepted)",
            )
    for svc, hosts in zip(flow.chain, r.hosts, strict=True):
        if not hosts:
            return Rejection(
                flow.id,
                C_FLOWS_PER_CORE,
                f"no node that a delay-feasible route with spare bandwidth can reach has a "
                f"free core or a spare slot on an instance of {svc!r} "
                f"(every core is in use by the flows already accepted)",
            )
    if math.isinf(r.best_delay):
        return Rejection(
            flow.id,
            C_LINK,
            f"no route from {flow.ingress} to {flow.egress} through hosts for "
            f"{'-'.join(flow.chain)} has {flow.bandwidth:g} spare bandwidth on every link",
        )
    if r.best_delay > flow.max_delay + EPS:
        return Rejection(
            flow.id,
            C_LINK,
            f"routes with {flow.bandwidth:g} spare bandwidth take at least "
            f"{r.best_delay:.4g}; the flow allows {flow.max_delay:.4g} (delay bound (6))",
        )
    return Rejection(
        flow.id,
        C_CAPACITY,
        "together with the flows already accepted, no choice of hosts and routes meets the "
        "core (1), flows-per-core (7) and link (8) limits for this flow",
    )
