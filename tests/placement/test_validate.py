"""The validator finds every kind of broken plan (so the other tests that
rely on it can fail)."""

from __future__ import annotations

import copy
import math

from conftest import flow, problem

from sluice.placement.greedy import greedy
from sluice.placement.plan import (
    C_CORES,
    C_DELAY,
    C_FLOWS_PER_CORE,
    C_HOSTS,
    C_INPUT,
    C_LINK,
    C_NODE_UTIL,
    C_ROUTE,
    Rejection,
    Route,
)
from sluice.placement.validate import validate


def base():
    p = problem(
        {"A": 2, "B": 1, "C": 1},
        [("A", "B", 10, 1), ("B", "C", 10, 1), ("A", "C", 10, 5)],
        {"s": 2, "t": 2},
        [flow("f1", ["s", "t"], "A", "C", 4, max_delay=4),
         flow("f2", ["s"], "A", "B", 4)],
    )
    plan = greedy(p)
    assert validate(p, plan) == []
    assert plan.accepted == 2
    return p, plan


def constraints(p, plan):
    return {v.constraint for v in validate(p, plan)}


def test_valid_plan_has_no_violations():
    p, plan = base()
    assert validate(p, plan) == []


def test_missing_instance():
    p, plan = base()
    key = next(iter(plan.instances))
    del plan.instances[key]
    assert C_HOSTS in constraints(p, plan)


def test_too_many_instances_for_cores():
    p, plan = base()
    plan.instances[("B", "s")] = 5
    assert C_CORES in constraints(p, plan)


def test_unknown_flow_in_plan():
    p, plan = base()
    bad = copy.deepcopy(plan)
    bad.routes["f3"] = bad.routes["f2"]  # a flow the problem does not have
    assert [v.subject for v in validate(p, bad) if v.constraint == C_INPUT] == ["f3"]


def test_route_not_following_links():
    p, plan = base()
    r = plan.routes["f2"]
    plan.routes["f2"] = Route(r.hosts, (("A", "C", "B"), *r.segments[1:]))
    assert C_ROUTE in constraints(p, plan)


def test_segment_with_wrong_ends():
    p, plan = base()
    r = plan.routes["f2"]
    plan.routes["f2"] = Route(r.hosts, (("B",), *r.segments[1:]))
    assert C_ROUTE in constraints(p, plan)


def test_delay_bound_exceeded():
    p, plan = base()
    r = plan.routes["f1"]
    plan.routes["f1"] = Route(("A", "A"), (("A",), ("A",), ("A", "C")))  # link of delay 5
    plan.instances.setdefault(("A", "t"), 1)
    plan.instances.setdefault(("A", "s"), 1)
    assert r != plan.routes["f1"]
    assert C_DELAY in constraints(p, plan)


def test_link_overload_and_wrong_utilisation():
    p, plan = base()
    f = p.flows[1]
    for i in range(3):  # three more copies of f2 on link A->B: 4 * 4 = 16 > 10
        plan.routes[f"x{i}"] = plan.routes[f.id]
    p2 = p.with_flows([*p.flows, *[flow(f"x{i}", ["s"], "A", "B", 4) for i in range(3)]])
    found = constraints(p2, plan)
    assert C_LINK in found
    assert C_NODE_UTIL in found  # the reported U no longer matches the routes
    assert C_FLOWS_PER_CORE in found  # 4 flows of s on instances carrying 2 each


def test_flow_both_accepted_and_rejected_or_missing():
    p, plan = base()
    plan.rejected = (Rejection("f1", "x", "y"),)
    assert C_INPUT in constraints(p, plan)
    p, plan = base()
    del plan.routes["f2"]
    assert any("neither" in v.message for v in validate(p, plan))


def test_wrong_number_of_hosts():
    p, plan = base()
    r = plan.routes["f1"]
    plan.routes["f1"] = Route(r.hosts[:1], r.segments)
    assert C_HOSTS in constraints(p, plan)
    assert math.isinf(p.flows[1].max_delay)
