"""The orchestrator's apply against a fake sluiced, fake processes and a
fake clock: what an edited file adds, replaces, refuses and undoes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orchestrator_fakes import (
    BASE,
    FakeRunner,
    FakeSluiced,
    add_rule,
    dep_of,
    make,
)

from sluice.core.deploy import Deployment
from sluice.runtime.client import rule_build_seconds
from sluice.runtime.orchestrator import Orchestrator, OrchestratorError

GRAPH = {"name": "g", "nodes": {"fwd": ["port:out"]}, "match": [{"proto": "udp"}]}


def test_apply_adds_replica_changes_graph_chain_and_rules(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH])
    add_rule(runner, sluiced, {"graph": "g", "priority": 0, "proto": "udp"}, 7)
    new = dep_of(
        nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2},
             {"name": "mon", "program": "sluice-monitor", "service": "mon"}],
        chain=["mon", "fwd", "port:out"],
        graphs=[{"name": "g", "nodes": {"mon": ["fwd"], "fwd": ["port:out"]},
                 "match": [{"proto": "tcp", "dport": 80}]}])
    out = orch.apply(new)
    spawned = {p.label: p for p in runner.spawned}
    assert sorted(spawned) == ["fwd.2", "mon"]
    assert out == [
        "replicas: NF 'fwd': 1 -> 2",
        "add: NF 'mon' (sluice-monitor, service mon): 1 instance(s)",
        "graph: g changed (version 2)",
        "chain: mon -> fwd -> port:out",
        "rule: 7 removed (udp -> graph g)",
        "rule: 11 added (priority 0, tcp dport 80 -> graph g)",
        "remove: NF 'scrub': its instances stop",
    ]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "rule.remove",
                                             "rule.add"]
    assert sluiced.calls[0][1] == {"name": "g", "entry": "mon",
                                   "nodes": {"mon": ["fwd"], "fwd": ["port:out"]}}
    assert sluiced.calls[2:] == [
        ("rule.remove", {"ids": [7]}),
        ("rule.add", {"rules": [{"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}]})]
    assert runner.rules == [({"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}, 11)]
    assert sluiced.table == {11: {"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}}
    assert sluiced.chain == ["mon", "fwd", "port:out"]
    assert orch.dep is new and runner.dep is new
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]


def test_apply_refuses_ports_and_node_changes_and_changes_nothing(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    new = dep_of(node={"name": "t", "ring_size": 128},
                 ports=[{"name": "in", "device": "net_null0"},
                        {"name": "out", "device": "net_null2"}],
                 nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd",
                       "replicas": 2}])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value).splitlines() == [
        "d2.yaml: node.ring_size: unset -> 128 cannot change while the node runs: stop "
        "`sluice up` and start it again with the new file (nothing was applied)",
        "d2.yaml: ports: port out device 'net_null1' -> 'net_null2' cannot change while the "
        "node runs: stop `sluice up` and start it again with the new file (nothing was "
        "applied)"]
    orch.tick()
    assert runner.spawned == [] and sluiced.calls == [] and orch.dep.source == "d.yaml"


def test_apply_rolls_back_when_a_new_nf_exits_at_start(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    runner.fail_spawn.add("mon")
    new = dep_of(nfs=[*BASE["nfs"], {"name": "mon", "program": "sluice-monitor",
                                      "service": "mon"}],
                 chain=["mon", "fwd", "port:out"])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value) == ("d2.yaml: nfs: NF 'mon' (mon) exited with status 1 while starting, "
                            "so nothing else was changed; see /tmp/mon.log")
    assert orch.dep.source == "d.yaml" and sluiced.calls == []
    orch.tick()
    assert ("mon", ()) not in orch.groups
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]


def test_apply_replaces_changed_nf_new_first(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = runner.nfs[0]
    new = dep_of(nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd",
                       "args": ["--tag-src-mac"]}, BASE["nfs"][1]])
    out = orch.apply(new)
    assert out[0] == ("replace: NF 'fwd' changed (args: [] -> ['--tag-src-mac']): new "
                      "instances start, then the old ones stop")
    (p,) = runner.spawned
    assert p.label == "fwd.2" and p.argv == ["sluice-forward", "--tag-src-mac"]
    assert old.exited() == 0  # nf.stop'ed once the new one registered
    orch.tick()
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd.2"]


MON = {"name": "mon", "program": "sluice-monitor", "service": "mon"}
UNDONE = "the apply was undone: d.yaml runs as before; fix d2.yaml and apply it again:"
IN_PART = ("the apply could not be undone in full: the NFs run as d.yaml says, but sluiced's "
           "graphs, chain and rules may not; the next `sluice apply` (of either file) pushes "
           "them all again:")


def test_apply_undoes_what_it_made_when_sluiced_refuses_a_step(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = orch.dep
    sluiced.refuse["chain.set"] = "no such hop"
    new = dep_of(nfs=[*BASE["nfs"], MON], graphs=[GRAPH], chain=["mon", "fwd", "port:out"])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    (mon,) = runner.spawned
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the chain (mon -> fwd -> port:out): no such hop",
        UNDONE,
        "  undone: graph g added (version 2)",
        "  undone: add NF 'mon' (sluice-monitor, service mon): 1 instance(s) (its new "
        "instances stop)"]
    assert sluiced.calls == [
        ("graph.apply", {"name": "g", "entry": "fwd", "nodes": {"fwd": ["port:out"]}}),
        ("chain.set", {"hops": ["mon", "fwd", "port:out"]}),
        ("graph.remove", {"name": "g"}),
        ("nf.stop", {"instance": 1})]
    assert lines[-2:] == ["undo: graph g added (version 2)",
                          f"stop: mon (pid {mon.pid}, nf.stop instance 1): the apply failed"]
    assert mon.exited() == 0
    assert sluiced.graphs == {} and sluiced.chain == ["fwd", "port:out"]
    assert sluiced.table == {} and runner.rules == []
    assert orch.dep is old and runner.dep is old and not orch.resync
    orch.tick()
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]
    assert [g["nf"] for g in orch.status()["groups"]] == ["fwd", "scrub"]
    # the same file again, once sluiced takes it: everything is applied
    del sluiced.refuse["chain.set"]
    sluiced.calls.clear()
    assert orch.apply(new) == [
        "add: NF 'mon' (sluice-monitor, service mon): 1 instance(s)",
        "graph: g added (version 2)",
        "chain: mon -> fwd -> port:out",
        "rule: 11 added (priority 0, udp -> graph g)"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "rule.add"]
    assert [p.label for p in runner.spawned] == ["mon", "mon"]
    assert runner.spawned[1].exited() is None
    assert runner.rules == [({"graph": "g", "priority": 0, "proto": "udp"}, 11)]
    assert sluiced.chain == ["mon", "fwd", "port:out"] and list(sluiced.graphs) == ["g"]
    assert orch.dep is new and runner.dep is new


def test_apply_adds_a_removed_rule_again_when_sluiced_refuses_a_rule(tmp_path: Path) -> None:
    icmp_rule = {"graph": "g", "priority": 5, "proto": "icmp"}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH], rules=[icmp_rule])
    udp = {"graph": "g", "priority": 0, "proto": "udp"}
    tcp = {"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}
    add_rule(runner, sluiced, udp, 7)
    add_rule(runner, sluiced, icmp_rule, 8)
    sluiced.refuse_when.append(("rule.add", {"proto": "tcp"}, "too many rules"))
    new = dep_of(graphs=[{**GRAPH, "match": [{"proto": "tcp", "dport": 80}]}],
                 rules=[icmp_rule])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the rule (priority 0, tcp dport 80 -> graph g): too many "
        "rules",
        UNDONE,
        "  undone: rule 7 removed (udp -> graph g): added again as rule 11"]
    assert sluiced.calls == [("rule.remove", {"ids": [7]}), ("rule.add", {"rules": [tcp]}),
                             ("rule.add", {"rules": [udp]})]
    # the rule has a new id, in its old place
    assert runner.rules == [(udp, 11), (icmp_rule, 8)]
    assert sluiced.table == {8: icmp_rule, 11: udp}
    assert orch.dep.source == "d.yaml" and not orch.resync
    # the next apply removes the rule by its new id
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    assert orch.apply(new) == ["rule: 11 removed (udp -> graph g)",
                               "rule: 12 added (priority 0, tcp dport 80 -> graph g)"]
    assert sluiced.calls == [("rule.remove", {"ids": [11]}), ("rule.add", {"rules": [tcp]})]
    assert runner.rules == [(icmp_rule, 8), (tcp, 12)]
    assert sluiced.table == {8: icmp_rule, 12: tcp}


def test_apply_undoes_a_removed_graph_and_its_rules(tmp_path: Path) -> None:
    h = {"name": "h", "nodes": {"fwd": ["port:out"]}, "match": [{"proto": "icmp"}]}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH, h])
    udp = {"graph": "g", "priority": 0, "proto": "udp"}
    add_rule(runner, sluiced, udp, 7)
    add_rule(runner, sluiced, {"graph": "h", "priority": 0, "proto": "icmp"}, 8)
    sluiced.refuse_when.append(("graph.remove", {"name": "h"}, "graph h is in use"))
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of())
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of graph h: graph h is in use",
        UNDONE,
        "  undone: graph g removed (1 rule(s) with it): applied again (version 2)",
        "  undone: rule 7 removed with graph g: added again as rule 11"]
    assert sluiced.calls[:3] == [("graph.remove", {"name": "g"}), ("graph.remove", {"name": "h"}),
                                 ("graph.apply", {"name": "g", "entry": "fwd",
                                                  "nodes": {"fwd": ["port:out"]}})]
    assert sluiced.calls[3:] == [("rule.add", {"rules": [udp]})]
    assert runner.rules == [(udp, 11), ({"graph": "h", "priority": 0, "proto": "icmp"}, 8)]
    assert sorted(sluiced.graphs) == ["g", "h"] and sorted(sluiced.table) == [8, 11]
    # a rule that goes with its graph is said once the graph is gone: rule 8
    # (graph h, refused) never was
    assert [ln for ln in lines if ln.startswith("rule")] == ["rule: 7 removed (udp -> graph g)"]


UDP = {"graph": "g", "priority": 0, "proto": "udp"}  # GRAPH's match


def many(proto: str, n: int = 500) -> list[dict[str, Any]]:
    """n rules for graph g, dport 1..n."""
    return [{"graph": "g", "priority": 0, "proto": proto, "dport": i + 1} for i in range(n)]


def with_rules(tmp_path: Path, proto: str = "tcp", n: int = 500) -> tuple[
        Orchestrator, FakeRunner, FakeSluiced, list[str]]:
    """A node running GRAPH with its match (rule 1001) and n more rules (1002...),
    as the launcher added them; sluiced's next rule id is 2001."""
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH], rules=many(proto, n))
    for i, r in enumerate(orch.dep.rule_params()):
        add_rule(runner, sluiced, r, 1001 + i)
    sluiced.rule_id = 2000
    return orch, runner, sluiced, lines


