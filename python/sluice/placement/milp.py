"""SDNFV's placement MILP (paper section 3.5, constraints (1)-(9)).

Variables, in the paper's notation:

* ``M[i,j]`` (integer): instances of service j on node i -- one core each;
* ``x[k,l,i]`` (binary, the paper's N_kil): node i serves position l of
  flow k's chain;
* ``v[k,s,(i,m)]`` (binary, V_klim): arc i->m is used by segment s of flow k
  (segment s leads to chain position s, the last one to the egress);
* ``a[k]`` (binary): flow k is admitted (fixed to 1 with ``accept="all"``);
* ``U`` (continuous, <= 1): maximum link and core utilisation.

Constraints:

(1) sum_j M[i,j] <= C_i
(2)/(3) sum_i x[k,l,i] = a[k], and x[k,l,i] <= M[i,j] for j = chain_k[l]
(4)/(5) per segment, flow conservation from the previous host (or ingress)
    to the next host (or egress): out - in = F_s(i) - F_{s+1}(i)
(6) sum of link delays over all segments <= T_k
(7) flows of j served on i <= P_ij * M[i,j]
(8) per arc, sum of bandwidth over all crossings <= U * H_im
(9) per node, core-equivalents of work sum_j flows_ij / P_ij <= U * C_i

(9) is the node-level linear form of the paper's core-utilisation constraint:
a per-instance ratio flows / (P * M) would reward starting idle instances.

Objective (minimised): ``-sum_k a[k]`` first -- as many flows as possible,
which is what SDNFV Fig. 5 measures -- then, with weights too small to trade
a flow away, ``U`` and the number of new cores (their order is
``priority``), then the number of arcs used (so routes have no loops). With
``accept="all"`` every flow must be placed and the objective is the paper's
plain "minimise U".

Variables that cannot be part of any route meeting the delay bound (6) or
fitting the residual link capacity are not created (exact pruning, see
:class:`.diagnose.Analyzer`).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import Any

import pulp

from .diagnose import Analyzer, Reach, capacity_reason
from .model import Arc, Flow, Problem
from .plan import C_INPUT, C_TIME, EPS, Plan, Rejection, Route, usage
from .state import Residual

SOLVERS = ("cbc", "highs")
DETOUR_BUDGET = 1.5  # see _relax_and_lift
TIE = 0.45  # total weight of phase-1 tie-breaks, < 0.5 so a flow always wins


@dataclass
class MilpOptions:
    solver: str = "cbc"  # "cbc" (PuLP's bundled CBC) or "highs" (highspy)
    time_limit: float | None = 60.0  # seconds, None = no limit
    mip_gap: float = 0.0  # relative gap at which the solver may stop
    accept: str = "max"  # "max": admit as many flows as fit; "all": all or infeasible
    priority: str = "utilisation"  # after flows: "utilisation" then cores, or "cores" first
    seed: int = 0
    threads: int = 1
    # seconds for phase 2 (minimise U) after the flow count is settled;
    # None = whatever is left of time_limit
    polish_time: float | None = None
    # branch-and-bound nodes for phase 2 (None: no limit). A node limit, unlike
    # a time limit, keeps results reproducible on any machine.
    polish_nodes: int | None = None
    # share of the time limit spent on the relax-and-lift starting solution
    # and the core-counting cut (0 = neither); see _relax_and_lift
    relax_share: float = 0.0

    def check(self) -> None:
        if self.solver not in SOLVERS:
            raise ValueError(f"unknown solver {self.solver!r}; use one of {', '.join(SOLVERS)}")
        if self.accept not in ("max", "all"):
            raise ValueError(f"accept must be 'max' or 'all', got {self.accept!r}")
        if self.priority not in ("utilisation", "cores"):
            raise ValueError(f"priority must be 'utilisation' or 'cores', got {self.priority!r}")
        if self.time_limit is not None and self.time_limit <= 0:
            raise ValueError(f"time limit must be positive, got {self.time_limit}")
        if not 0 <= self.mip_gap < 1:
            raise ValueError(f"MIP gap must be in [0, 1), got {self.mip_gap}")


@dataclass
class BatchResult:
    routes: dict[str, Route]
    unplaced: list[Flow]  # modelled, not admitted
    status: str
    objective: float | None
    bound: float | None
    accepted_bound: int | None
    solve_time: float
    size: dict[str, int | str] = field(default_factory=dict)


def solve_batch(
    problem: Problem,
    flows: list[Flow],
    state: Residual,
    analyzer: Analyzer,
    opts: MilpOptions,
    initial: dict[str, Route] | None = None,
    layout: dict[tuple[str, str], int] | None = None,
    core_cost: dict[tuple[str, str], float] | None = None,
) -> BatchResult:
    """Solve the MILP for ``flows`` on top of the committed usage in ``state``
    (which is not modified). Flows must already have passed the precheck.
    ``initial`` routes (a feasible placement of some of the flows, e.g. from
    a heuristic) are given to the solver as a starting solution. ``layout``
    fixes the number of instances per (node, service) (a restriction used to
    find starting solutions). ``core_cost`` weighs a new instance per
    (node, service) in the tie-break (default 1; division uses it to favour
    nodes that later flows can also reach)."""
    t0 = time.perf_counter()
    p = problem
    lp = pulp.LpProblem("sdnfv_placement", pulp.LpMinimize)
    reaches, modelled, unplaced = _modelled(flows, state, analyzer, layout)
    if opts.accept == "all" and unplaced:
        return BatchResult({}, list(flows), "infeasible", None, None, 0, 0.0)
    if not modelled:
        return BatchResult({}, unplaced, "optimal", 0.0, 0.0, 0, time.perf_counter() - t0)

    U, a, x, v, M, pairs = _add_variables(lp, p, modelled, reaches, state, opts, layout)
    _add_routing(lp, p, modelled, reaches, a, x, v, M)
    by_node, total_vars = _add_capacity(lp, p, state, U, v, M, pairs)

    # objective terms
    cost = core_cost or {}
    new_cores = pulp.lpSum(cost.get(k, 1.0) * (M[k] - state.instances[k]) for k in M)
    free = sum(state.free_cores(n) for n in by_node) + 1
    hops = pulp.lpSum(v.values())
    hops_max = sum((len(f.chain) + 1) * len(p.nodes) for f in modelled) + 1
    admitted = pulp.lpSum(a[f.id] for f in modelled)
    w_u, w_c, w_h = _weights(opts.priority, free, hops_max)
    size: dict[str, int | str] = {
        "flows": len(modelled),
        "variables": len(lp.variables()),
        "constraints": lp.numConstraints(),
    }
    deadline = None if opts.time_limit is None else t0 + opts.time_limit
    phases: dict[str, str] = {}
    accepted_bound: int | None = None
    snapshot: dict[str, float | None] | None = None
    n_adm = len(modelled)

    if opts.accept == "max" and opts.relax_share > 0:
        initial = _bound_and_lift(lp, p, modelled, reaches, state, opts, admitted, deadline,
                                  phases, initial)
    warm = False
    if initial and opts.accept == "max":
        warm = _set_start(p, modelled, initial, state, a, x, v, M, U, total_vars)

    if opts.accept == "max":
        # Phase 1: as many flows as possible. The small tie-break (< TIE in
        # total) prefers few new cores and short routes; stopping within an
        # absolute gap of 0.5 still proves the number of flows optimal.
        lp.setObjective(-admitted + TIE * 0.5 * (new_cores / free + hops / hops_max))
        st1, obj1, b1 = _run_solver(lp, opts, _remaining(deadline, 1.0), warm=warm, gap_abs=0.5)
        phases["admission"] = st1
        if warm:
            phases["warm_start"] = f"{sum(1 for f in modelled if f.id in (initial or {}))} flows"
        if st1 not in ("optimal", "feasible"):
            unplaced.extend(modelled)
            return BatchResult({}, unplaced, st1, None, None, None, time.perf_counter() - t0,
                               {**size, **phases})
        n_adm = sum(1 for f in modelled if _val(a[f.id]) > 0.5)
        if st1 == "optimal":
            accepted_bound = n_adm
        elif b1 is not None and not math.isinf(b1):
            accepted_bound = min(len(modelled), math.floor(TIE - b1 + 1e-6))
        snapshot = {var.name: var.varValue for var in lp.variables()}
        lp += admitted >= n_adm, "keep_admitted"

    # Phase 2 (with accept="all" the only phase): the paper's "minimise U",
    # with new cores (order per `priority`) and route length as tie-breaks.
    lp.setObjective(w_u * U + w_c * new_cores + w_h * hops)
    left = _remaining(deadline, 0.0)
    if snapshot is not None:
        if opts.polish_time is not None:
            left = opts.polish_time if left is None else min(left, opts.polish_time)
        if n_adm == 0 or (left is not None and left < 0.2):
            left = -1.0
    if left is not None and left < 0:
        st2, obj2, b2 = "skipped", None, None
    else:
        st2, obj2, b2 = _run_solver(
            lp, opts, left, warm=snapshot is not None,
            max_nodes=opts.polish_nodes if snapshot is not None else None,
        )
    phases["utilisation"] = st2
    if st2 not in ("optimal", "feasible") and snapshot is not None:
        for var in lp.variables():
            var.varValue = snapshot.get(var.name)
    if opts.accept == "all":
        status = st2
        if status == "optimal":
            accepted_bound = len(modelled)
    else:
        status = "optimal" if phases["admission"] == st2 == "optimal" else "feasible"

    routes = _admitted_routes(status, modelled, reaches, a, x, v, unplaced)
    return BatchResult(
        routes, unplaced, status, obj2, b2, accepted_bound,
        time.perf_counter() - t0, {**size, **phases},
    )


def _weights(priority: str, free: int, hops_max: int) -> tuple[float, float, float]:
    """Phase 2's weights of U, new cores and hops: the first two in the order
    priority says, hops always last."""
    if priority == "utilisation":
        w_u, w_c = 0.5, 0.004 / free
        w_h = 0.1 * w_c / hops_max
    else:
        w_c = 0.4 / free
        w_u = 0.3 * w_c
        w_h = 0.001 * w_u / hops_max
    return w_u, w_c, w_h


def _admitted_routes(
    status: str, modelled: list[Flow], reaches: dict[str, Reach], a: dict[str, Any],
    x: dict[tuple[str, int, str], Any], v: dict[tuple[str, int, Arc], Any],
    unplaced: list[Flow],
) -> dict[str, Route]:
    """The admitted flows' routes from the solution; the others go to unplaced."""
    routes: dict[str, Route] = {}
    if status in ("optimal", "feasible"):
        for f in modelled:
            if _val(a[f.id]) > 0.5:
                routes[f.id] = _extract(f, reaches[f.id], x, v)
            else:
                unplaced.append(f)
    else:
        unplaced.extend(modelled)
    return routes


