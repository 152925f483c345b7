"""Every algorithm returns valid plans, rejects infeasible flows with the
constraint that failed, and is deterministic."""

from __future__ import annotations

import json

import pytest
from conftest import brute_force, flow, problem, random_tiny

from sluice.placement import random_flows, synthetic_graph
from sluice.placement.affinity import affinity
from sluice.placement.diagnose import Analyzer
from sluice.placement.division import _order, division
from sluice.placement.greedy import greedy
from sluice.placement.milp import milp
from sluice.placement.model import Service, make_problem
from sluice.placement.plan import (
    C_CORES,
    C_DELAY,
    C_FLOWS_PER_CORE,
    C_LINK,
    C_ROUTE,
    C_TIME,
)
from sluice.placement.solve import solve
from sluice.placement.validate import validate

ALGOS = {
    # a node cap on phase 2 keeps the MILP reproducible; the time limit only
    # matters for the medium instance (then the plan must still be valid)
    "milp": lambda p: milp(p, time_limit=5, polish_nodes=50),
    "division": lambda p: division(p, time_limit=20),
    "greedy": greedy,
    "affinity": affinity,
}


def medium(seed: int = 3, n_flows: int = 24, cores: int = 1):
    g = synthetic_graph(10, 16, seed=seed, cores=cores, capacity=600)
    flows = random_flows(g, n_flows, ("fw", "ids", "nat"), seed=seed, bandwidth=(50, 150),
                         delay_stretch=2.5, min_delay=3)
    return make_problem(g, {"fw": 8, "ids": 3, "nat": 8}, flows, "medium")


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_valid_on_example(algo, example_problem):
    plan = ALGOS[algo](example_problem)
    assert validate(example_problem, plan) == []
    assert plan.accepted + len(plan.rejected) == len(example_problem.flows)
    # too-fast cannot meet its delay bound anywhere; the other 20 flows fit
    # (the MILP proves 20 is the most), affinity protects only 11 of them
    assert [r.flow for r in plan.rejected] == (
        ["video-3", "too-fast", "w1", "w2", "w6", "w8", "w9", "w10", "w11", "w12"]
        if algo == "affinity" else ["too-fast"])
    if algo == "milp":
        assert (plan.accepted_bound, plan.details["admission"]) == (20, "optimal")


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_valid_on_medium_instance(algo):
    p = medium()
    plan = ALGOS[algo](p)
    assert validate(p, plan) == [], validate(p, plan)[:3]
    # capacity is scarce: the instance must make every algorithm reject some
    assert 0 < plan.accepted < len(p.flows)
    for r in plan.rejected:
        assert r.reason and r.constraint


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("algo", ["greedy", "division", "affinity"])
def test_heuristics_never_beat_the_optimum(algo, seed):
    p = random_tiny(seed)
    best, _ = brute_force(p)
    plan = ALGOS[algo](p)
    assert validate(p, plan) == []
    assert plan.accepted <= best


def test_division_with_one_batch_is_the_milp():
    p = random_tiny(0)
    best, _ = brute_force(p)
    plan = division(p, batch_size=len(p.flows), time_limit=20, polish_time=None)
    assert plan.accepted == best


def test_division_reports_progress_and_batches():
    p = medium(n_flows=12)
    seen = []
    plan = division(p, batch_size=5, time_limit=30, progress=lambda d, t, a: seen.append((d, t, a)))
    assert plan.details["batches"] == 3
    assert sum(plan.details["batch_status"].values()) == 3
    assert sum(plan.details["admission_status"].values()) == 3
    assert seen[0] == (0, 12, 0)
    assert seen[-1][0] == 12 and seen[-1][2] == plan.accepted
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)


