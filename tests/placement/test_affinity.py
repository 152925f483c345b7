"""OpenPATH affinity placement: high-affinity chains, backup sub-chains on
other nodes, and a complete pre-computed path after any single node failure."""

from __future__ import annotations

import networkx as nx
import pytest
from conftest import flow, problem

from sluice.placement import random_flows, synthetic_graph
from sluice.placement.affinity import affinity
from sluice.placement.model import make_problem
from sluice.placement.plan import C_BACKUP, Plan, Route
from sluice.placement.validate import validate


def route_after_failure(plan: Plan, fid: str, x: str) -> Route:
    prot = plan.protection[fid]
    return prot.scenarios.get(x, plan.routes[fid])


def assert_survives_every_single_failure(p, plan: Plan) -> int:
    """Remove each node in turn: every accepted flow must still have a
    complete path (its pre-computed backup route) in the remaining graph,
    through nodes running its services, within its delay bound."""
    checked = 0
    for x in p.nodes:
        g = p.graph.copy()
        g.remove_node(x)
        for fid in plan.routes:
            f = p.flow_by_id[fid]
            if x in (f.ingress, f.egress):
                # the flow's own endpoint: it keeps forwarding, but no
                # service may stay there (NF failure on that node)
                r = route_after_failure(plan, fid, x)
                assert x not in r.hosts, f"flow {fid}: a service stays on failed endpoint {x}: {r}"
                continue
            r = route_after_failure(plan, fid, x)
            assert x not in r.path, f"flow {fid}: the route still crosses failed node {x}: {r}"
            for u, v in r.arcs():
                assert g.has_edge(u, v)
            for host, svc in zip(r.hosts, f.chain, strict=True):
                assert plan.instances.get((host, svc), 0) >= 1
            assert r.path[0] == f.ingress and r.path[-1] == f.egress
            assert r.delay(p) <= f.max_delay + 1e-9
            checked += 1
    return checked


def net(seed=3, n_flows=30, cores=6):
    """A 2-connected network (no single node separates any pair)."""
    g = synthetic_graph(12, 26, seed=seed, cores=cores, capacity=1000)
    assert nx.node_connectivity(g) >= 2
    flows = random_flows(g, n_flows, ("fw", "ids", "nat"), seed=seed, bandwidth=(20, 80),
                         delay_stretch=3.0, min_delay=5)
    return make_problem(g, {"fw": 6, "ids": 3, "nat": 6}, flows, "aff")


@pytest.mark.parametrize(("seed", "accepted"), [(3, 30), (4, 30), (5, 27)])
def test_any_single_node_failure_leaves_a_complete_path(seed, accepted):
    p = net(seed)
    plan = affinity(p)
    assert plan.accepted == accepted
    assert validate(p, plan) == []
    assert set(plan.protection) == set(plan.routes)
    # every accepted flow checked against the failure of every node but its two ends
    assert all(f.ingress != f.egress for f in p.flows)
    assert assert_survives_every_single_failure(p, plan) == accepted * (len(p.nodes) - 2)


def test_high_affinity_whole_chain_on_one_node():
    p = net(3, n_flows=10, cores=8)
    plan = affinity(p)
    assert plan.details["single_node_chains"] == plan.accepted == 10
    for fid, r in plan.routes.items():
        assert len(set(r.hosts)) == 1
        # low affinity: the backup of that chain is on a different node
        backups = {b for b in plan.protection[fid].backup_hosts if b is not None}
        assert r.hosts[0] not in backups


def test_chain_is_split_when_no_node_can_run_it():
    # each node has one core: a 3-service chain needs three nodes
    p = problem(
        {x: 1 for x in "ABCDEF"},
        [("A", "B", 100, 1), ("B", "C", 100, 1), ("C", "D", 100, 1), ("D", "A", 100, 1),
         ("A", "E", 100, 1), ("E", "C", 100, 1), ("B", "F", 100, 1), ("F", "D", 100, 1)],
        {"a": 5, "b": 5, "c": 5},
        [flow("f", ["a", "b", "c"], "A", "C")],
    )
    plan = affinity(p)
    assert plan.accepted == 1
    assert len(set(plan.routes["f"].hosts)) == 3
    assert validate(p, plan) == []
    assert_survives_every_single_failure(p, plan)


def test_cut_vertex_makes_flow_unprotectable():
    # A - B - C in a line: every A->C path crosses B, so no backup exists
    p = problem(
        {"A": 2, "B": 2, "C": 2},
        [("A", "B", 100, 1), ("B", "C", 100, 1)],
        {"s": 4},
        [flow("through", ["s"], "A", "C"), flow("local", ["s"], "A", "B")],
    )
    plan = affinity(p)
    rej = plan.rejection("through")
    assert rej is not None
    assert (rej.flow, rej.constraint) == ("through", C_BACKUP)
    assert rej.reason == "no backup route avoids node B (it forwards the flow) with spare bandwidth"
    assert [r.flow for r in plan.rejected] == ["through"]
    # A->B needs no transit node: its services fail over between A and B
    assert plan.routes == {"local": Route(("A",), (("A",), ("A", "B")))}
    prot = plan.protection["local"]
    assert prot.backup_hosts == ("B",)
    assert prot.scenarios == {"A": Route(("B",), (("A", "B"), ("B",)))}
    assert validate(p, plan) == []