def _modelled(
    flows: list[Flow], state: Residual, analyzer: Analyzer,
    layout: dict[tuple[str, str], int] | None,
) -> tuple[dict[str, Reach], list[Flow], list[Flow]]:
    """The flows that can still fit (with their reaches) and those that cannot."""
    def hostable(n: str, s: str) -> bool:
        if layout is not None:
            return layout.get((n, s), 0) > 0
        return state.hostable(n, s)

    reaches = {}
    modelled: list[Flow] = []
    unplaced: list[Flow] = []
    for f in flows:
        r = analyzer.reach(f, room=state.room, host_ok=hostable)
        if any(not h for h in r.hosts) or r.best_delay > f.max_delay + EPS:
            unplaced.append(f)  # cannot fit in what is left ("removes unused switches")
            continue
        reaches[f.id] = r
        modelled.append(f)
    return reaches, modelled, unplaced


def _add_variables(
    lp: Any, p: Problem, modelled: list[Flow], reaches: dict[str, Reach], state: Residual,
    opts: MilpOptions, layout: dict[tuple[str, str], int] | None,
) -> tuple[Any, dict[str, Any], dict[tuple[str, int, str], Any], dict[tuple[str, int, Arc], Any],
           dict[tuple[str, str], Any], dict[tuple[str, str], list[Any]]]:
    """U, a, x, v and M, and per (node, service) the x that may use it."""
    u_base = _base_utilisation(p, state)
    U = _var(lp, "U", u_base, 1.0)
    a: dict[str, Any] = {}
    x: dict[tuple[str, int, str], Any] = {}
    v: dict[tuple[str, int, Arc], Any] = {}
    node_idx = {n: i for i, n in enumerate(p.nodes)}
    arc_idx = {arc: i for i, arc in enumerate(p.arcs)}

    for k, f in enumerate(modelled):
        a[f.id] = 1 if opts.accept == "all" else _var(lp, f"a_{k}", cat="Binary")
        r = reaches[f.id]
        for l_, hosts in enumerate(r.hosts):
            for n in hosts:
                x[f.id, l_, n] = _var(lp, f"x_{k}_{l_}_{node_idx[n]}", cat="Binary")
        for s, arcs in enumerate(r.arcs):
            for arc in arcs:
                v[f.id, s, arc] = _var(lp, f"v_{k}_{s}_{arc_idx[arc]}", cat="Binary")

    # instance variables for every (node, service) some x may use
    pairs: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for f in modelled:
        for l_, svc in enumerate(f.chain):
            for n in reaches[f.id].hosts[l_]:
                pairs[(n, svc)].append(x[f.id, l_, n])
    M: dict[tuple[str, str], Any] = {}
    for (n, svc) in sorted(pairs):
        m0 = state.instances[(n, svc)]
        hi = m0 + state.free_cores(n)
        if layout is not None:
            m0 = hi = layout[(n, svc)]
        M[(n, svc)] = _var(lp, f"M_{node_idx[n]}_{svc_index(p, svc)}", m0, hi, "Integer")

    return U, a, x, v, M, pairs


