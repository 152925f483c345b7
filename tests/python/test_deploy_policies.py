"""graph_policies: policies in a deployment file, compiled at load into
graphs that are checked, described and applied like those of graphs:."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from orchestrator_fakes import BASE, make

from sluice.core.deploy import Deployment, DeploymentError, load_graphs
from sluice.core.graph import GraphError, to_rpc

PORTS = [{"name": "in", "device": "net_null0"}, {"name": "out", "device": "net_null1"}]
NFS = [{"name": "fw", "program": "sluice-firewall", "service": "fw"},
       {"name": "mon", "program": "sluice-monitor", "service": "monitor"},
       {"name": "nat", "program": "build/nfs/nat/sluice-nat", "service": "nat"}]
EDGE = {"name": "edge", "match": {"dst": "192.168.0.0/24"}, "nfs": ["fw", "monitor", "nat"],
        "order": [["fw", "before", "nat"]], "priority": [["fw", "monitor"]]}


def dep(**changes: Any) -> Deployment:
    data = {"ports": PORTS, "nfs": NFS, "chain": ["fw", "port:out"],
            "graph_policies": [EDGE], **changes}
    return Deployment.from_dict(data, source="p.yaml", check_env=False)


def issues(**changes: Any) -> list[str]:
    with pytest.raises(DeploymentError) as e:
        dep(**changes)
    return e.value.issues


def test_a_policy_compiles_to_a_graph_with_its_group_and_rule() -> None:
    d = dep()
    assert d.graphs == []
    (g,) = d.all_graphs()
    assert g.name == "edge" and g.entry_node() == "parallel-1"
    assert g.nodes == {"parallel-1": ["nat"], "nat": ["port:out"]}
    assert g.groups["parallel-1"].members == ["fw", "monitor"]
    assert d.rule_params() == [{"graph": "edge", "priority": 0, "dst": "192.168.0.0/24"}]
    # sluiced gets the group flattened to its members in sequence
    assert to_rpc(g) == {"name": "edge", "entry": "fw", "nodes": {
        "fw": ["monitor"], "monitor": ["nat"], "nat": ["port:out"]}}
    assert d.describe().endswith(", policy graph(s) edge (1 parallel group(s)), 1 rule(s)")


def test_a_service_takes_the_declarations_of_its_program() -> None:
    # fw and nat are services named otherwise than the NF kinds of the table
    table = dep().declaration_table()
    assert table["fw"] == table["firewall"] and table["nat"] == table["nat"]
    assert "forward" in table and "mon" not in table


def test_graphs_come_first_then_the_policies_graphs_and_rules_may_name_them() -> None:
    d = dep(graphs=[{"name": "g", "nodes": {"fw": ["port:out"]}}],
            rules=[{"graph": "edge", "proto": "udp"}])
    assert [g.name for g in d.all_graphs()] == ["g", "edge"]
    assert d.rule_params()[-1] == {"graph": "edge", "priority": 0, "proto": "udp"}
    assert d.graph_where(0) == "graphs[0]" and d.graph_where(1) == "graph_policies[0]"


def test_a_bad_policy_is_named_by_its_index_and_key() -> None:
    bad = {**EDGE, "order": [["fw", "before", "nta"]]}
    assert issues(graph_policies=[EDGE, bad, 5, {"nfs": ["fw"]}]) == [
        "p.yaml: graph_policies[1].order[0]: policy 'edge': order [fw, before, nta]: 'nta' is "
        "not one of the policy's nfs (fw, monitor, nat); did you mean 'nat'?",
        "p.yaml: graph_policies[2]: expected a mapping with keys name, match, nfs, order, "
        "priority, position, exit, hops, declare; got a number (5)",
        "p.yaml: graph_policies[3].name: missing: this key is required (see docs/graphs.md)"]


def test_an_nf_without_declaration_is_refused_with_the_known_ones() -> None:
    (m,) = issues(graph_policies=[{"name": "x", "nfs": ["fw", "mon"]}])
    assert m.startswith("p.yaml: graph_policies[0].nfs[1]: policy 'x': 'mon' is not an NF "
                        "with a declaration (known: ")
    assert "declare its operations under declare: mon:" in m


def test_the_compiled_graphs_problems_name_the_policy() -> None:
    assert issues(graphs=[{"name": "edge", "nodes": {"fw": ["port:out"]}}],
                  graph_policies=[{**EDGE, "exit": "port:wan"},
                                  {"name": "p2", "nfs": ["fw", "ids"]}]) == [
        "p.yaml: graph_policies[0].name: graph 'edge' is already declared at graphs[0]: give "
        "each graph its own name",
        "p.yaml: graph_policies[0]: its compiled graph's nodes.nat[0]: graph 'edge': node "
        "'nat': no port named 'wan' (ports: in, out)",
        "p.yaml: graph_policies[1]: its compiled graph's nodes.ids: graph 'p2': node 'ids': "
        "no NF in nfs has service 'ids' (services: fw, monitor, nat): add an NF with service "
        "'ids' or fix the name"]


def test_two_policies_of_one_name_are_refused() -> None:
    assert issues(graph_policies=[EDGE, EDGE]) == [
        "p.yaml: graph_policies[1].name: graph 'edge' is already declared at "
        "graph_policies[0]: give each graph its own name"]


def test_graph_apply_of_a_deployment_takes_its_policies_graphs(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text(yaml.safe_dump({"ports": PORTS, "nfs": NFS, "chain": ["fw", "port:out"],
                                 "graph_policies": [EDGE]}))
    gs = load_graphs(f)
    assert [g.name for g in gs.graphs] == ["edge"] and gs.rule_params() == dep().rule_params()
    f.write_text(yaml.safe_dump({"ports": PORTS, "nfs": NFS, "chain": ["fw", "port:out"],
                                 "graph_policies": [{"nfs": ["fw"]}]}))
    with pytest.raises(GraphError) as e:
        load_graphs(f)
    assert e.value.issues == [f"{f}: graph_policies[0].name: missing: this key is required "
                              f"(see docs/graphs.md)"]


def test_sluice_apply_pushes_a_new_policys_graph_and_rule(tmp_path: Path) -> None:
    orch, _runner, sluiced, _clock, _lines = make(tmp_path)
    new = Deployment.from_dict({**BASE, "graph_policies": [
        {"name": "p", "match": {"proto": "udp"}, "nfs": ["fwd"], "declare": {"fwd": {}}}]},
        source="d2.yaml", check_env=False)
    out = orch.apply(new)
    assert out == ["graph: p added (version 2)",
                   "rule: 11 added (priority 0, udp -> graph p)"]
    assert sluiced.calls == [
        ("graph.apply", {"name": "p", "entry": "fwd", "nodes": {"fwd": ["port:out"]}}),
        ("rule.add", {"rules": [{"graph": "p", "priority": 0, "proto": "udp"}]})]
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]


def test_sluice_apply_removes_the_graph_of_a_policy_gone_from_the_file(tmp_path: Path) -> None:
    policy = {"name": "p", "match": {"proto": "udp"}, "nfs": ["fwd"], "declare": {"fwd": {}}}
    orch, _runner, sluiced, _clock, _lines = make(tmp_path, graph_policies=[policy])
    out = orch.apply(Deployment.from_dict(BASE, source="d2.yaml", check_env=False))
    assert out == ["graph: p removed (0 rule(s) with it)"]
    assert ("graph.remove", {"name": "p"}) in sluiced.calls


def test_the_example_of_docs_deployment_md_compiles_as_it_says() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "deployment.md").read_text()
    section = doc.split("### `graph_policies`", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    d = Deployment.from_dict({"ports": PORTS, **yaml.safe_load(block)}, source="doc",
                             check_env=False)
    (g,) = d.all_graphs()
    assert g.groups["parallel-1"].members == ["fw", "monitor"]
    assert g.nodes == {"parallel-1": ["nat"], "nat": ["port:out"]}
    assert d.rule_params() == [{"graph": "edge", "priority": 0, "dst": "192.168.0.0/24"}]
    assert "policy graph(s) edge (1 parallel group(s))" in d.describe()
    assert "`policy graph(s) edge (1 parallel group(s))`" in " ".join(section.split())