def logged(tmp_path: Path) -> list[str]:
    """orchestrator.log without its time stamps."""
    return [ln.split(" ", 1)[1] for ln in (tmp_path / "orchestrator.log").read_text()
            .splitlines()]


def test_apply_adds_and_removes_many_rules_in_one_call_each(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    new = dep_of(graphs=[GRAPH], rules=many("udp"))
    out = orch.apply(new)
    assert sluiced.calls == [("rule.remove", {"ids": list(range(1002, 1502))}),
                             ("rule.add", {"rules": many("udp")})]
    assert out == (
        [f"rule: {1002 + i} removed (tcp dport {i + 1} -> graph g)" for i in range(500)]
        + [f"rule: {2001 + i} added (priority 0, udp dport {i + 1} -> graph g)"
           for i in range(500)])
    assert lines == out and logged(tmp_path) == out
    assert runner.rules == [(UDP, 1001), *[(r, 2001 + i) for i, r in
                                           enumerate(many("udp"))]]
    assert sluiced.table == {rid: r for r, rid in runner.rules}
    # a classifier build of hundreds of rules may take seconds: waited for longer
    assert sluiced.waited == {"rule.remove": rule_build_seconds(501),
                              "rule.add": rule_build_seconds(501)}
    assert sluiced.timeout == 5.0
    sluiced.calls.clear()
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]
    assert sluiced.calls == []


