"""SDNFV's greedy baseline (paper section 3.5): "a greedy best effort
heuristic that assigns services to the first available cores on network
nodes in the shortest path for the flow, and, if needed uses additional
cores on neighboring nodes on the flow's path".

Flows are taken in input order and never moved. For each flow: take the
least-delay path with room for its bandwidth; for each service of its chain,
in order, use the first node -- staying on the previous service's node if
possible, then walking on along the path -- that has a spare slot on an
instance of the service or a free core for a new one; failing that, a
neighbour of a path node (from the current position on). Then route between
consecutive hosts on least-delay paths and check delay and link capacity.
"""

from __future__ import annotations

import time
from collections import Counter
from itertools import pairwise

from .diagnose import Analyzer
from .model import Flow, Problem
from .plan import C_DELAY, C_FLOWS_PER_CORE, C_LINK, Plan, Rejection, Route, usage
from .state import Residual, shortest_path


def greedy(problem: Problem) -> Plan:
    t0 = time.perf_counter()
    analyzer = Analyzer(problem)
    state = Residual(problem)
    routes: dict[str, Route] = {}
    rejected: list[Rejection] = []
    for f in problem.flows:
        rej = analyzer.precheck(f)
        if rej is None:
            result = place_greedy(problem, state, f)
            if isinstance(result, Route):
                routes[f.id] = result
                state.commit(f, result)
                continue
            rej = result
        rejected.append(rej)
    plan = Plan(
        algorithm="greedy",
        status="heuristic",
        instances=dict(state.instances),
        routes=routes,
        rejected=tuple(rejected),
        solve_time=time.perf_counter() - t0,
    )
    return usage(problem, plan)


def place_greedy(problem: Problem, state: Residual, f: Flow) -> Route | Rejection:
    """Greedy placement of one flow on top of ``state`` (not modified)."""

    def usable(u: str, v: str) -> bool:
        return state.room((u, v)) + 1e-9 >= f.bandwidth

    sp = shortest_path(problem, f.ingress, f.egress, usable)
    if sp is None:
        return Rejection(
            f.id, C_LINK,
            f"no path from {f.ingress} to {f.egress} has {f.bandwidth:g} spare bandwidth",
        )
    path = sp[0]
    demand: dict[str, Counter[str]] = {}
    hosts: list[str] = []
    pos = 0
    cur: str | None = None

    def fits(node: str, svc: str) -> bool:
        want = Counter(demand.get(node, Counter()))
        want[svc] += 1
        return state.can_host(node, want)

    for svc in f.chain:
        host = None
        for node in ([cur] if cur is not None else []) + list(path[pos:]):
            if fits(node, svc):
                host = node
                break
        if host is None:
            for idx in range(pos, len(path)):
                for nb in sorted(problem.graph.adj[path[idx]]):
                    if nb not in path and fits(nb, svc):
                        host, pos = nb, idx
                        break
                if host is not None:
                    break
        if host is None:
            return Rejection(
                f.id, C_FLOWS_PER_CORE,
                f"greedy: no node on the path {'-'.join(path[pos:])} or next to it has a "
                f"free core or a spare slot on an instance of {svc!r}",
            )
        if host in path[pos:]:
            pos = path.index(host, pos)
        demand.setdefault(host, Counter())[svc] += 1
        hosts.append(host)
        cur = host

    ends = [f.ingress, *hosts, f.egress]
    segments = []
    for a, b in pairwise(ends):
        seg = shortest_path(problem, a, b, usable)
        if seg is None:
            return Rejection(
                f.id, C_LINK, f"greedy: no path from {a} to {b} has {f.bandwidth:g} spare bandwidth"
            )
        segments.append(seg[0])
    route = Route(tuple(hosts), tuple(segments))
    d = route.delay(problem)
    if d > f.max_delay + 1e-9:
        return Rejection(
            f.id, C_DELAY,
            f"greedy: the route through {'-'.join(hosts)} takes {d:.4g}, "
            f"the flow allows {f.max_delay:.4g}",
        )
    arc = state.route_fits(f, route)
    if arc is not None:
        return Rejection(
            f.id, C_LINK,
            f"greedy: link {arc[0]}->{arc[1]} has {state.room(arc):g} spare bandwidth, the "
            f"route crosses it with {f.bandwidth:g} per crossing",
        )
    return route
