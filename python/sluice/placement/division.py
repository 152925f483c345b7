"""SDNFV's division heuristic (paper section 3.5).

"We divide the problem into sub-problems, each having a small number of
flows (e.g., 5) so as to compute the solution quickly. After solving a
sub-problem, a post processing step updates the available resources, removes
unused switches and solves the next sub-problem for the next small subset of
flows."

Each batch is the full MILP of :mod:`.milp` over the batch's flows, on top of
the instances, flows and link load committed by earlier batches (which are
never moved). New flows may use spare slots of instances started earlier.
"Removes unused switches": nodes with no free core and no spare slot are not
offered as hosts, and links without room for a flow are not offered to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from .diagnose import Analyzer, capacity_reason
from .milp import BatchResult, MilpOptions, solve_batch
from .model import Flow, Problem
from .plan import C_TIME, Plan, Rejection, Route, usage
from .state import Residual

# progress(flows_done, flows_total, flows_accepted)
ProgressFn = Callable[[int, int, int], None]


ORDERS = ("input", "constrained")


def division(
    problem: Problem,
    *,
    batch_size: int = 5,
    solver: str = "cbc",
    time_limit: float | None = 60.0,
    batch_time_limit: float | None = 10.0,
    priority: str = "cores",
    mip_gap: float = 0.0,
    seed: int = 0,
    threads: int = 1,
    polish_time: float | None = 5.0,
    polish_nodes: int | None = 100,
    lookahead: bool = True,
    order: str = "constrained",
    progress: ProgressFn | None = None,
) -> Plan:
    """Place flows ``batch_size`` at a time.

    Each batch gets at most ``batch_time_limit`` seconds and at most its fair
    share of what is left of ``time_limit``; flows whose batch cannot start
    before ``time_limit`` are rejected with reason "time limit".
    Within a batch the number of flows is always solved first (and proved
    optimal unless the batch time runs out); then at most ``polish_nodes``
    branch-and-bound nodes and ``polish_time`` seconds go to minimising U.
    The node limit keeps results reproducible (as long as no time limit is
    reached, which depends on the machine).
    ``priority="cores"`` (the default) makes each batch start as few new
    cores as possible before minimising U, which leaves more cores for later
    batches; ``"utilisation"`` is the paper's plain min-U per batch.
    ``lookahead`` (default on) makes that choice demand-aware: a new
    instance costs less on a node that more of the flows still to come could
    use (see ``_demand_aware_costs``); off, every new core costs the same.
    ``order``: ``"constrained"`` (the default) batches the flows with the
    fewest delay-feasible hosts first (see ``_order``); ``"input"`` takes
    them in input order, as the paper does.

    There is no repair pass retrying rejected flows at the end: when every
    batch's flow count is proved optimal it could never place one. Links and
    slots only fill up, and an instance started by a later batch used a core
    that was still free after the flow's own batch, so any placement of the
    flow in the final state would have fitted in that batch's solution too.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    MilpOptions(
        solver, time_limit, mip_gap, "max", priority, seed, threads, polish_time, polish_nodes
    ).check()
    t0 = time.perf_counter()
    analyzer = Analyzer(problem)
    state = Residual(problem)
    routes: dict[str, Route] = {}
    ok, rejected = _prechecked(analyzer, problem.flows)
    ok = _order(analyzer, ok, order)
    batches = [ok[i : i + batch_size] for i in range(0, len(ok), batch_size)]
    core_cost = _demand_aware_costs(problem, analyzer, ok) if lookahead else None
    statuses: dict[str, int] = {}
    admission: dict[str, int] = {}  # phase 1 (flow count) status per batch
    done = len(rejected)
    total = len(problem.flows)
    if progress:
        progress(done, total, 0)
    for b, batch in enumerate(batches):
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            _reject_not_run(rejected, batches, b, time_limit)
            statuses["not-run"] = len(batches) - b
            break
        share = None if left is None else left / (len(batches) - b)
        limit = _min_opt(batch_time_limit, share)
        opts = MilpOptions(
            solver, limit, mip_gap, "max", priority, seed, threads, polish_time, polish_nodes
        )
        res = solve_batch(problem, batch, state, analyzer, opts, core_cost=core_cost)
        statuses[res.status] = statuses.get(res.status, 0) + 1
        adm = str(res.size.get("admission", res.status))
        admission[adm] = admission.get(adm, 0) + 1
        _commit_batch(res, batch, b, limit, analyzer, state, routes, rejected)
        done += len(batch)
        if progress:
            progress(done, total, len(routes))
    plan = Plan(
        algorithm="division",
        status="heuristic",
        instances=dict(state.instances),
        routes={f.id: routes[f.id] for f in problem.flows if f.id in routes},
        rejected=tuple(rejected[f.id] for f in problem.flows if f.id in rejected),
        solve_time=time.perf_counter() - t0,
        details={
            "solver": solver,
            "batch_size": batch_size,
            "batches": len(batches),
            "batch_status": statuses,
            "admission_status": admission,
            "priority": priority,
            "order": order,
        },
    )
    return usage(problem, plan)