def test_a_refused_batch_names_its_rule_and_is_undone_as_a_refused_rule_was(
        tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.refuse_when.append(("rule.add", {"proto": "udp", "dport": 250},
                                "no port named 'lan' (ports: in, out)"))
    new = dep_of(graphs=[GRAPH], rules=many("udp"))
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    undone = [f"rule {1002 + i} removed (tcp dport {i + 1} -> graph g): added again as rule "
              f"{2001 + i}" for i in reversed(range(500))]  # newest first
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the rule (priority 0, udp dport 250 -> graph g): no port "
        "named 'lan' (ports: in, out)",
        UNDONE,
        *[f"  undone: {u}" for u in undone]]
    # one call each: the removal, the refused batch, the removed rules added again
    assert sluiced.calls == [("rule.remove", {"ids": list(range(1002, 1502))}),
                             ("rule.add", {"rules": many("udp")}),
                             ("rule.add", {"rules": many("tcp")})]
    assert [ln for ln in lines if ln.startswith("undo")] == [f"undo: {u}" for u in undone]
    assert [ln for ln in logged(tmp_path) if ln.startswith("undo")] == \
        [f"undo: {u}" for u in undone]
    # the same rules in their old places, under new ids
    assert runner.rules == [(UDP, 1001), *[(r, 2001 + i) for i, r in
                                           enumerate(many("tcp"))]]
    assert [r for r, _ in runner.rules] == [r for r, _ in before]
    assert sluiced.table == {rid: r for r, rid in runner.rules}
    assert orch.dep.source == "d.yaml" and not orch.resync
    # the next apply removes them by their new ids
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    out = orch.apply(new)
    assert out[0] == "rule: 2001 removed (tcp dport 1 -> graph g)"
    assert out[500] == "rule: 2501 added (priority 0, udp dport 1 -> graph g)"
    assert sluiced.calls == [("rule.remove", {"ids": list(range(2001, 2501))}),
                             ("rule.add", {"rules": many("udp")})]
    assert sluiced.table == {rid: r for r, rid in runner.rules} and len(sluiced.table) == 501