def _add_routing(
    lp: Any, p: Problem, modelled: list[Flow], reaches: dict[str, Reach], a: dict[str, Any],
    x: dict[tuple[str, int, str], Any], v: dict[tuple[str, int, Arc], Any],
    M: dict[tuple[str, str], Any],
) -> None:
    """Constraints (2)-(6): hosts, flow conservation and the delay bound."""
    # (3) one node per position, linked to admission; (2) only where an instance runs
    for f in modelled:
        for l_, hosts in enumerate(reaches[f.id].hosts):
            lp += pulp.lpSum(x[f.id, l_, n] for n in hosts) == a[f.id], f"one_{f.id}_{l_}"
            for n in hosts:
                lp += x[f.id, l_, n] <= M[(n, f.chain[l_])]

    # (4)/(5) flow conservation per segment
    for f in modelled:
        r = reaches[f.id]
        length = len(f.chain)
        out_arcs: dict[tuple[int, str], list[Any]] = defaultdict(list)
        in_arcs: dict[tuple[int, str], list[Any]] = defaultdict(list)
        for s, arcs in enumerate(r.arcs):
            for arc in arcs:
                out_arcs[s, arc[0]].append(v[f.id, s, arc])
                in_arcs[s, arc[1]].append(v[f.id, s, arc])

        def stage(st: int, n: str, f: Flow = f, length: int = length) -> Any:
            if st == 0:
                return a[f.id] if n == f.ingress else 0
            if st == length + 1:
                return a[f.id] if n == f.egress else 0
            return x.get((f.id, st - 1, n), 0)

        for s in range(length + 1):
            for n in p.nodes:
                lhs = pulp.lpSum(out_arcs.get((s, n), [])) - pulp.lpSum(in_arcs.get((s, n), []))
                rhs = stage(s, n) - stage(s + 1, n)
                if _is_zero(lhs) and _is_zero(rhs):
                    continue
                lp += lhs == rhs

        # (6) delay bound
        if not math.isinf(f.max_delay):
            terms = [
                p.delay(*arc) * v[f.id, s, arc] for s, arcs in enumerate(r.arcs) for arc in arcs
            ]
            if terms:
                lp += pulp.lpSum(terms) <= f.max_delay


