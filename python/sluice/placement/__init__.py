"""Sluice placement engine: where NF instances run and how flows are routed.

Pure library API -- every algorithm takes a :class:`Problem` and returns a
:class:`Plan`; nothing here reads or writes files except :mod:`.io` (loading
problems), :mod:`.plot` and :mod:`.cli`.

    from sluice.placement import load_problem, solve, validate
    problem = load_problem("topology.yaml", "flows.yaml")
    plan = solve(problem, "division", time_limit=60)
    assert validate(problem, plan) == []
"""

from .affinity import affinity
from .division import division
from .greedy import greedy
from .io import InputError, load_problem, problem_from_dicts
from .milp import milp
from .model import Flow, Problem, ProblemError, Service, make_problem, random_flows, synthetic_graph
from .plan import Plan, Protection, Rejection, Route
from .solve import ALGORITHMS, solve
from .validate import Violation, validate

__all__ = [
    "ALGORITHMS",
    "Flow",
    "InputError",
    "Plan",
    "Problem",
    "ProblemError",
    "Protection",
    "Rejection",
    "Route",
    "Service",
    "Violation",
    "affinity",
    "division",
    "greedy",
    "load_problem",
    "make_problem",
    "milp",
    "problem_from_dicts",
    "random_flows",
    "solve",
    "synthetic_graph",
    "validate",
]