def test_a_batch_refused_whole_says_how_many_rules(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.max_rules = 600
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp") + many("udp"),
                          chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the 500 new rules: 500 rules would make 1001, more "
        "than --max-rules 600 (501 in use): remove some or raise --max-rules",
        UNDONE,
        "  undone: chain fwd -> drop: back to fwd -> port:out"]
    assert [m for m, _ in sluiced.calls] == ["chain.set", "rule.add", "chain.set"]
    assert runner.rules == before and sluiced.table == {rid: r for r, rid in before}


def test_a_refusal_at_the_first_step_says_nothing_had_changed(tmp_path: Path) -> None:
    """As against a real node (4100 new rules, --max-rules 4096): the line no
    longer ends with a colon and a list of nothing."""
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.max_rules = 600
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp") + many("udp")))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the 500 new rules: 500 rules would make 1001, more "
        "than --max-rules 600 (501 in use): remove some or raise --max-rules",
        "the apply was undone: d.yaml runs as before; fix d2.yaml and apply it again (it had "
        "changed nothing yet)"]
    assert [m for m, _ in sluiced.calls] == ["rule.add"]
    assert runner.rules == before


def test_rules_gone_from_sluiced_are_left_out_of_the_removal(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path, n=3)
    del sluiced.table[1003]  # `sluice rule remove 1003`
    out = orch.apply(dep_of(graphs=[GRAPH]))
    assert sluiced.calls == [("rule.remove", {"ids": [1002, 1003, 1004]}),
                             ("rule.list", {"offset": 0, "limit": 10000}),
                             ("rule.remove", {"ids": [1002, 1004]})]
    assert out[:3] == [f"rule: {1002 + i} removed (tcp dport {i + 1} -> graph g)"
                       for i in range(3)]
    assert runner.rules == [(UDP, 1001)] and sluiced.table == {1001: UDP}


def test_a_refused_removal_of_rules_sluiced_has_is_undone(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path, n=2)
    before = list(runner.rules)
    sluiced.refuse["rule.remove"] = "rules: out of memory"
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[{**GRAPH, "nodes": {"fwd": ["drop"]}}]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of rules 1002 and 1003: rules: out of memory",
        UNDONE,
        "  undone: graph g changed (version 2): old graph applied again (version 2)"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "rule.remove", "rule.list",
                                             "graph.apply"]
    assert runner.rules == before and sluiced.table == {rid: r for r, rid in before}


