"""OpenPATH's affinity-aware placement with backup sub-chains (OpenPATH
paper section 5.4 and 6.5).

* **High affinity** for the active chain: each flow's whole chain is placed on
  one node when some node can run it, so packets move between its NFs through
  shared memory, not links. Otherwise the chain is split into as few
  sub-chains (runs of consecutive services) as possible, each on one node.
* **Low affinity** for the backups: every active sub-chain gets a backup
  sub-chain on a *different* node, placed after the active ones ("the
  operational sub-SFCs are mapped first, and then the backup sub-SFCs").
* **Pre-computed backup routes**: for every node ``x`` on a flow's active
  route whose failure would break it -- a node hosting one of its sub-chains
  or forwarding its packets -- the plan carries a complete route that avoids
  ``x``, using the backup sub-chains of the sub-chains ``x`` hosted, and that
  still meets the flow's delay bound. A flow that cannot be protected this
  way is rejected, so *any single node failure leaves every accepted flow a
  complete path*. (A flow's own ingress and egress cannot be avoided; if
  they host services, their scenario moves the services to the backup node
  and keeps forwarding through them.)
* **Capacity for backups is reserved, shared between failures**: backup
  instances are started in advance (OpenPATH's NF processes wait in
  sleep-wait state) and, because only one node fails at a time, the spare
  flow slots on an instance and the spare bandwidth on a link are sized for
  the worst single failure, not for the sum of all of them.

Flows are taken in input order and never moved.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from itertools import pairwise

from .diagnose import Analyzer
from .model import Arc, Flow, Load, Problem, new_load
from .plan import (
    C_BACKUP,
    C_DELAY,
    C_FLOWS_PER_CORE,
    C_LINK,
    EPS,
    Plan,
    Protection,
    Rejection,
    Route,
    usage,
)
from .state import Residual, shortest_path


class AffinityState(Residual):
    """Residual capacity plus, per failure scenario ``x``, the flows and
    bandwidth that would move onto each (node, service) and arc."""

    def __init__(self, problem: Problem):
        super().__init__(problem)
        self.fo_flows: dict[str, Counter[tuple[str, str]]] = {}
        self.fo_link: dict[str, Load] = {}

    def clone(self) -> AffinityState:
        c = AffinityState(self.problem)
        c.instances = Counter(self.instances)
        c.flows = Counter(self.flows)
        c.link = new_load(self.link)
        c.reserved_flows = Counter(self.reserved_flows)
        c.reserved_link = new_load(self.reserved_link)
        c.fo_flows = {x: Counter(v) for x, v in self.fo_flows.items()}
        c.fo_link = {x: new_load(v) for x, v in self.fo_link.items()}
        return c

    def scenario_room(self, x: str, arc: Arc) -> float:
        return self.problem.capacity(*arc) - self.link[arc] - self.fo_link.get(x, new_load())[arc]

    def node_ok(self, node: str) -> bool:
        """Every service on ``node`` has instances for its active flows plus
        the worst single-failure reservation, within the node's cores."""
        cores = 0
        svcs = {s for (n, s) in self.flows if n == node} | {
            s for (n, s) in self.reserved_flows if n == node
        }
        for svc in svcs:
            p = self.problem.flows_per_core(node, svc)
            total = self.flows[(node, svc)] + self.reserved_flows[(node, svc)]
            if total > 0 and p <= 0:
                return False
            cores += math.ceil(total / p - EPS) if total > 0 else 0
        return cores <= self.problem.cores(node)

    def add_primary(self, flow: Flow, route: Route) -> None:
        for arc in route.arcs():
            self.link[arc] += flow.bandwidth
        for host, svc in zip(route.hosts, flow.chain, strict=True):
            self.flows[(host, svc)] += 1

    def add_scenario(self, x: str, flow: Flow, primary: Route, alt: Route) -> None:
        fo = self.fo_flows.setdefault(x, Counter())
        for l_, svc in enumerate(flow.chain):
            if alt.hosts[l_] != primary.hosts[l_]:
                fo[(alt.hosts[l_], svc)] += 1
                key = (alt.hosts[l_], svc)
                self.reserved_flows[key] = max(self.reserved_flows[key], fo[key])
        base = Counter(primary.arcs())
        fl = self.fo_link.setdefault(x, new_load())
        for arc, cnt in Counter(alt.arcs()).items():
            extra = max(0, cnt - base[arc]) * flow.bandwidth
            if extra:
                fl[arc] += extra
                self.reserved_link[arc] = max(self.reserved_link[arc], fl[arc])

    def finish(self, nodes: set[str]) -> str | None:
        """Start the instances the touched nodes now need; return a node
        that would need more cores than it has, or None."""
        for n in sorted(nodes):
            if not self.node_ok(n):
                return n
        for (n, svc) in list(self.flows) + list(self.reserved_flows):
            if n in nodes:
                self.ensure_instances(n, svc)
        return None

    def arcs_ok(self, arcs: set[Arc]) -> Arc | None:
        for arc in sorted(arcs):
            if self.link[arc] + self.reserved_link[arc] > self.problem.capacity(*arc) + EPS:
                return arc
        return None


