"""Sluice placement engine: where NF instances run and how flows are routed.

Pure library API -- every algorithm takes a :class:`Problem` and returns a
:class:`Plan`; nothing here reads or writes files (see :mod:`.io` and
:mod:`.cli` for that).
"""

from .model import Flow, Problem, ProblemError, Service, make_problem, random_flows, synthetic_graph
from .plan import Plan, Protection, Rejection, Route

__all__ = [
    "Flow",
    "Plan",
    "Problem",
    "ProblemError",
    "Protection",
    "Rejection",
    "Route",
    "Service",
    "make_problem",
    "random_flows",
    "synthetic_graph",
]
