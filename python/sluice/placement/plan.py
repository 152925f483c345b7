"""Placement plans: what every algorithm returns.

A :class:`Plan` says how many instances of each service run on each node,
which node serves each position of each accepted flow's chain, the route of
each accepted flow (one node path per chain *segment*: ingress to the first
service, between consecutive services, last service to egress), which flows
were rejected and why, and -- for ``affinity`` -- the pre-computed backup
route of each flow for every single-node failure that would break it.

Link and core utilisation are derived from the routes by :func:`usage`, never
taken from a solver, so a plan is always self-consistent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, cast

from .model import Arc, Load, Problem, new_load

EPS = 1e-6

# Constraint labels used in rejections and validator findings. The numbers
# are those of the SDNFV MILP (paper section 3.5).
C_CORES = "cores (1)"
C_HOSTS = "one node per chain position (3)"
C_ROUTE = "route / flow conservation (4)-(5)"
C_DELAY = "delay bound (6)"
C_FLOWS_PER_CORE = "flows per core (7)"
C_LINK = "link capacity (8)"
C_NODE_UTIL = "core utilisation (9)"
C_CAPACITY = "capacity (1)/(7)/(8)"
C_BACKUP = "backup path (single node failure)"
C_TIME = "time limit"
C_INPUT = "input"


@dataclass(frozen=True)
class Route:
    """Where one flow goes: ``hosts[l]`` serves chain position ``l``;
    ``segments[s]`` is the node path of segment ``s`` (``len(chain) + 1`` of
    them). A segment whose two ends are the same node is a 1-node path."""

    hosts: tuple[str, ...]
    segments: tuple[tuple[str, ...], ...]

    @property
    def path(self) -> tuple[str, ...]:
        """The whole walk, ingress to egress (nodes may repeat)."""
        out: list[str] = list(self.segments[0])
        for seg in self.segments[1:]:
            out.extend(seg[1:])
        return tuple(out)

    def arcs(self) -> list[Arc]:
        """Every arc crossed, once per crossing."""
        out: list[Arc] = []
        for seg in self.segments:
            out.extend(pairwise(seg))
        return out

    def delay(self, problem: Problem) -> float:
        return sum(problem.delay(u, v) for u, v in self.arcs())

    def nodes(self) -> set[str]:
        return set(self.path)


@dataclass(frozen=True)
class Rejection:
    """A flow that was not placed: ``constraint`` names the constraint that
    could not be met, ``reason`` says specifically what was missing."""

    flow: str
    constraint: str
    reason: str


@dataclass(frozen=True)
class Protection:
    """OpenPATH-style protection of one flow.

    ``backup_hosts[l]`` is the node that serves chain position ``l`` when the
    primary host of that position fails (``None`` when the primary host is
    the flow's own ingress or egress, whose loss is covered by a scenario that
    keeps forwarding there but moves the services away).
    ``scenarios[x]`` is the complete route used when node ``x`` fails, for
    every node ``x`` of the primary route whose failure would break it.
    """

    backup_hosts: tuple[str | None, ...]
    scenarios: dict[str, Route]


@dataclass
class Plan:
    algorithm: str
    status: str  # optimal | feasible | infeasible | no-solution | heuristic | time-limit
    instances: dict[tuple[str, str], int]  # (node, service) -> instances (cores)
    routes: dict[str, Route]  # accepted flow id -> route
    rejected: tuple[Rejection, ...]
    solve_time: float
    protection: dict[str, Protection] = field(default_factory=dict)
    objective: float | None = None
    bound: float | None = None
    accepted_bound: int | None = None  # proven upper bound on flows accepted (MILP)
    details: dict[str, Any] = field(default_factory=dict)
    # derived, filled by usage():
    link_load: dict[Arc, float] = field(default_factory=dict)
    service_flows: dict[tuple[str, str], int] = field(default_factory=dict)
    link_utilisation: dict[Arc, float] = field(default_factory=dict)
    node_utilisation: dict[str, float] = field(default_factory=dict)
    instance_utilisation: dict[tuple[str, str], float] = field(default_factory=dict)
    utilisation: float = 0.0

    @property
    def accepted(self) -> int:
        return len(self.routes)

    @property
    def cores_used(self) -> int:
        return sum(self.instances.values())

    def rejection(self, flow_id: str) -> Rejection | None:
        for r in self.rejected:
            if r.flow == flow_id:
                return r
        return None

    def to_dict(self, problem: Problem) -> dict[str, Any]:
        """A JSON-ready description (see docs/placement.md for the format)."""
        flows = []
        for f in problem.flows:
            r = self.routes.get(f.id)
            if r is None:
                continue
            item: dict[str, Any] = {
                "id": f.id,
                "chain": list(f.chain),
                "hosts": list(r.hosts),
                "route": list(r.path),
                "segments": [list(s) for s in r.segments],
                "delay": round(r.delay(problem), 6),
                "max_delay": None if f.max_delay == float("inf") else f.max_delay,
                "bandwidth": f.bandwidth,
            }
            prot = self.protection.get(f.id)
            if prot is not None:
                item["backup_hosts"] = list(prot.backup_hosts)
                item["backup_routes"] = {
                    x: {"hosts": list(br.hosts), "route": list(br.path)}
                    for x, br in sorted(prot.scenarios.items())
                }
            flows.append(item)
        return {
            "problem": problem.name,
            "algorithm": self.algorithm,
            "status": self.status,
            "flows_offered": len(problem.flows),
            "flows_accepted": self.accepted,
            "accepted_bound": self.accepted_bound,
            "utilisation": round(self.utilisation, 6),
            "solve_time_s": round(self.solve_time, 3),
            "objective": self.objective,
            "bound": self.bound,
            "cores_used": self.cores_used,
            "cores_total": problem.total_cores,
            "details": self.details,
            "instances": [
                {
                    "node": n,
                    "service": s,
                    "count": c,
                    "flows": self.service_flows.get((n, s), 0),
                    "utilisation": round(self.instance_utilisation.get((n, s), 0.0), 6),
                }
                for (n, s), c in sorted(self.instances.items())
            ],
            "nodes": [
                {
                    "node": n,
                    "cores": problem.cores(n),
                    "cores_used": sum(c for (m, _), c in self.instances.items() if m == n),
                    "utilisation": round(self.node_utilisation.get(n, 0.0), 6),
                }
                for n in problem.nodes
            ],
            "links": [
                {
                    "from": u,
                    "to": v,
                    "capacity": problem.capacity(u, v),
                    "load": round(self.link_load.get((u, v), 0.0), 6),
                    "utilisation": round(self.link_utilisation.get((u, v), 0.0), 6),
                }
                for u, v in problem.arcs
                if self.link_load.get((u, v), 0.0) > 0
            ],
            "flows": flows,
            "rejected": [
                {"flow": r.flow, "constraint": r.constraint, "reason": r.reason}
                for r in self.rejected
            ],
        }


def usage(problem: Problem, plan: Plan) -> Plan:
    """Fill the derived fields of ``plan`` from its routes and instances.

    * link load: sum of bandwidths of every crossing of an arc (a flow that
      crosses a link twice, in two segments, counts twice -- constraint (8));
    * instance utilisation of (node, service): flows / (P_ij * instances);
    * node (core) utilisation: core-equivalents of work / cores, i.e.
      sum_j flows_ij / P_ij / C_i -- the linear form of constraint (9);
    * U: the maximum of link and node utilisation.
    """
    link_load: Load = new_load()
    service_flows: Counter[tuple[str, str]] = Counter()
    for fid, route in plan.routes.items():
        f = problem.flow_by_id[fid]
        for arc in route.arcs():
            link_load[arc] += f.bandwidth
        for host, svc in zip(route.hosts, f.chain, strict=True):
            service_flows[(host, svc)] += 1
    plan.link_load = dict(link_load)
    plan.service_flows = dict(service_flows)
    plan.link_utilisation = {a: load / problem.capacity(*a) for a, load in link_load.items()}
    node_work = cast("dict[str, float]", Counter())  # a missing node reads 0
    inst_util: dict[tuple[str, str], float] = {}
    for (node, svc), n in service_flows.items():
        p = problem.flows_per_core(node, svc)
        node_work[node] += n / p if p > 0 else float("inf")
        m = plan.instances.get((node, svc), 0)
        inst_util[(node, svc)] = n / (p * m) if p > 0 and m > 0 else float("inf")
    plan.instance_utilisation = inst_util
    plan.node_utilisation = {
        node: (work / problem.cores(node) if problem.cores(node) > 0 else float("inf"))
        for node, work in node_work.items()
    }
    plan.utilisation = max(
        [0.0, *plan.link_utilisation.values(), *plan.node_utilisation.values()]
    )
    plan.instances = {k: v for k, v in sorted(plan.instances.items()) if v > 0}
    return plan