def test_division_time_limit_rejects_remaining_flows_with_reason():
    p = medium(n_flows=40)
    plan = division(p, batch_size=1, time_limit=0.001)
    assert validate(p, plan) == []
    # no batch finishes in a millisecond: every flow is rejected for time
    assert plan.accepted == 0
    assert [r.flow for r in plan.rejected] == [f.id for f in p.flows]
    # each flow names its own batch (one flow per batch: 1 to 40, each once)
    assert sorted((r.constraint, r.reason) for r in plan.rejected) == sorted(
        (C_TIME, f"the 0.001 s time limit ran out before this flow's batch (batch {k} of "
                 f"40); raise the time limit") for k in range(1, 41))


def _loose_then_tight():
    """One-core nodes A (near) and B (far) between I and E; one flow per
    core. f0 has no delay bound, f1 only reaches A in time."""
    return problem(
        {"I": 0, "A": 1, "B": 1, "E": 0},
        [("I", "A", 10, 1), ("A", "E", 10, 1), ("I", "B", 10, 2), ("B", "E", 10, 2)],
        {"s": 1},
        [flow("f0", ["s"], "I", "E"), flow("f1", ["s"], "I", "E", max_delay=2)],
    )


def test_division_constrained_order_places_tight_flows_first():
    p = _loose_then_tight()
    best, _ = brute_force(p)
    assert best == 2
    # in input order the loose flow f0 takes A (the shorter route, the node
    # more flows can use) and f1 has nowhere left to go
    plain = division(p, batch_size=1, order="input", time_limit=20)
    assert validate(p, plain) == []
    assert plain.accepted == 1 and [r.flow for r in plain.rejected] == ["f1"]
    # most constrained first: f1 takes A, f0 goes round through B
    plan = division(p, batch_size=1, time_limit=20)
    assert plan.details["order"] == "constrained"
    assert validate(p, plan) == []
    assert plan.accepted == best
    assert plan.routes["f1"].hosts == ("A",) and plan.routes["f0"].hosts == ("B",)
    # plans and reasons are still listed in input order
    assert list(plan.routes) == ["f0", "f1"]


def test_division_order_key_and_errors():
    p = medium(seed=3, n_flows=16)
    analyzer = Analyzer(p)
    ordered = _order(analyzer, list(p.flows), "constrained")
    assert sorted(f.id for f in ordered) == sorted(f.id for f in p.flows)
    choices = [sum(len(h) for h in analyzer.reach(f).hosts) for f in ordered]
    assert choices == sorted(choices) and choices[0] < choices[-1]
    assert _order(analyzer, list(p.flows), "input") == list(p.flows)
    with pytest.raises(ValueError) as e:
        division(p, order="random")
    assert str(e.value) == "order must be one of input, constrained, got 'random'"


def test_division_constrained_order_not_worse_on_medium_instances():
    """Not a theorem, but the reason it is the default: on these seeded
    instances it places at least as many flows as input order, and more in
    total."""
    plain = ordered = 0
    for seed in (1, 2, 3):
        p = medium(seed=seed, n_flows=24)
        a = division(p, order="input", time_limit=30)
        b = division(p, time_limit=30)
        assert validate(p, a) == [] and validate(p, b) == []
        assert b.accepted >= a.accepted, seed
        plain, ordered = plain + a.accepted, ordered + b.accepted
    assert ordered > plain


def test_greedy_uses_path_then_neighbours():
    # path I-M-E; M has a free core, E has none; neighbour N of M has one.
    p = problem(
        {"I": 0, "M": 1, "E": 0, "N": 1},
        [("I", "M", 10, 1), ("M", "E", 10, 1), ("M", "N", 10, 1)],
        {"a": 5, "b": 5},
        [flow("f", ["a", "b"], "I", "E")],
    )
    plan = greedy(p)
    assert plan.routes["f"].hosts == ("M", "N")
    assert plan.routes["f"].path == ("I", "M", "N", "M", "E")
    assert validate(p, plan) == []


def test_greedy_shares_instances():
    p = problem({"A": 1, "B": 0}, [("A", "B", 100, 1)], {"s": 3},
                [flow(f"f{i}", ["s"], "A", "B") for i in range(4)])
    plan = greedy(p)
    assert plan.accepted == 3  # one core, three flows per core
    assert plan.instances == {("A", "s"): 1}
    assert plan.rejected[0].flow == "f3"
    assert plan.rejected[0].constraint == C_FLOWS_PER_CORE