def test_backup_capacity_is_reserved_and_shared():
    # four flows, each can run on A or B; one core per node carries 4 flows.
    # Active on A (nearest), backups on B: B keeps 4 slots reserved, so a
    # fifth flow (A has no room left) cannot take B's reserved capacity.
    p = problem(
        {"A": 1, "B": 1, "I": 0, "E": 0},
        [("I", "A", 100, 1), ("A", "E", 100, 1), ("I", "B", 100, 2), ("B", "E", 100, 2)],
        {"s": 4},
        [flow(f"f{i}", ["s"], "I", "E") for i in range(5)],
    )
    plan = affinity(p)
    assert plan.accepted == 4
    assert all(plan.routes[f].hosts == ("A",) for f in plan.routes)
    assert all(plan.protection[f].backup_hosts == ("B",) for f in plan.routes)
    assert plan.instances == {("A", "s"): 1, ("B", "s"): 1}
    assert plan.details["reserved_backup_slots"] == 4
    assert validate(p, plan) == []
    assert_survives_every_single_failure(p, plan)


def test_validator_catches_missing_backup():
    p = net(4, n_flows=8)
    plan = affinity(p)
    fid = next(f for f, r in plan.routes.items() if len(r.path) > 2)
    plan.protection[fid] = type(plan.protection[fid])(plan.protection[fid].backup_hosts, {})
    found = validate(p, plan)
    assert any(v.constraint == C_BACKUP and v.subject == fid for v in found)


def test_failure_property_fails_for_unprotected_plans():
    """The property test itself must be able to fail, on each of its checks:
    without the scenarios for transit nodes a route still crosses the failed
    node; without those for a flow's own ends a service stays on the failed
    end; greedy, with no backups at all, fails too."""
    from sluice.placement.greedy import greedy

    p = net(4, n_flows=8)
    plan = affinity(p)
    assert_survives_every_single_failure(p, plan)  # the premise: protected, it passes
    for keep_ends, message in [
            (True, "the route still crosses failed node"),
            (False, "a service stays on failed endpoint")]:
        cut = affinity(p)
        for fid, prot in cut.protection.items():
            ends = {p.flow_by_id[fid].ingress, p.flow_by_id[fid].egress}
            cut.protection[fid] = type(prot)(prot.backup_hosts, {
                x: r for x, r in prot.scenarios.items() if (x in ends) == keep_ends})
        with pytest.raises(AssertionError, match=message):
            assert_survives_every_single_failure(p, cut)
    plan = greedy(p)
    plan.protection = {f: type_empty() for f in plan.routes}
    with pytest.raises(AssertionError, match=r"^flow \S+: "):
        assert_survives_every_single_failure(p, plan)
    assert nx.is_connected(p.graph)


def type_empty():
    from sluice.placement.plan import Protection

    return Protection((), {})


def _two_node_split(nodes, links):
    # s only on B, t only on A: the flow A->B goes A->B (s), B->A (t), A->B
    return make_problem(_g(nodes, links), {"s": 1, "t": 1},
                        [flow("f", ["s", "t"], "A", "B", 60)],
                        node_flows_per_core={("A", "s"): 0, ("B", "t"): 0})


def _g(nodes, links):
    g = nx.Graph()
    for n, c in nodes.items():
        g.add_node(n, cores=c)
    for a, b, cap, d in links:
        g.add_edge(a, b, capacity=cap, delay=d)
    return g


def test_split_route_that_crosses_a_link_twice_names_the_hosts_and_the_link_limit():
    p = _two_node_split({"A": 1, "B": 1}, [("A", "B", 100, 1)])
    plan = affinity(p)
    assert [(r.flow, r.constraint, r.reason) for r in plan.rejected] == [
        ("f", "link capacity (8)", "no route from A to B through the hosts B then A has 60 "
                                   "spare bandwidth on every link")]


def test_split_route_takes_another_way_when_its_own_segments_fill_a_link():
    # was: the last segment A->B was routed over the link the first one had
    # filled, and the flow was rejected for link capacity though A->C->B had room
    p = _two_node_split({"A": 1, "B": 1, "C": 1},
                        [("A", "B", 100, 1), ("B", "C", 100, 1), ("A", "C", 100, 1)])
    plan = affinity(p)
    # a primary route is found; only protection (C forwards it) fails
    assert [(r.flow, r.constraint, r.reason) for r in plan.rejected] == [
        ("f", C_BACKUP, "no backup route avoids node C (it forwards the flow) with spare "
                        "bandwidth")]
    assert validate(p, plan) == []
