"""Sluice placement engine: where NF instances run and how flows are routed.

Pure library API -- every algorithm takes a :class:`Problem` and returns a
:class:`Plan`; nothing here reads or writes files except :mod:`.io` (loading
problems), :mod:`.plot` and :mod:`.cli`.

    from sluice.placement import load_problem, solve
    from sluice.placement.validate import validate

    problem = load_problem("topology.yaml", "flows.yaml")
    plan = solve(problem, "division", time_limit=60)
    assert validate(problem, plan) == []

The algorithms themselves: :func:`sluice.placement.milp.milp`,
:func:`sluice.placement.division.division`, :func:`sluice.placement.greedy.greedy`,
:func:`sluice.placement.affinity.affinity`.

Names are imported on first use, so ``import sluice.placement.cli`` (done by
every ``sluice`` command) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ALGORITHMS": "solve",
    "solve": "solve",
    "Flow": "model",
    "Problem": "model",
    "ProblemError": "model",
    "Service": "model",
    "make_problem": "model",
    "random_flows": "model",
    "synthetic_graph": "model",
    "Plan": "plan",
    "Protection": "plan",
    "Rejection": "plan",
    "Route": "plan",
    "InputError": "io",
    "load_problem": "io",
    "problem_from_dicts": "io",
    "Violation": "validate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sluice.placement' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