# ----- infeasible inputs: a clear report, never an exception ----------------------


def infeasible_problem():
    g_nodes = {"A": 1, "B": 1, "C": 0, "Z": 1}
    links = [("A", "B", 100, 5), ("B", "C", 10, 1)]
    flows = [
        flow("too-fast", ["s"], "A", "B", 1, max_delay=2),  # shortest is 5
        flow("too-big", ["s"], "B", "C", 50),  # link B-C has 10
        flow("island", ["s"], "A", "Z", 1),  # Z is not connected
        flow("no-host", ["t"], "A", "B", 1),  # nobody can run t
        flow("ok", ["s"], "A", "B", 1),
    ]
    nodes = {**g_nodes}
    p = problem(nodes, links, {"s": 1, "t": 1}, flows)
    # make t impossible: no node runs it
    p.node_flows_per_core.update({(n, "t"): 0 for n in nodes})
    return p


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_infeasible_flows_are_reported_with_the_constraint(algo):
    p = infeasible_problem()
    plan = ALGOS[algo](p)
    assert set(plan.routes) == {"ok"}
    assert [(r.flow, r.constraint, r.reason) for r in plan.rejected] == [
        ("too-fast", C_DELAY, "the fastest route from A through nodes able to run s to B "
                              "takes 5, the flow allows 2"),
        ("too-big", C_LINK, "every path from B to C has a link with less capacity than the "
                            "flow's bandwidth 50"),
        ("island", C_ROUTE, "A and Z are not connected in the topology"),
        ("no-host", C_CORES, "no node can run service 't': every node has 0 cores or 0 flows "
                             "per core for it; add cores to a node")]
    assert validate(p, plan) == []


_NO_CORE_LEFT = ("no node that a delay-feasible route with spare bandwidth can reach has a "
                 "free core or a spare slot on an instance of 's' (every core is in use by "
                 "the flows already accepted)")
_CAPACITY_REJECTED = {
    "milp": [("f2", _NO_CORE_LEFT)],
    "division": [("f0", _NO_CORE_LEFT)],  # most constrained first: f0 comes last
    "greedy": [("f2", "greedy: no node on the path A-B or next to it has a free core or a "
                      "spare slot on an instance of 's'")],
    "affinity": [(f, "no reachable node has a free core or a spare slot for 's'")
                 for f in ("f1", "f2")],
}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_capacity_rejection_names_the_constraint(algo):
    # two cores of one flow each, three flows; affinity also keeps one core
    # free as the backup of the first flow, so it accepts only one
    p = problem({"A": 1, "B": 1}, [("A", "B", 100, 1)], {"s": 1},
                [flow(f"f{i}", ["s"], "A", "B") for i in range(3)])
    # Solved in milliseconds; but ALGOS' 5 s limit was once hit on a loaded
    # machine (a CI run beside other tests), and a stop by the time limit
    # rightly adds "(solver stopped by the time limit ...)" to the reason.
    plan = milp(p, time_limit=120, polish_nodes=50) if algo == "milp" else ALGOS[algo](p)
    assert plan.accepted == (1 if algo == "affinity" else 2)
    assert [(r.flow, r.constraint, r.reason) for r in plan.rejected] == [
        (f, C_FLOWS_PER_CORE, reason) for f, reason in _CAPACITY_REJECTED[algo]]
    assert validate(p, plan) == []


def test_empty_flow_set():
    p = problem({"A": 1}, [], {"s": 1}, [])
    for algo in ALGOS.values():
        plan = algo(p)
        assert plan.accepted == 0 and plan.rejected == () and validate(p, plan) == []


# ----- determinism ---------------------------------------------------------------------


def _strip(d):
    d = dict(d)
    d.pop("solve_time_s")
    return d