def _add_capacity(
    lp: Any, p: Problem, state: Residual, U: Any, v: dict[tuple[str, int, Arc], Any],
    M: dict[tuple[str, str], Any], pairs: dict[tuple[str, str], list[Any]],
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Constraints (1), (7)-(9) and the per-service core totals; the services
    per hosting node and the total variables."""
    # (1) cores per node
    by_node: dict[str, list[str]] = defaultdict(list)
    for (n, svc) in M:
        by_node[n].append(svc)
    for n, svcs in by_node.items():
        fixed = sum(m for (nn, s2), m in state.instances.items() if nn == n and s2 not in svcs)
        lp += pulp.lpSum(M[(n, s)] for s in svcs) + fixed <= p.cores(n)

    # (7) flows per core, (9) core utilisation
    for n, svcs in by_node.items():
        work = []
        for svc in svcs:
            pj = p.flows_per_core(n, svc)
            served = pulp.lpSum(pairs[(n, svc)]) + state.flows[(n, svc)]
            lp += served <= pj * M[(n, svc)]
            work.append(served * (1.0 / pj))
        for (nn, s2), cnt in state.flows.items():
            if nn == n and s2 not in svcs and cnt:
                work.append(cnt / p.flows_per_core(n, s2))
        lp += pulp.lpSum(work) <= p.cores(n) * U

    # Aggregate of (1)/(7) per service, with an integer total: valid for every
    # integer solution and much tighter in the LP relaxation (the total number
    # of cores running a service must be a whole number).
    by_service: dict[str, list[str]] = defaultdict(list)
    for (n, svc) in M:
        by_service[svc].append(n)
    total_vars: dict[str, Any] = {}
    for svc, hosts in sorted(by_service.items()):
        T = _var(lp, f"T_{svc_index(p, svc)}", 0, None, "Integer")
        total_vars[svc] = T
        lp += pulp.lpSum(M[(n, svc)] for n in hosts) == T
        pmax = max(p.flows_per_core(n, svc) for n in hosts)
        if all(p.flows_per_core(n, svc) == pmax for n in hosts):
            served = pulp.lpSum(var for n in hosts for var in pairs[(n, svc)])
            lp += served + sum(state.flows[(n, svc)] for n in hosts) <= pmax * T
    hosting_nodes = sorted(by_node)
    lp += pulp.lpSum(total_vars.values()) <= sum(
        p.cores(n) - sum(m for (nn, s2), m in state.instances.items()
                         if nn == n and s2 not in by_node[n])
        for n in hosting_nodes
    )

    # (8) link utilisation
    arc_terms: dict[Arc, list[Any]] = defaultdict(list)
    for (fid, _s, arc), var in v.items():
        arc_terms[arc].append(p.flow_by_id[fid].bandwidth * var)
    for arc, terms in arc_terms.items():
        lp += pulp.lpSum(terms) + state.link[arc] <= p.capacity(*arc) * U
    return by_node, total_vars


def _bound_and_lift(
    lp: Any, p: Problem, modelled: list[Flow], reaches: dict[str, Reach], state: Residual,
    opts: MilpOptions, admitted: Any, deadline: float | None, phases: dict[str, str],
    initial: dict[str, Route] | None,
) -> dict[str, Route] | None:
    """The core-counting cut, then the relax-and-lift start if it places more
    flows than initial; returns the start to use."""
    ub = _admission_bound(p, modelled, state, opts, _remaining(deadline, 1.0))
    if ub is not None and ub < len(modelled):
        lp += admitted <= ub, "core_count_bound"
        phases["core_count_bound"] = str(ub)
    if opts.relax_share > 0 and deadline is not None:
        share = opts.relax_share * (deadline - time.perf_counter())
        lifted = _relax_and_lift(
            p, modelled, reaches, state, opts, share / 2, ub, restricted_time=share / 2,
            initial=initial,
        )
        phases["relax_lift_start"] = f"{len(lifted)} flows"
        if len(lifted) > len(initial or {}):
            initial = lifted
    return initial


def _admission_bound(
    p: Problem, flows: list[Flow], state: Residual, opts: MilpOptions, limit: float | None
) -> int | None:
    """Most flows that fit by counting cores alone: every service needs whole
    cores (sum of its instances T_j >= flows_j / P_j, T_j integer) and all
    services share the network's cores. A valid upper bound on admitted
    flows that the MILP's LP relaxation (fractional cores) does not see."""
    lp = pulp.LpProblem("core_count_bound", pulp.LpMaximize)
    a = {f.id: _var(lp, f"a_{k}", cat="Binary") for k, f in enumerate(flows)}
    services = sorted({s for f in flows for s in f.chain})
    other = sum(m for (_, s), m in state.instances.items() if s not in services)
    totals = []
    for j, s in enumerate(services):
        base = sum(m for (_, s2), m in state.instances.items() if s2 == s)
        pmax = max(p.flows_per_core(n, s) for n in p.nodes if p.cores(n) > 0)
        T = _var(lp, f"T_{j}", base, None, "Integer")
        totals.append(T)
        served = sum(c for (_, s2), c in state.flows.items() if s2 == s)
        lp += pmax * T >= served + pulp.lpSum(a[f.id] * f.chain.count(s) for f in flows)
    lp += pulp.lpSum(totals) + other <= p.total_cores
    lp.setObjective(pulp.lpSum(a.values()))
    quick = MilpOptions(opts.solver, None, 0.0, "max", opts.priority, opts.seed, opts.threads)
    status, obj, _ = _run_solver(lp, quick, None if limit is None else max(1.0, 0.1 * limit))
    if status != "optimal" or obj is None:
        return None
    return int(round(obj))


def _relax_and_lift(
    p: Problem,
    flows: list[Flow],
    reaches: dict[str, Any],
    state: Residual,
    opts: MilpOptions,
    limit: float,
    bound: int | None,
    restricted_time: float = 0.0,
    initial: dict[str, Route] | None = None,
) -> dict[str, Route]:
    """A starting solution: solve the placement without routes and link
    limits (hosts, instances and cores only, hosts restricted to those a
    delay-feasible route can reach, nearby hosts preferred), then route each
    admitted flow on least-delay paths between its hosts and keep it if the
    route meets its delay bound and link capacity."""

    lp = pulp.LpProblem("relaxed_hosts", pulp.LpMaximize)
    idx = {n: i for i, n in enumerate(p.nodes)}
    a: dict[str, Any] = {}
    x: dict[tuple[str, int, str], Any] = {}
    pairs: dict[tuple[str, str], list[Any]] = defaultdict(list)
    detour = []
    for k, f in enumerate(flows):
        r = reaches[f.id]
        a[f.id] = _var(lp, f"a_{k}", cat="Binary")
        mine = []
        for l_, hosts in enumerate(r.hosts):
            for n in hosts:
                var = x[f.id, l_, n] = _var(lp, f"x_{k}_{l_}_{idx[n]}", cat="Binary")
                pairs[(n, f.chain[l_])].append(var)
                slack = r.fwd[l_ + 1][n] + r.bwd[l_ + 1][n] - r.best_delay
                scale = f.max_delay - r.best_delay if math.isfinite(f.max_delay) else 1.0
                mine.append(min(1.0, slack / max(scale, 1e-9)) * var)
            lp += pulp.lpSum(x[f.id, l_, n] for n in hosts) == a[f.id]
        detour.extend(mine)
        # Heuristic, not a relaxation: the hosts' detours, each a fraction of
        # the flow's delay slack, may add up to at most DETOUR_BUDGET slacks,
        # so that least-delay routes through them tend to meet the bound.
        if math.isfinite(f.max_delay):
            lp += pulp.lpSum(mine) <= DETOUR_BUDGET * a[f.id]
    M = {}
    for (n, s), xs in pairs.items():
        m0 = state.instances[(n, s)]
        M[(n, s)] = _var(
            lp, f"M_{idx[n]}_{svc_index(p, s)}", m0, m0 + state.free_cores(n), "Integer"
        )
        lp += pulp.lpSum(xs) + state.flows[(n, s)] <= p.flows_per_core(n, s) * M[(n, s)]
    for n in {n for n, _ in M}:
        fixed = sum(m for (nn, s), m in state.instances.items() if nn == n and (n, s) not in M)
        lp += pulp.lpSum(var for (nn, _), var in M.items() if nn == n) + fixed <= p.cores(n)
    admitted = pulp.lpSum(a.values())
    if bound is not None:
        lp += admitted <= bound
    n_pos = sum(len(f.chain) for f in flows) + 1
    lp.setObjective(admitted - 0.5 * pulp.lpSum(detour) / n_pos)
    warm = False
    if initial:  # any placement is a solution of this relaxation: start there
        for var in lp.variables():
            var.setInitialValue(0)
        used: Counter[tuple[str, str]] = Counter()
        for f in flows:
            r = initial.get(f.id)
            keys = [(f.id, l_, h) for l_, h in enumerate(r.hosts)] if r else []
            if r is None or not all(k in x for k in keys):
                continue
            a[f.id].setInitialValue(1)
            for kx in keys:
                x[kx].setInitialValue(1)
            used.update(zip(r.hosts, f.chain, strict=True))
            warm = True
        for key, var in M.items():
            need = math.ceil((used[key] + state.flows[key]) / p.flows_per_core(*key) - EPS)
            var.setInitialValue(max(var.lowBound or 0, need))
    quick = MilpOptions(opts.solver, None, 0.0, "max", opts.priority, opts.seed, opts.threads)
    status, _, _ = _run_solver(lp, quick, max(1.0, limit), gap_abs=0.5, warm=warm)
    if status not in ("optimal", "feasible"):
        return {}
    layout = {key: int(round(_val(var))) for key, var in M.items()}
    chosen = {
        f.id: tuple(
            max(cands, key=partial(_x_value, x, f.id, l_))
            for l_, cands in enumerate(reaches[f.id].hosts)
        )
        for f in flows
        if _val(a[f.id]) > 0.5
    }
    lifted = _lift(p, [f for f in flows if f.id in chosen], layout, state, chosen)
    if restricted_time > 1.0:
        # the full MILP restricted to this instance layout: much smaller
        # (no integer instance counts, few hosts), so it finds good routes fast
        sub = MilpOptions(opts.solver, restricted_time, 0.0, "max", opts.priority, opts.seed,
                          opts.threads, polish_time=0.0)
        res = solve_batch(p, flows, state, Analyzer(p), sub, initial=lifted, layout=layout)
        if len(res.routes) > len(lifted):
            return res.routes
    return lifted


def _lift(
    p: Problem,
    flows: list[Flow],
    layout: dict[tuple[str, str], int],
    state: Residual,
    chosen: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, Route]:
    """Route flows through a fixed instance layout. First every flow tries
    its ``chosen`` hosts; then each flow left takes the least-delay sequence
    of hosts with a spare slot (a shortest path through the layered graph of
    hosts). Routes between hosts are least-delay paths; a flow is kept if
    its route meets its delay bound and fits the links."""

    trial = Residual(p)
    trial.instances.update(state.instances)
    trial.flows.update(state.flows)
    trial.link.update(state.link)
    for key, m in layout.items():
        trial.instances[key] = max(trial.instances[key], m)
    routes: dict[str, Route] = {}
    analyzer = Analyzer(p)
    for f in flows:
        if chosen and f.id in chosen:
            route = _route_through(p, trial, f, chosen[f.id])
            if route is not None:
                trial.commit(f, route)
                routes[f.id] = route
    for f in flows:
        if f.id in routes:
            continue
        dist = analyzer.dist(f.bandwidth, room=trial.room)

        def d(u: str, w: str, dist: dict[str, dict[str, float]] = dist) -> float:
            return dist.get(u, {}).get(w, math.inf)

        best: dict[str, tuple[float, tuple[str, ...]]] = {f.ingress: (0.0, ())}
        for svc in f.chain:
            nxt: dict[str, tuple[float, tuple[str, ...]]] = {}
            for n in p.nodes:
                spare = p.flows_per_core(n, svc) * trial.instances[(n, svc)] - trial.flows[
                    (n, svc)
                ]
                if spare <= 0:
                    continue
                cands = [(t + d(m, n), hs + (n,)) for m, (t, hs) in best.items()]
                c = min(cands, default=(math.inf, ()))
                if math.isfinite(c[0]):
                    nxt[n] = c
            best = nxt
        if not best:
            continue
        total, hosts = min(
            ((t + d(m, f.egress), hs) for m, (t, hs) in best.items()), default=(math.inf, ())
        )
        if total > f.max_delay + EPS:
            continue
        route = _route_through(p, trial, f, hosts)
        if route is not None:
            trial.commit(f, route)
            routes[f.id] = route
    return routes


def _route_through(
    p: Problem, trial: Residual, f: Flow, hosts: tuple[str, ...]
) -> Route | None:
    """Least-delay route through ``hosts`` if it fits the instances' spare
    slots, the links' spare bandwidth and the flow's delay bound."""
    from .state import shortest_path

    used = Counter(zip(hosts, f.chain, strict=True))
    if any(trial.flows[k] + c > p.flows_per_core(*k) * trial.instances[k] for k, c in used.items()):
        return None
    segs = []
    for src, dst in pairwise([f.ingress, *hosts, f.egress]):
        def fits(u: str, w: str, b: float = f.bandwidth) -> bool:
            return trial.room((u, w)) + EPS >= b

        sp = shortest_path(p, src, dst, fits)
        if sp is None:
            return None
        segs.append(sp[0])
    route = Route(tuple(hosts), tuple(segs))
    if route.delay(p) > f.max_delay + EPS or trial.route_fits(f, route) is not None:
        return None
    return route


def _set_start(
    p: Problem,
    modelled: list[Flow],
    initial: dict[str, Route],
    state: Residual,
    a: dict[str, Any], x: dict[Any, Any], v: dict[Any, Any], M: dict[Any, Any], U: Any,
    totals: dict[Any, Any],
) -> bool:
    """Load a starting solution from ``initial`` routes into the variables'
    values; flows whose route uses a pruned variable start as not admitted."""
    for var in [*x.values(), *v.values()]:
        var.setInitialValue(0)
    trial = Residual(p)
    trial.instances.update(state.instances)
    trial.flows.update(state.flows)
    trial.link.update(state.link)
    used = 0
    for f in modelled:
        r = initial.get(f.id)
        keys_x = [(f.id, l_, h) for l_, h in enumerate(r.hosts)] if r else []
        keys_v = (
            [(f.id, s, arc) for s, seg in enumerate(r.segments) for arc in pairwise(seg)]
            if r else []
        )
        ok = r is not None and all(kx in x for kx in keys_x) and all(kv in v for kv in keys_v)
        ok = ok and len(set(keys_v)) == len(keys_v)
        if not isinstance(a[f.id], int):
            a[f.id].setInitialValue(1 if ok else 0)
        if ok:
            assert r is not None  # ok says so
            used += 1
            for kx in keys_x:
                x[kx].setInitialValue(1)
            for kv in keys_v:
                v[kv].setInitialValue(1)
            trial.commit(f, r)
    for key, var in M.items():
        var.setInitialValue(max(trial.instances[key], var.lowBound or 0))
        if var.upBound is not None and var.varValue > var.upBound:
            return False
    for svc, T in totals.items():
        T.setInitialValue(sum(M[k].varValue for k in M if k[1] == svc))
    U.setInitialValue(min(1.0, max(U.lowBound or 0.0, _base_utilisation(p, trial) + 1e-9)))
    return used > 0


def _remaining(deadline: float | None, floor: float) -> float | None:
    if deadline is None:
        return None
    return max(floor, deadline - time.perf_counter())


def _var(
    lp: pulp.LpProblem,
    name: str,
    low: float | None = None,
    high: float | None = None,
    cat: str = "Continuous",
) -> Any:
    if hasattr(lp, "add_variable"):  # PuLP >= 3.3
        return lp.add_variable(name, low, high, cat)
    return pulp.LpVariable(name, low, high, cat)  # pragma: no cover


def svc_index(problem: Problem, svc: str) -> int:
    return sorted(problem.services).index(svc)


def _is_zero(e: Any) -> bool:
    if isinstance(e, (int, float)):
        return e == 0
    if isinstance(e, pulp.LpAffineExpression):
        return len(e) == 0 and e.constant == 0
    return False


def _val(x: Any) -> float:
    if isinstance(x, (int, float)):
        return float(x)
    return x.varValue or 0.0


def _x_value(x: dict[Any, Any], fid: str, pos: int, node: str) -> float:
    """The value of the variable placing position ``pos`` of flow ``fid`` on ``node``."""
    return _val(x[fid, pos, node])


def _base_utilisation(p: Problem, state: Residual) -> float:
    u = 0.0
    for arc, load in state.link.items():
        u = max(u, load / p.capacity(*arc))
    work: dict[str, float] = defaultdict(float)
    for (n, svc), cnt in state.flows.items():
        work[n] += cnt / p.flows_per_core(n, svc)
    for n, w in work.items():
        u = max(u, w / p.cores(n))
    return min(u, 1.0)


def _extract(f: Flow, r: Any, x: dict[Any, Any], v: dict[Any, Any]) -> Route:
    hosts = []
    for l_, cands in enumerate(r.hosts):
        hosts.append(max(cands, key=lambda n: _val(x[f.id, l_, n])))
    ends = [f.ingress, *hosts, f.egress]
    segments = []
    for s, arcs in enumerate(r.arcs):
        used = [arc for arc in arcs if _val(v[f.id, s, arc]) > 0.5]
        segments.append(_walk(ends[s], ends[s + 1], used))
    return Route(tuple(hosts), tuple(segments))


def _walk(src: str, dst: str, arcs: list[Arc]) -> tuple[str, ...]:
    """Fewest-hop path from src to dst inside the used arcs (drops any
    cycles a non-optimal solution may carry)."""
    if src == dst:
        return (src,)
    nxt: dict[str, list[str]] = defaultdict(list)
    for u, w in arcs:
        nxt[u].append(w)
    prev: dict[str, str] = {src: src}
    frontier = [src]
    while frontier and dst not in prev:
        new = []
        for u in frontier:
            for w in sorted(nxt[u]):
                if w not in prev:
                    prev[w] = u
                    new.append(w)
        frontier = new
    if dst not in prev:  # cannot happen for a solution satisfying (5)
        raise RuntimeError(f"solver returned a broken route {src}->{dst}: {arcs}")
    path = [dst]
    while path[-1] != src:
        path.append(prev[path[-1]])
    return tuple(reversed(path))


def _run_solver(
    lp: pulp.LpProblem,
    opts: MilpOptions,
    limit: float | None,
    warm: bool = False,
    gap_abs: float | None = None,
    max_nodes: int | None = None,
) -> tuple[str, float | None, float | None]:
    bound = None
    if opts.solver == "highs":
        solver = _HiGHS(
            msg=False,
            timeLimit=limit,
            gapRel=opts.mip_gap,
            gapAbs=gap_abs,
            threads=opts.threads,
            random_seed=opts.seed,
            **({"mip_max_nodes": max_nodes} if max_nodes is not None else {}),
        )
        solver.warm = warm
        lp.solve(solver)
        try:
            bound = float(lp.solverModel.getInfo().mip_dual_bound)
        except (AttributeError, TypeError, ValueError):
            bound = None
    else:
        fd, log = tempfile.mkstemp(prefix="sluice-cbc-", suffix=".log")
        os.close(fd)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                solver = pulp.PULP_CBC_CMD(
                    msg=False,
                    timeLimit=limit,
                    gapRel=opts.mip_gap,
                    gapAbs=gap_abs,
                    threads=opts.threads,
                    logPath=log,
                    warmStart=warm,
                    maxNodes=max_nodes,
                    options=[f"randomSeed {opts.seed + 1}", f"randomCbcSeed {opts.seed + 1}"],
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                lp.solve(solver)
            with open(log, errors="replace") as fh:
                text = fh.read()
        finally:
            os.unlink(log)
        m = re.findall(r"Lower bound:\s*(-?[0-9.eE+-]+)", text)
        if m:
            bound = float(m[-1])
    objective = pulp.value(lp.objective)
    if lp.sol_status == pulp.LpSolutionOptimal:
        return "optimal", objective, objective if bound is None else max(bound, objective - 1e-9)
    if lp.sol_status == pulp.LpSolutionIntegerFeasible:
        if bound is not None and math.isinf(bound):
            bound = None
        return "feasible", objective, bound
    if lp.status == pulp.LpStatusInfeasible:
        return "infeasible", None, None
    return "no-solution", None, None


class _HiGHS(pulp.HiGHS):  # type: ignore[misc]  # PuLP has no type information
    """PuLP's HiGHS interface plus a MIP start from the variables' values."""

    warm = False

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        if self.warm:
            import highspy

            sol = highspy.HighsSolution()
            values = sorted((var.index, var.varValue or 0.0) for var in lp.variables())
            sol.col_value = [val for _, val in values]
            sol.value_valid = True
            lp.solverModel.setSolution(sol)
        super().callSolver(lp)


def milp(
    problem: Problem,
    *,
    solver: str = "cbc",
    time_limit: float | None = 60.0,
    mip_gap: float = 0.0,
    accept: str = "max",
    priority: str = "utilisation",
    seed: int = 0,
    threads: int = 1,
    polish_time: float | None = None,
    polish_nodes: int | None = None,
    start: str | Plan | None = "greedy",
    relax_share: float = 0.25,
) -> Plan:
    """Solve SDNFV's placement MILP for all flows at once.

    ``polish_time`` / ``polish_nodes`` cap phase 2 (minimising U once the
    number of flows is settled) in seconds / branch-and-bound nodes; a node
    cap keeps results reproducible across machines.

    ``start`` gives the solver a starting solution: ``"greedy"`` (default:
    the greedy baseline's plan, computed first), any :class:`Plan` for the
    same problem, or None. It never changes the optimum, only how soon good
    solutions are found; optimality is proved by the solver's bound.
    Before the MILP, ``relax_share`` of the time limit goes to a second
    starting solution (relax-and-lift: hosts and cores without routes, then
    least-delay routes; the better start is used), and a core-counting bound
    on the number of flows is added as a cut (see ``_admission_bound``).

    ``status`` of the plan: ``optimal`` (proved), ``feasible`` (stopped by the
    time limit or gap with a solution; ``accepted_bound`` then says how many
    flows at most could be accepted), ``infeasible`` (``accept="all"`` and
    not every flow fits), ``no-solution`` (time limit before any solution).
    """
    opts = MilpOptions(
        solver, time_limit, mip_gap, accept, priority, seed, threads, polish_time, polish_nodes,
        relax_share,
    )
    opts.check()
    t0 = time.perf_counter()
    analyzer = Analyzer(problem)
    rejected: dict[str, Rejection] = {}
    ok_flows: list[Flow] = []
    for f in problem.flows:
        rej = analyzer.precheck(f)
        if rej is not None:
            rejected[f.id] = rej
        else:
            ok_flows.append(f)
    state = Residual(problem)
    initial: dict[str, Route] | None = None
    if isinstance(start, Plan):
        initial = start.routes
    elif start == "greedy":
        from .greedy import greedy

        initial = greedy(problem).routes
    elif start is not None:
        raise ValueError(f"start must be 'greedy', a Plan or None, got {start!r}")
    if accept == "all" and rejected:
        res = BatchResult({}, ok_flows, "infeasible", None, None, 0, 0.0)
    else:
        res = solve_batch(problem, ok_flows, state, analyzer, opts, initial)
    for fid, route in res.routes.items():
        state.commit(problem.flow_by_id[fid], route)
    prechecked = dict(rejected)  # flows no placement can carry, before the solver
    for f in res.unplaced:
        if res.status in ("optimal", "feasible"):
            rej = capacity_reason(analyzer, f, state)
            if res.status == "feasible":
                rej = Rejection(
                    f.id,
                    rej.constraint,
                    rej.reason + " (solver stopped by the time limit: not proved optimal)",
                )
        elif res.status == "no-solution":
            rej = Rejection(
                f.id, C_TIME, "the solver found no solution within the time limit; "
                "raise --time-limit or use the division heuristic",
            )
        else:
            rej = _infeasible_reason(analyzer, f, prechecked)
        rejected[f.id] = rej
    plan = Plan(
        algorithm="milp",
        status=res.status,
        instances=dict(state.instances),
        routes={f.id: res.routes[f.id] for f in problem.flows if f.id in res.routes},
        rejected=tuple(rejected[f.id] for f in problem.flows if f.id in rejected),
        solve_time=time.perf_counter() - t0,
        objective=res.objective,
        bound=res.bound,
        accepted_bound=res.accepted_bound,
        details={"solver": solver, "accept": accept, "priority": priority, **res.size},
    )
    return usage(problem, plan)


def _infeasible_reason(
    analyzer: Analyzer, f: Flow, prechecked: dict[str, Rejection]
) -> Rejection:
    bad = ", ".join(sorted(prechecked)) if prechecked else None
    if bad:
        why = f"flow(s) {bad} cannot be placed at all (see their reasons)"
    else:
        why = "the flows together need more cores or link capacity than the network has"
    return Rejection(
        f.id,
        C_INPUT,
        f"accept='all' asks for every flow to be placed but the problem is infeasible: {why}; "
        "use accept='max' to place as many flows as fit",
    )


ProgressFn = Callable[[int, int, int], None]