def affinity(problem: Problem, *, candidates: int = 8) -> Plan:
    """Place every flow with a high-affinity active chain and backup
    sub-chains; ``candidates`` bounds how many host nodes are tried per
    flow (nearest first)."""
    t0 = time.perf_counter()
    analyzer = Analyzer(problem)
    state = AffinityState(problem)
    routes: dict[str, Route] = {}
    protection: dict[str, Protection] = {}
    rejected: list[Rejection] = []
    for f in problem.flows:
        rej = analyzer.precheck(f)
        if rej is None:
            result = _place(problem, state, f, candidates)
            if isinstance(result, Rejection):
                rej = result
            else:
                state, route, prot = result
                routes[f.id] = route
                protection[f.id] = prot
                continue
        rejected.append(rej)
    plan = Plan(
        algorithm="affinity",
        status="heuristic",
        instances=dict(state.instances),
        routes=routes,
        rejected=tuple(rejected),
        solve_time=time.perf_counter() - t0,
        protection=protection,
        details={
            "subchains": sum(len(_groups(r.hosts)) for r in routes.values()),
            "single_node_chains": sum(1 for r in routes.values() if len(set(r.hosts)) == 1),
            "reserved_backup_slots": sum(state.reserved_flows.values()),
        },
    )
    return usage(problem, plan)


def _groups(hosts: tuple[str, ...] | list[str]) -> list[tuple[int, int, str]]:
    """Runs of consecutive positions on the same node: (start, end, node)."""
    out: list[tuple[int, int, str]] = []
    for i, h in enumerate(hosts):
        if out and out[-1][2] == h:
            out[-1] = (out[-1][0], i + 1, h)
        else:
            out.append((i, i + 1, h))
    return out


def _route(
    problem: Problem,
    f: Flow,
    hosts: list[str],
    room: Callable[[Arc], float],
    avoid: set[str],
) -> Route | None:
    ends = [f.ingress, *hosts, f.egress]
    segs = []
    # the flow's own earlier segments use room too: a later segment that
    # would cross a full arc again takes another way (A->B, B->A, then A->C->B)
    used: Counter[Arc] = Counter()

    def fits(u: str, v: str) -> bool:
        return room((u, v)) - used[(u, v)] * f.bandwidth + EPS >= f.bandwidth

    for a, b in pairwise(ends):
        sp = shortest_path(problem, a, b, fits, avoid)
        if sp is None:
            return None
        segs.append(sp[0])
        used.update(pairwise(sp[0]))
    route = Route(tuple(hosts), tuple(segs))
    if route.delay(problem) > f.max_delay + EPS:
        return None
    need = Counter(route.arcs())
    if any(cnt * f.bandwidth > room(arc) + EPS for arc, cnt in need.items()):
        return None
    return route


def _split(
    problem: Problem,
    f: Flow,
    positions: list[int],
    fits: Callable[[str, Counter[str]], bool],
    order: list[str],
) -> list[str] | None:
    """Assign ``positions`` (indices into the chain) to as few nodes as
    possible: repeatedly give the longest run of remaining positions to the
    first node in ``order`` that can host it."""
    out: list[str] = []
    load: dict[str, Counter[str]] = {}
    i = 0
    while i < len(positions):
        best: tuple[int, str] | None = None
        for n in order:
            have = Counter(load.get(n, Counter()))
            j = i
            while j < len(positions):
                have[f.chain[positions[j]]] += 1
                if not fits(n, have):
                    break
                j += 1
            if j > i and (best is None or j > best[0]):
                best = (j, n)
                if j == len(positions):
                    break
        if best is None:
            return None
        j, n = best
        for k in range(i, j):
            load.setdefault(n, Counter())[f.chain[positions[k]]] += 1
            out.append(n)
        i = j
    return out


def _place(
    problem: Problem, state: AffinityState, f: Flow, candidates: int
) -> tuple[AffinityState, Route, Protection] | Rejection:
    length = len(f.chain)
    dist = Analyzer(problem).dist(f.bandwidth, room=state.room)

    def d(a: str, b: str) -> float:
        return dist.get(a, {}).get(b, math.inf)

    nodes = sorted(problem.nodes, key=lambda n: (d(f.ingress, n) + d(n, f.egress), n))
    nodes = [n for n in nodes if not math.isinf(d(f.ingress, n) + d(n, f.egress))]
    whole = Counter(f.chain)
    singles = [n for n in nodes if state.can_host(n, whole)][:candidates]
    plans: list[list[str]] = [[n] * length for n in singles]
    if not plans:
        split = _split(problem, f, list(range(length)), state.can_host, nodes)
        if split is None:
            missing = [s for s in f.chain if not any(state.hostable(n, s) for n in nodes)]
            return Rejection(
                f.id, C_FLOWS_PER_CORE,
                f"no reachable node has a free core or a spare slot for "
                f"{', '.join(repr(s) for s in missing) or 'the chain'}",
            )
        plans = [split]

    last: Rejection | None = None
    for hosts in plans:
        primary = _route(problem, f, hosts, state.room, set())
        if primary is None:
            # hosts in chain order, each node once: "core-1 then edge-b"
            via = " then ".join(dict.fromkeys(hosts))
            bound = (f"meets the delay bound {f.max_delay:.4g} with"
                     if math.isfinite(f.max_delay) else "has")
            last = Rejection(
                f.id, C_DELAY if _route(problem, f, hosts, lambda a: math.inf, set()) is None
                else C_LINK,
                f"no route from {f.ingress} to {f.egress} through the hosts {via} "
                f"{bound} {f.bandwidth:g} spare bandwidth on every link",
            )
            continue
        trial = state.clone()
        trial.add_primary(f, primary)
        bad = trial.finish(set(hosts))
        if bad is not None:  # primary + existing reservations exceed the cores
            last = Rejection(
                f.id, C_FLOWS_PER_CORE,
                f"node {bad} lacks cores for the flow plus the backups it has reserved",
            )
            continue
        res = _protect(problem, trial, f, primary, nodes, candidates)
        if isinstance(res, Rejection):
            last = res
            continue
        return trial, primary, res
    assert last is not None
    return last