def test_an_undo_of_a_batch_that_fails_names_each_rule_and_the_next_apply_removes_them(
        tmp_path: Path) -> None:
    h = {"name": "h", "nodes": {"fwd": ["port:out"]}}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH, h])
    add_rule(runner, sluiced, UDP, 7)
    sluiced.refuse_when.append(("graph.remove", {"name": "h"}, "graph h is in use"))
    sluiced.lose.add("rule.remove")
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp", 3)))
    why = "no answer: connection to t.sock lost"
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of graph h: graph h is in use",
        IN_PART,
        *[f"  not undone: rule {rid} added (priority 0, tcp dport {rid - 10} -> graph g): "
          f"{why}" for rid in (13, 12, 11)]]
    assert [ln for ln in lines if ln.startswith("undo")] == [
        f"undo-failed: rule {rid} added (priority 0, tcp dport {rid - 10} -> graph g): {why}"
        for rid in (13, 12, 11)]
    assert sluiced.calls[-1] == ("rule.remove", {"ids": [11, 12, 13]})
    assert orch.resync and runner.rules == [(UDP, 7), *[(r, 11 + i) for i, r in
                                                        enumerate(many("tcp", 3))]]
    # the running file again: the rules the apply left go, in one call
    sluiced.lose.clear()
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    out = orch.apply(Deployment.from_dict({**BASE, "graphs": [GRAPH, h]}, source="d.yaml",
                                          check_env=False))
    assert out == ["graph: g pushed again (version 2)", "graph: h pushed again (version 2)",
                   "chain: fwd -> port:out (pushed again)",
                   *[f"rule: {rid} removed (tcp dport {rid - 10} -> graph g)"
                     for rid in (11, 12, 13)]]
    assert sluiced.calls[-1] == ("rule.remove", {"ids": [11, 12, 13]})
    assert runner.rules == [(UDP, 7)] and sluiced.table == {7: UDP} and not orch.resync


def test_an_undo_sluiced_refuses_is_reported_and_the_next_apply_pushes_all(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = orch.dep
    sluiced.refuse["chain.set"] = "no such hop"
    sluiced.refuse["graph.remove"] = "graph g is busy"
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the chain (fwd -> drop): no such hop",
        IN_PART,
        "  not undone: graph g added (version 2): sluiced refused it: graph g is busy"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "graph.remove"]
    assert lines[-1] == "undo-failed: graph g added (version 2): sluiced refused it: graph g " \
                        "is busy"
    assert orch.dep is old and orch.resync and orch.stale_graphs == {"g"}
    assert list(sluiced.graphs) == ["g"]
    # the running file again: not "nothing to change", the chain and graphs are pushed
    del sluiced.refuse["chain.set"], sluiced.refuse["graph.remove"]
    sluiced.calls.clear()
    running = Deployment.from_dict(BASE, source="d.yaml", check_env=False)
    assert orch.apply(running) == [
        "chain: fwd -> port:out (pushed again)",
        "graph: g removed (left by an apply that could not be undone)"]
    assert sluiced.calls == [("chain.set", {"hops": ["fwd", "port:out"]}),
                             ("graph.remove", {"name": "g"})]
    assert sluiced.graphs == {} and not orch.resync and orch.stale_graphs == set()
    assert orch.apply(running) == ["apply: nothing to change: d.yaml is what runs"]


def test_a_step_without_answer_is_undone_and_the_next_apply_pushes_all(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH])
    add_rule(runner, sluiced, {"graph": "g", "priority": 0, "proto": "udp"}, 7)
    sluiced.lose.add("chain.set")
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[{**GRAPH, "nodes": {"fwd": ["drop"]}}],
                          chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced did not answer about the chain (fwd -> drop), so it may or may "
        "not have been made: connection to t.sock lost",
        "the apply was undone and the NFs run as d.yaml says, but sluiced's graphs, chain "
        "and rules may not; the next `sluice apply` (of either file) pushes them all again:",
        "  undone: graph g changed (version 2): old graph applied again (version 2)"]
    assert sluiced.graphs["g"]["nodes"] == {"fwd": ["port:out"]}
    assert orch.resync and orch.stale_graphs == set()
    sluiced.lose.clear()
    sluiced.calls.clear()
    assert orch.apply(Deployment.from_dict({**BASE, "graphs": [GRAPH]}, source="d.yaml",
                                           check_env=False)) == [
        "graph: g pushed again (version 2)", "chain: fwd -> port:out (pushed again)"]
    assert sluiced.calls == [
        ("graph.apply", {"name": "g", "entry": "fwd", "nodes": {"fwd": ["port:out"]}}),
        ("chain.set", {"hops": ["fwd", "port:out"]})]
    assert not orch.resync
