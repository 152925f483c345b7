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


def found(p, plan):
    """Every violation, in the validator's order, as it prints them."""
    return [str(v) for v in validate(p, plan)]


def test_valid_plan_has_no_violations():
    p, plan = base()
    assert validate(p, plan) == []


def test_missing_instance():
    p, plan = base()
    key = next(iter(plan.instances))
    del plan.instances[key]
    assert key == ("A", "s")
    assert found(p, plan) == [
        f"[{C_HOSTS}] f1: position 0 (s) on A, where no instance of s runs",
        f"[{C_HOSTS}] f2: position 0 (s) on A, where no instance of s runs",
        f"[{C_FLOWS_PER_CORE}] A/s: 2 flows but 0 instance(s) carry at most 0"]


def test_too_many_instances_for_cores():
    p, plan = base()
    plan.instances[("B", "s")] = 5
    assert found(p, plan) == [f"[{C_CORES}] B: 5 instances (cores) but the node has 1"]


def test_unknown_flow_in_plan():
    p, plan = base()
    bad = copy.deepcopy(plan)
    bad.routes["f3"] = bad.routes["f2"]  # a flow the problem does not have
    assert found(p, bad) == [f"[{C_INPUT}] f3: plan routes a flow that is not in the problem"]


def test_route_not_following_links():
    # every pair of A, B, C is linked: only a node repeated is not a link
    p, plan = base()
    r = plan.routes["f2"]
    assert r.segments == (("A",), ("A", "B"))
    plan.routes["f2"] = Route(r.hosts, (r.segments[0], ("A", "A", "B")))
    assert found(p, plan) == [f"[{C_ROUTE}] f2: segment 1 uses A->A, not a link"]


def test_first_segment_not_ending_at_the_first_host():
    p, plan = base()
    r = plan.routes["f2"]
    plan.routes["f2"] = Route(r.hosts, (("A", "C", "B"), *r.segments[1:]))
    got = validate(p, plan)
    assert [(v.constraint, v.subject) for v in got] == [
        (C_ROUTE, "f2"), (C_LINK, "A->C"), (C_LINK, "C->B")]
    assert got[0].message == "segment 0 runs A..B, expected A..A"
    assert [v.message for v in got[1:]] == ["reported link load is wrong"] * 2


def test_segment_with_wrong_ends():
    p, plan = base()
    r = plan.routes["f2"]
    plan.routes["f2"] = Route(r.hosts, (("B",), *r.segments[1:]))
    got = validate(p, plan)
    assert [(v.constraint, v.subject) for v in got] == [(C_ROUTE, "f2")]
    assert got[0].message == "segment 0 runs B..B, expected A..A"


def test_delay_bound_exceeded():
    p, plan = base()
    r = plan.routes["f1"]
    plan.routes["f1"] = Route(("A", "A"), (("A",), ("A",), ("A", "C")))  # link of delay 5
    plan.instances.setdefault(("A", "t"), 1)
    plan.instances.setdefault(("A", "s"), 1)
    assert r != plan.routes["f1"]
    assert found(p, plan) == [
        f"[{C_DELAY}] f1: delay 5 exceeds the bound 4",
        f"[{C_NODE_UTIL}] U: plan reports U=0.8, the routes give 0.75",
        f"[{C_LINK}] A->C: reported link load is wrong",
        f"[{C_LINK}] A->B: reported link load is wrong"]


def test_link_overload_and_wrong_utilisation():
    p, plan = base()
    f = p.flows[1]
    for i in range(3):  # three more copies of f2 on link A->B: 4 * 4 = 16 > 10
        plan.routes[f"x{i}"] = plan.routes[f.id]
    p2 = p.with_flows([*p.flows, *[flow(f"x{i}", ["s"], "A", "B", 4) for i in range(3)]])
    # 5 flows of s (f1, f2 and the copies) on one instance carrying 2; the
    # reported U, link load and flow count no longer match the routes
    assert found(p2, plan) == [
        f"[{C_FLOWS_PER_CORE}] A/s: 5 flows but 1 instance(s) carry at most 2",
        f"[{C_LINK}] A->B: load 20 exceeds capacity 10",
        f"[{C_NODE_UTIL}] A: 3 cores of work on 2 cores",
        f"[{C_NODE_UTIL}] U: plan reports U=0.8, the routes give 2",
        f"[{C_LINK}] A->B: reported link load is wrong",
        f"[{C_FLOWS_PER_CORE}] A/s: reported flow count is wrong"]


def test_flow_both_accepted_and_rejected_or_missing():
    p, plan = base()
    plan.rejected = (Rejection("f1", "x", "y"),)
    assert found(p, plan) == [f"[{C_INPUT}] f1: flow is both accepted and rejected"]
    p, plan = base()
    del plan.routes["f2"]
    assert found(p, plan) == [
        f"[{C_INPUT}] f2: flow is neither accepted nor rejected",
        f"[{C_NODE_UTIL}] U: plan reports U=0.8, the routes give 0.5",
        f"[{C_LINK}] A->B: reported link load is wrong",
        f"[{C_FLOWS_PER_CORE}] A/s: reported flow count is wrong"]


def test_wrong_number_of_hosts():
    p, plan = base()
    r = plan.routes["f1"]
    plan.routes["f1"] = Route(r.hosts[:1], r.segments)
    assert found(p, plan) == [
        f"[{C_HOSTS}] f1: 1 hosts for a chain of 2 services",
        f"[{C_NODE_UTIL}] U: plan reports U=0.8, the routes give 0.4",
        f"[{C_LINK}] A->B: reported link load is wrong",
        f"[{C_FLOWS_PER_CORE}] A/s: reported flow count is wrong"]
    assert math.isinf(p.flows[1].max_delay)