def _prechecked(
    analyzer: Analyzer, flows: Sequence[Flow]
) -> tuple[list[Flow], dict[str, Rejection]]:
    """The flows that pass the analyzer's precheck, in input order, and the
    rejections of those that do not, by flow id."""
    ok: list[Flow] = []
    rejected: dict[str, Rejection] = {}
    for f in flows:
        rej = analyzer.precheck(f)
        if rej is None:
            ok.append(f)
        else:
            rejected[f.id] = rej
    return ok, rejected


def _reject_not_run(
    rejected: dict[str, Rejection], batches: list[list[Flow]], first: int,
    time_limit: float | None,
) -> None:
    """Reject every flow of batches[first:]: the time limit ran out before them."""
    for k, later in enumerate(batches[first:], start=first):
        for f in later:
            rejected[f.id] = Rejection(
                f.id, C_TIME,
                f"the {time_limit:g} s time limit ran out before this flow's batch "
                f"(batch {k + 1} of {len(batches)}); raise the time limit",
            )


def _commit_batch(
    res: BatchResult, batch: list[Flow], b: int, limit: float | None, analyzer: Analyzer,
    state: Residual, routes: dict[str, Route], rejected: dict[str, Rejection],
) -> None:
    """Commit batch b's routes to state in batch order (later batches build on
    them) and reject its unplaced flows: for capacity when the solver finished,
    for time when it found no solution within limit."""
    for f in batch:
        if f.id in res.routes:
            routes[f.id] = res.routes[f.id]
            state.commit(f, res.routes[f.id])
    for f in res.unplaced:
        if res.status in ("optimal", "feasible"):
            rejected[f.id] = capacity_reason(analyzer, f, state)
        else:
            rejected[f.id] = Rejection(
                f.id, C_TIME,
                f"the solver found no solution for this flow's batch (batch {b + 1}) "
                f"within {limit or 0:g} s; raise the time limit or use smaller batches",
            )


def _order(analyzer: Analyzer, flows: list[Flow], order: str) -> list[Flow]:
    """Flows in the order their batches are solved. ``"constrained"``: the
    fewest delay-feasible (node, position) choices first, then the least
    delay slack, then input order (so the order is deterministic)."""
    if order == "input":
        return list(flows)

    def key(item: tuple[int, Flow]) -> tuple[int, float, int]:
        i, f = item
        r = analyzer.reach(f)
        slack = f.max_delay - r.best_delay
        return (sum(len(h) for h in r.hosts), slack, i)

    return [f for _, f in sorted(enumerate(flows), key=key)]


def _demand_aware_costs(
    problem: Problem, analyzer: Analyzer, flows: list[Flow]
) -> dict[tuple[str, str], float]:
    """Cost of starting an instance of service j on node i, between 0.5 and
    1: lower where more of all the flows to place could use it (i is a
    delay-feasible host for j in their chain), so early batches put shared
    instances where later batches can fill them."""
    demand: dict[tuple[str, str], int] = {}
    for f in flows:
        for svc, hosts in zip(f.chain, analyzer.reach(f).hosts, strict=True):
            for n in hosts:
                demand[(n, svc)] = demand.get((n, svc), 0) + 1
    top: dict[str, int] = {}
    for (_, svc), c in demand.items():
        top[svc] = max(top.get(svc, 0), c)
    return {k: 1.0 - 0.5 * c / top[k[1]] for k, c in demand.items()}


def _min_opt(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(0.5, min(a, b))