def _protect(
    problem: Problem,
    state: AffinityState,
    f: Flow,
    primary: Route,
    order: list[str],
    candidates: int,
) -> Protection | Rejection:
    """Backup sub-chains and a backup route for every single failure that
    breaks ``primary``; updates ``state`` (a trial copy) on success."""
    ends = {f.ingress, f.egress}
    failures = [n for n in dict.fromkeys(primary.path) if n not in ends]
    failures += [n for n in (f.ingress, f.egress) if n in primary.hosts and n not in failures]
    backup_hosts: list[str | None] = [None] * len(f.chain)
    scenarios: dict[str, Route] = {}
    touched_nodes: set[str] = set()
    touched_arcs: set[Arc] = set()
    own = Counter(primary.arcs())
    for x in failures:
        avoid = set() if x in ends else {x}
        moved = [l_ for l_, h in enumerate(primary.hosts) if h == x]

        def room(arc: Arc, x: str = x) -> float:
            # the flow's own active load on the arc is freed when it fails over
            return state.scenario_room(x, arc) + own[arc] * f.bandwidth

        if not moved:
            alt = _route(problem, f, list(primary.hosts), room, avoid)
            if alt is None:
                return Rejection(
                    f.id, C_BACKUP,
                    f"no backup route avoids node {x} (it forwards the flow) "
                    f"{_within(f, 'within the delay bound {} and ')}with spare bandwidth",
                )
        else:
            alt = None
            fo = state.fo_flows.get(x, Counter())

            def fits(n: str, demand: Counter[str], x: str = x,
                     fo: Counter[tuple[str, str]] = fo) -> bool:
                if n == x:
                    return False
                cores = 0
                svcs = {s for (m, s) in state.flows if m == n} | {
                    s for (m, s) in state.reserved_flows if m == n
                } | set(demand)
                for svc in svcs:
                    p = problem.flows_per_core(n, svc)
                    res = max(state.reserved_flows[(n, svc)], fo[(n, svc)] + demand.get(svc, 0))
                    total = state.flows[(n, svc)] + res
                    if total and p <= 0:
                        return False
                    cores += math.ceil(total / p - EPS) if total else 0
                return cores <= problem.cores(n)

            near = [n for n in order if n != x]
            # one backup node for everything x hosts (high affinity inside the
            # backup), nearest first; else split over several nodes
            need = Counter(f.chain[l_] for l_ in moved)
            tries = [[n] * len(moved) for n in near if fits(n, need)]
            tries = tries[:candidates]
            if not tries:
                split = _split(problem, f, moved, fits, near)
                tries = [split] if split else []
            for assign in tries:
                hosts = list(primary.hosts)
                for l_, n in zip(moved, assign, strict=True):
                    hosts[l_] = n
                alt = _route(problem, f, hosts, room, avoid)
                if alt is not None:
                    for l_, n in zip(moved, assign, strict=True):
                        backup_hosts[l_] = n
                    break
            if alt is None:
                return Rejection(
                    f.id, C_BACKUP,
                    f"no node other than {x} can take over "
                    f"{'-'.join(f.chain[l_] for l_ in moved)} with a route that "
                    f"{_within(f, 'meets the delay bound {} and ')}has spare bandwidth",
                )
        state.add_scenario(x, f, primary, alt)
        scenarios[x] = alt
        touched_nodes.update(alt.hosts)
        touched_arcs.update(alt.arcs())
    bad = state.finish(touched_nodes)
    if bad is not None:
        return Rejection(f.id, C_BACKUP, f"node {bad} lacks cores for the backup reservation")
    arc = state.arcs_ok(touched_arcs | set(primary.arcs()))
    if arc is not None:
        return Rejection(
            f.id, C_LINK,
            f"link {arc[0]}->{arc[1]} lacks bandwidth for the flow plus backup reservations",
        )
    return Protection(tuple(backup_hosts), scenarios)


def _within(f: Flow, text: str) -> str:
    """``text`` with the flow's delay bound in it, or '' for a flow without one
    (its bound is inf)."""
    return "" if math.isinf(f.max_delay) else text.format(f"{f.max_delay:.4g}")