# No wall-clock limit in the determinism test: a run that hit one (a slow
# moment of a shared machine) stops elsewhere than a run that did not. Node
# caps keep the solves bounded; this instance's batches take about a second.
_UNTIMED = {**ALGOS,
            "milp": lambda p: milp(p, time_limit=None, polish_nodes=50),
            "division": lambda p: division(
                p, time_limit=None, batch_time_limit=None, polish_time=None)}


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_deterministic(algo, example_problem):
    if algo == "milp":  # the medium instance hits the time limit: use the example
        p1 = p2 = example_problem
    else:
        p1 = medium(seed=5, n_flows=16)
        p2 = medium(seed=5, n_flows=16)
    a = _strip(_UNTIMED[algo](p1).to_dict(p1))
    b = _strip(_UNTIMED[algo](p2).to_dict(p2))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_seed_changes_generated_instances():
    a = medium(seed=1)
    b = medium(seed=2)
    assert [f.ingress for f in a.flows] != [f.ingress for f in b.flows]
    assert synthetic_graph(22, 64, seed=4).number_of_edges() == 64
    assert sorted(synthetic_graph(22, 64, seed=4).edges) == sorted(
        synthetic_graph(22, 64, seed=4).edges
    )


def test_solve_dispatch_and_errors():
    p = medium(n_flows=5)
    assert solve(p, "greedy").algorithm == "greedy"
    with pytest.raises(ValueError) as e:
        solve(p, "annealing")
    assert str(e.value) == ("unknown algorithm 'annealing'; choose one of division, milp, "
                            "greedy, affinity")


def test_scaled_problem_scales_capacity():
    p = medium(n_flows=3)
    q = p.scaled(10)
    u, v = next(iter(p.graph.edges))
    assert q.capacity(u, v) == pytest.approx(10 * p.capacity(u, v))
    assert q.services["ids"] == Service("ids", 30)
    assert q.cores(u) == p.cores(u)


_LINK_FULL = ("every route from A to B through nodes with room for s crosses a link with less "
              "than 40 spare bandwidth (loaded by the flows already accepted)")


@pytest.mark.parametrize("algo", ["milp", "division"])
def test_rejection_by_a_loaded_link_names_the_link_limit_not_cores(algo):
    # A (1 core) - B (2 cores), one link of 100 each way; s carries 2 flows
    # per core. Three flows A->B of 40 and one B->A of 90: cores have room
    # for all four (6 slots), but A->B carries only two of 40. Optimum: 3
    # flows, U = 0.9 (the B->A direction). Was reported as "flows per core
    # (7) ... every core is in use".
    p = problem({"A": 1, "B": 2}, [("A", "B", 100, 1)], {"s": 2},
                [flow("a", ["s"], "A", "B", 40), flow("b", ["s"], "A", "B", 40),
                 flow("c", ["s"], "A", "B", 40), flow("d", ["s"], "B", "A", 90)])
    plan = (milp(p, time_limit=120, polish_nodes=50) if algo == "milp"
            else division(p, time_limit=120))
    assert plan.accepted == 3
    assert plan.utilisation == pytest.approx(0.9)
    assert [(r.constraint, r.reason) for r in plan.rejected] == [(C_LINK, _LINK_FULL)]
    assert plan.rejected[0].flow in {"a", "b", "c"}
    if algo == "milp":
        assert plan.status == "optimal"
    assert validate(p, plan) == []


def test_rejection_by_a_loaded_link_gives_the_delay_bound_when_there_is_one():
    p = problem({"A": 1, "B": 2}, [("A", "B", 100, 1)], {"s": 2},
                [flow(f, ["s"], "A", "B", 40, 5) for f in "abc"])
    plan = milp(p, time_limit=120, polish_nodes=50)
    assert [(r.constraint, r.reason) for r in plan.rejected] == [
        (C_LINK, "every route from A to B through nodes with room for s within the delay bound "
                 "5 crosses a link with less than 40 spare bandwidth (loaded by the flows "
                 "already accepted)")]
