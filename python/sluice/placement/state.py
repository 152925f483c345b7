"""Residual capacity bookkeeping shared by the incremental algorithms
(greedy, division, affinity): instances per (node, service), flows served per
(node, service), and load per arc."""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable

from .model import Arc, Flow, Load, Problem, new_load
from .plan import EPS, Route


class Residual:
    def __init__(self, problem: Problem):
        self.problem = problem
        self.instances: Counter[tuple[str, str]] = Counter()
        self.flows: Counter[tuple[str, str]] = Counter()
        self.link: Load = new_load()
        # Extra per-(node, service) flows and per-arc load that must stay
        # free (affinity's shared backup reservations); 0 for other algorithms.
        self.reserved_flows: Counter[tuple[str, str]] = Counter()
        self.reserved_link: Load = new_load()

    # ----- cores ---------------------------------------------------------------
    def free_cores(self, node: str) -> int:
        used = sum(m for (n, _), m in self.instances.items() if n == node)
        return self.problem.cores(node) - used

    def cores_needed(self, node: str, demand: Counter[str] | dict[str, int]) -> int | None:
        """New cores ``node`` must start to serve ``demand`` more flows per
        service on top of what it serves and reserves now; None if it cannot."""
        need = 0
        for svc, extra in demand.items():
            if extra <= 0:
                continue
            p = self.problem.flows_per_core(node, svc)
            if p <= 0:
                return None
            total = self.flows[(node, svc)] + self.reserved_flows[(node, svc)] + extra
            need += max(0, math.ceil(total / p - EPS) - self.instances[(node, svc)])
        if need > self.free_cores(node):
            return None
        return need

    def can_host(self, node: str, demand: Counter[str] | dict[str, int]) -> bool:
        return self.cores_needed(node, demand) is not None

    def ensure_instances(self, node: str, svc: str) -> None:
        p = self.problem.flows_per_core(node, svc)
        total = self.flows[(node, svc)] + self.reserved_flows[(node, svc)]
        want = math.ceil(total / p - EPS) if total > 0 else 0
        if want > self.instances[(node, svc)]:
            self.instances[(node, svc)] = want

    # ----- links -----------------------------------------------------------------
    def room(self, arc: Arc) -> float:
        return self.problem.capacity(*arc) - self.link[arc] - self.reserved_link[arc]

    def route_fits(self, flow: Flow, route: Route) -> Arc | None:
        """The first arc the route would overload (counting repeated
        crossings by this flow), or None if it fits."""
        extra: Load = new_load()
        for arc in route.arcs():
            extra[arc] += flow.bandwidth
        for arc, load in extra.items():
            if load > self.room(arc) + EPS:
                return arc
        return None

    # ----- commit ----------------------------------------------------------------
    def commit(self, flow: Flow, route: Route) -> None:
        for arc in route.arcs():
            self.link[arc] += flow.bandwidth
        for host, svc in zip(route.hosts, flow.chain, strict=True):
            self.flows[(host, svc)] += 1
            self.ensure_instances(host, svc)

    def hostable(self, node: str, svc: str) -> bool:
        """Whether ``node`` could take one more flow of ``svc`` right now."""
        return self.cores_needed(node, {svc: 1}) is not None


def shortest_path(
    problem: Problem,
    src: str,
    dst: str,
    usable: Callable[[str, str], bool],
    avoid: Iterable[str] = (),
) -> tuple[tuple[str, ...], float] | None:
    """Least-delay path over arcs for which ``usable(u, v)`` holds, avoiding
    the nodes in ``avoid`` (except ``src``/``dst`` themselves). Ties are
    broken by hop count, then by node names, so results are deterministic."""
    if src == dst:
        return (src,), 0.0
    banned = set(avoid) - {src, dst}
    g = problem.graph
    best: dict[str, tuple[float, int]] = {src: (0.0, 0)}
    heap: list[tuple[float, int, tuple[str, ...]]] = [(0.0, 0, (src,))]
    while heap:
        d, hops, path = heapq.heappop(heap)
        u = path[-1]
        if u == dst:
            return path, d
        if best.get(u, (math.inf, 0)) < (d, hops):
            continue
        for v in sorted(g.adj[u]):
            if v in banned or v in path or not usable(u, v):
                continue
            nd = d + problem.delay(u, v)
            key = (nd, hops + 1)
            if key < best.get(v, (math.inf, 0)):
                best[v] = key
                heapq.heappush(heap, (nd, hops + 1, (*path, v)))
    return None
