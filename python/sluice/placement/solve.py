"""One entry point for every algorithm (used by the CLI and the benchmark)."""

from __future__ import annotations

from .affinity import affinity
from .division import ProgressFn, division
from .greedy import greedy
from .milp import SOLVERS, milp
from .model import Problem
from .plan import Plan

ALGORITHMS = ("division", "milp", "greedy", "affinity")


def solve(
    problem: Problem,
    algo: str = "division",
    *,
    time_limit: float | None = 60.0,
    seed: int = 0,
    solver: str = "cbc",
    mip_gap: float = 0.0,
    batch_size: int = 5,
    order: str = "constrained",
    progress: ProgressFn | None = None,
) -> Plan:
    """Run ``algo`` on ``problem``. ``time_limit``, ``solver``, ``mip_gap``
    and ``seed`` (the solver's random seed) apply to milp and division,
    ``batch_size`` and ``order`` to division;
    greedy and affinity are deterministic and fast."""
    if algo not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algo!r}; choose one of {', '.join(ALGORITHMS)}")
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if algo == "milp":
        return milp(problem, solver=solver, time_limit=time_limit, mip_gap=mip_gap, seed=seed)
    if algo == "division":
        return division(
            problem, batch_size=batch_size, solver=solver, time_limit=time_limit,
            mip_gap=mip_gap, seed=seed, order=order, progress=progress,
        )
    if algo == "greedy":
        return greedy(problem)
    return affinity(problem)
