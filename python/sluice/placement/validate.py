"""Check any plan against every constraint of the model, independently of the
algorithm that made it (loads are recomputed from the routes, never trusted).

Returns a list of :class:`Violation` s; an empty list means the plan is valid.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from .model import Flow, Load, Problem, new_load
from .plan import (
    C_BACKUP,
    C_CORES,
    C_DELAY,
    C_FLOWS_PER_CORE,
    C_HOSTS,
    C_INPUT,
    C_LINK,
    C_NODE_UTIL,
    C_ROUTE,
    Plan,
    Route,
)

TOL = 1e-6


@dataclass(frozen=True)
class Violation:
    constraint: str
    subject: str  # the flow, node or link concerned
    message: str

    def __str__(self) -> str:
        return f"[{self.constraint}] {self.subject}: {self.message}"


def validate(
    problem: Problem, plan: Plan, *, require_protection: bool | None = None
) -> list[Violation]:
    """All violations of ``plan`` for ``problem``.

    ``require_protection`` (default: only for ``affinity`` plans) demands a
    pre-computed backup route for every single-node failure that breaks an
    accepted flow, and checks that capacity suffices in every failure
    scenario.
    """
    out: list[Violation] = []
    flows = problem.flow_by_id
    # ---- bookkeeping ------------------------------------------------------------
    rejected = Counter(r.flow for r in plan.rejected)
    for fid in plan.routes:
        if fid not in flows:
            out.append(Violation(C_INPUT, fid, "plan routes a flow that is not in the problem"))
        if rejected[fid]:
            out.append(Violation(C_INPUT, fid, "flow is both accepted and rejected"))
    for fid, n in rejected.items():
        if fid not in flows:
            out.append(Violation(C_INPUT, fid, "plan rejects a flow that is not in the problem"))
        if n > 1:
            out.append(Violation(C_INPUT, fid, f"flow is rejected {n} times"))
    for fid in flows:
        if fid not in plan.routes and not rejected[fid]:
            out.append(Violation(C_INPUT, fid, "flow is neither accepted nor rejected"))

    # ---- (1) cores ----------------------------------------------------------------
    used: Counter[str] = Counter()
    for (node, svc), m in plan.instances.items():
        if node not in problem.graph or svc not in problem.services:
            out.append(Violation(C_CORES, f"{node}/{svc}", "instance of unknown node or service"))
            continue
        if not isinstance(m, int) or m < 0:
            out.append(Violation(C_CORES, f"{node}/{svc}", f"instance count {m!r} is invalid"))
            continue
        used[node] += m
    for node, m in used.items():
        if m > problem.cores(node):
            out.append(
                Violation(C_CORES, node, f"{m} instances (cores) but the node has "
                          f"{problem.cores(node)}")
            )

    # ---- routes: (2)-(6) -------------------------------------------------------------
    for fid, route in plan.routes.items():
        f = flows.get(fid)
        if f is None:
            continue
        out.extend(_check_route(problem, plan, f, route, fid))

    # ---- capacity: (7)-(9) ------------------------------------------------------
    link, served = _loads(problem, plan.routes.items())
    out.extend(_check_capacity(problem, plan, link, served, "", None))
    u = max(
        [0.0]
        + [load / problem.capacity(*a) for a, load in link.items()]
        + [_work(problem, served, n) / problem.cores(n) for n in {n for n, _ in served}
           if problem.cores(n) > 0]
    )
    if abs(u - plan.utilisation) > TOL:
        out.append(
            Violation(C_NODE_UTIL, "U", f"plan reports U={plan.utilisation:.6g}, the routes "
                      f"give {u:.6g}")
        )
    for arc, load in link.items():
        if abs(plan.link_load.get(arc, 0.0) - load) > TOL * max(1.0, load):
            out.append(Violation(C_LINK, f"{arc[0]}->{arc[1]}", "reported link load is wrong"))
    for key, n in served.items():
        if plan.service_flows.get(key, 0) != n:
            out.append(Violation(C_FLOWS_PER_CORE, "/".join(key), "reported flow count is wrong"))

    # ---- protection -------------------------------------------------------------
    if require_protection is None:
        require_protection = plan.algorithm == "affinity"
    if require_protection or plan.protection:
        out.extend(_check_protection(problem, plan, require_protection))
    return out


def _check_route(
    problem: Problem, plan: Plan, f: Flow, route: Route, subject: str, avoid: str | None = None
) -> list[Violation]:
    out: list[Violation] = []
    g = problem.graph
    if len(route.hosts) != len(f.chain):
        return [Violation(C_HOSTS, subject, f"{len(route.hosts)} hosts for a chain of "
                          f"{len(f.chain)} services")]
    for l_, (host, svc) in enumerate(zip(route.hosts, f.chain, strict=True)):
        if host not in g:
            out.append(Violation(C_HOSTS, subject, f"position {l_} on unknown node {host!r}"))
        elif plan.instances.get((host, svc), 0) < 1:
            out.append(
                Violation(C_HOSTS, subject, f"position {l_} ({svc}) on {host}, where no "
                          f"instance of {svc} runs")
            )
    if len(route.segments) != len(f.chain) + 1:
        return out + [Violation(C_ROUTE, subject, f"{len(route.segments)} segments, expected "
                                f"{len(f.chain) + 1}")]
    ends = [f.ingress, *route.hosts, f.egress]
    for s, seg in enumerate(route.segments):
        if not seg or seg[0] != ends[s] or seg[-1] != ends[s + 1]:
            out.append(
                Violation(C_ROUTE, subject, f"segment {s} runs "
                          f"{f'{seg[0]}..{seg[-1]}' if seg else 'nowhere (empty)'}, expected "
                          f"{ends[s]}..{ends[s + 1]}")
            )
        for u, v in pairwise(seg):
            if not g.has_edge(u, v):
                out.append(Violation(C_ROUTE, subject, f"segment {s} uses {u}->{v}, not a link"))
        if avoid is not None and avoid in seg and avoid not in (f.ingress, f.egress):
            out.append(Violation(C_BACKUP, subject, f"route passes through failed node {avoid}"))
    if avoid is not None and avoid in route.hosts:
        out.append(Violation(C_BACKUP, subject, f"a service stays on failed node {avoid}"))
    if not out:
        d = route.delay(problem)
        if d > f.max_delay + TOL:
            out.append(Violation(C_DELAY, subject, f"delay {d:.6g} exceeds the bound "
                                 f"{f.max_delay:.6g}"))
    return out


def _loads(
    problem: Problem, items: Iterable[tuple[str, Route]]
) -> tuple[Load, Counter[tuple[str, str]]]:
    link: Load = new_load()
    served: Counter[tuple[str, str]] = Counter()
    for fid, route in items:
        f = problem.flow_by_id.get(fid)
        if f is None or len(route.hosts) != len(f.chain):
            continue
        for u, v in route.arcs():
            if problem.graph.has_edge(u, v):
                link[(u, v)] += f.bandwidth
        for host, svc in zip(route.hosts, f.chain, strict=True):
            served[(host, svc)] += 1
    return link, served


def _work(problem: Problem, served: Counter[tuple[str, str]], node: str) -> float:
    total = 0.0
    for (n, svc), cnt in served.items():
        if n == node and cnt:
            p = problem.flows_per_core(n, svc)
            total += cnt / p if p > 0 else float("inf")
    return total


def _check_capacity(
    problem: Problem,
    plan: Plan,
    link: Load,
    served: Counter[tuple[str, str]],
    scenario: str,
    failed: str | None,
) -> list[Violation]:
    out: list[Violation] = []
    tag = f" when {failed} fails" if failed else ""
    for (node, svc), cnt in served.items():
        if node not in problem.graph or svc not in problem.services:
            continue
        cap = problem.flows_per_core(node, svc) * plan.instances.get((node, svc), 0)
        if cnt > cap:
            out.append(
                Violation(C_FLOWS_PER_CORE if not failed else C_BACKUP, f"{node}/{svc}{scenario}",
                          f"{cnt} flows{tag} but {plan.instances.get((node, svc), 0)} instance(s) "
                          f"carry at most {cap}")
            )
    for arc, load in link.items():
        bw = problem.capacity(*arc)
        if load > bw * (1 + TOL):
            out.append(
                Violation(C_LINK if not failed else C_BACKUP, f"{arc[0]}->{arc[1]}{scenario}",
                          f"load {load:.6g}{tag} exceeds capacity {bw:.6g}")
            )
    if not failed:
        for node in {n for n, _ in served}:
            c = problem.cores(node)
            w = _work(problem, served, node)
            if c <= 0 or w > c * (1 + TOL):
                out.append(Violation(C_NODE_UTIL, node, f"{w:.6g} cores of work on {c} cores"))
    return out


def _check_protection(problem: Problem, plan: Plan, required: bool) -> list[Violation]:
    out: list[Violation] = []
    for fid, route in plan.routes.items():
        f = problem.flow_by_id.get(fid)
        if f is None:
            continue
        prot = plan.protection.get(fid)
        ends = {f.ingress, f.egress}
        breaking = {n for n in route.path if n not in ends} | (set(route.hosts) & ends)
        if prot is None:
            if required and breaking:
                out.append(Violation(C_BACKUP, fid, "accepted flow has no backup routes"))
            continue
        for x in sorted(breaking):
            if x not in prot.scenarios:
                out.append(Violation(C_BACKUP, fid, f"no backup route for the failure of {x}"))
        for x, alt in prot.scenarios.items():
            out.extend(_check_route(problem, plan, f, alt, f"{fid} (if {x} fails)", avoid=x))
    # capacity in every single-node failure scenario
    for x in problem.nodes:
        items = []
        for fid, route in plan.routes.items():
            prot = plan.protection.get(fid)
            backup = prot.scenarios.get(x) if prot else None
            items.append((fid, backup if backup is not None else route))
        link, served = _loads(problem, items)
        out.extend(_check_capacity(problem, plan, link, served, f" (if {x} fails)", x))
    return out
