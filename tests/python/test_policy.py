"""The policy compiler (issue 30; sluice.core.policy and sluice.core.parallel):
OpenPATH's tables and examples, the compilation of issue 30's policy, every
error by its text, parallel groups in graph files, and `sluice graph compile`.

OpenPATH is ../shared/seeds/004_bb693928e990b513.txt (§5.1 templates, §5.2
dependency analysis and Fig. 8, Table 2 operations, Table 3 capabilities);
SDNFV is 003_e2773ee41b6b1822.txt (§4.2: verdicts merged by priority)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.graph import GraphError, flatten, parse_graphs, to_rpc
from sluice.core.parallel import (
    COPY,
    DECLARATIONS,
    OPENPATH_CAPABILITIES,
    OPENPATH_OPERATIONS,
    PARALLEL,
    SEQUENTIAL,
    Ops,
    analyse,
    compile_data,
    group_nodes,
    openpath_parallel,
)
from sluice.core.policy import PolicyError

ROOT = Path(__file__).resolve().parents[2]
EDGE = ROOT / "examples" / "policies" / "edge.yaml"
runner = CliRunner()


def issues(policy: dict[str, Any]) -> list[str]:
    """The problems of a policy named edge in p.yaml."""
    with pytest.raises(PolicyError) as e:
        compile_data({"policy": {"name": "edge", **policy}}, "p.yaml")
    return e.value.issues


# -- OpenPATH's tables, verbatim ----------------------------------------------------

def test_table3_capabilities_verbatim() -> None:
    """Table 3: rows are the first VNF's action, columns the second's."""
    rows = {"Read Packet": "YYY", "Write Packet": "NYY", "Modify Flow": "NNN"}
    cols = ["Read Packet", "Write Packet", "Modify Flow"]
    for row, cells in rows.items():
        for col, cell in zip(cols, cells, strict=True):
            assert OPENPATH_CAPABILITIES[row, col] is (cell == "Y"), (row, col)


def test_table2_pairs_by_openpath_fig8() -> None:
    """P(m, m+1) of Fig. 8 for Table 2's VNFs: a reader then a reader or a
    writer is parallel; a writer then a reader, or a flow modifier first, is not."""
    op = OPENPATH_OPERATIONS
    ids, mon = op["Intrusion Detection System (IDS)"], op["Traffic Monitor"]
    nat, fw = op["Network Address Translation (NAT)"], op["Firewall"]
    shaper = op["WAN Optimization and Bandwidth Shaper"]
    vpn = op["Virtual Private Networking (VPN)"]
    assert openpath_parallel(ids, mon)          # R, R
    assert openpath_parallel(mon, nat)          # R, R/W
    assert not openpath_parallel(nat, mon)      # W then R
    assert not openpath_parallel(nat, shaper)   # W then R (and W, W: Y)
    assert not openpath_parallel(fw, ids)       # Modify Flow first
    assert openpath_parallel(ids, fw)           # R then R and Modify Flow
    assert not openpath_parallel(vpn, mon)
    assert openpath_parallel(op["Gateway"], vpn)  # no packet operation: nothing conflicts


# -- the analysis per region: agreement with Table 3, and the two refinements --------

R = Ops.of(("l3_addr",))
W = Ops.of(("l3_addr",), ("l3_addr",))


@pytest.mark.parametrize("a, b, mode", [
    (R, R, PARALLEL),                          # Read, Read: Y
    (R, W, COPY),                              # Read then Write: Y, the writer on a copy
    (W, R, SEQUENTIAL),                        # Write then Read: N
    (R, Ops.of(("l3_addr",), routes=True), PARALLEL),  # Read then Modify Flow: Y
    (W, Ops.of(("l3_addr",), routes=True), SEQUENTIAL),  # it reads what W writes
    (Ops.of(("payload",), ("l2",)), Ops.of(("l3_addr",), routes=True), COPY),  # W, Flow: Y
    (Ops.of(routes=True), W, SEQUENTIAL),      # Modify Flow then Write: N
])
def test_pairs_agree_with_table3(a: Ops, b: Ops, mode: str) -> None:
    assert analyse("a", a, "b", b).mode == mode


def test_write_write_same_region_is_not_parallel() -> None:
    """Table 3 says Y; per region it would lose a writer's bytes at the join."""
    p = analyse("shaper", DECLARATIONS["shaper"], "nat", DECLARATIONS["nat"])
    assert p.mode == SEQUENTIAL
    assert p.reasons == ("nat reads l3_other, which shaper writes (read after write: Table 3 N)",)
    a, b = Ops.of((), ("l3_other",)), Ops.of((), ("l3_other", "l4_other"))
    assert analyse("a", a, "b", b).text() == (
        "a, b: not parallel: both write l3_other: the join takes a region from one writer, "
        "so the other's bytes would be lost (Table 3 says Y for Write then Write; per region, "
        "Sluice keeps them in sequence)")
    # two writers of disjoint fields: parallel, each with a copy of its own
    c = Ops.of((), ("l2",))
    assert analyse("a", a, "c", c).mode == COPY


def test_dropper_first_is_parallel_by_merge_order() -> None:
    """Table 3's Modify Flow row is N; a drop merges in chain order (SDNFV §4.2)."""
    p = analyse("firewall", DECLARATIONS["firewall"], "monitor", DECLARATIONS["monitor"])
    assert p.text() == (
        "firewall, monitor: parallel, no copy: neither writes: both read the same packet "
        "(Table 3: Read then Read: Y); firewall drops: its verdict wins the merge over "
        "monitor's, as in the chain (Table 3 says N for Modify Flow first; monitor also sees "
        "the packets firewall drops: monitor has no history, so only its counters notice)")
    ids = DECLARATIONS["ids"]
    assert analyse("firewall", DECLARATIONS["firewall"], "ids", ids).text() == (
        "firewall, ids: not parallel: firewall drops packets that ids would see in parallel, "
        "and ids has history (its verdicts depend on the packets it saw before): they could "
        "differ from the chain's (Table 3: Modify Flow first: N); priority [firewall, ids] "
        "runs them in parallel all the same")
    assert analyse("firewall", DECLARATIONS["firewall"], "ids", ids, "priority[0]").mode == \
        PARALLEL
    p = analyse("ids", DECLARATIONS["ids"], "nat", DECLARATIONS["nat"])
    assert p.text() == (
        "ids, nat: not parallel: ids may route the packet away (TO, OUT or a flow request) "
        "and nat writes l3_addr, l3_other, l4_ports, l4_other, payload: a packet ids sends "
        "away would leave with nat's writes (Table 3: Modify Flow then Write: N)")


def test_header_changer_conflicts_with_any_reader() -> None:
    p = analyse("vpn", DECLARATIONS["vpn"], "monitor", DECLARATIONS["monitor"])
    assert p.mode == SEQUENTIAL
    assert p.reasons[0].endswith("; vpn adds or removes headers, so monitor's regions move")
    assert DECLARATIONS["vpn"].copy_regions() == ["all"]


def test_group_needs_every_pair_not_only_adjacent_ones() -> None:
    """OpenPATH's P(m, m+1) looks at adjacent pairs; a, b and b, c parallel do
    not make a, b, c a group when c reads what a writes (§4's matrix)."""
    ops = {"a": Ops.of((), ("l3_addr",)), "b": Ops.of(("payload",)), "c": Ops.of(("l3_addr",))}
    assert analyse("a", ops["a"], "b", ops["b"]).mode == COPY
    assert analyse("b", ops["b"], "c", ops["c"]).mode == PARALLEL
    nodes, breaks = group_nodes(("a", "b", "c"), ops)
    assert nodes == [("a", "b"), ("c",)]
    assert breaks["c"].a == "a" and breaks["c"].mode == SEQUENTIAL


def test_every_sample_nf_is_declared() -> None:
    names = {p.name for p in (ROOT / "nfs").iterdir() if (p / "README.md").exists()}
    names.discard("speedtest")  # a benchmark, not an NF of a service
    assert names <= set(DECLARATIONS)
    assert set(DECLARATIONS) >= {"forward", "firewall", "monitor", "flowclass", "ddos-detect",
                                 "scrubber", "nat", "l3fwd", "lb", "vpn", "ids", "sampler",
                                 "shaper", "dpi"}
    read_only = {n for n, o in DECLARATIONS.items() if not o.written()}
    assert read_only == {"forward", "firewall", "monitor", "flowclass", "ddos-detect",
                         "scrubber", "ids", "sampler", "dpi"}


# -- issue 30's example --------------------------------------------------------------

def edge() -> Any:
    return compile_data(yaml.safe_load(EDGE.read_text()), str(EDGE))


def test_edge_policy_compiles_to_a_group() -> None:
    c = edge()
    assert c.policy.chain == ("firewall", "ids", "monitor", "nat", "shaper")
    assert c.nodes == (("firewall", "ids", "monitor"), ("nat",), ("shaper",))
    assert [p.mode for p in c.pairs] == [PARALLEL, PARALLEL, COPY, SEQUENTIAL]
    g = c.to_json()["graph"]
    assert g == {
        "name": "edge", "entry": "parallel-1",
        "nodes": {"parallel-1": ["nat"], "nat": ["shaper"], "shaper": ["port:out"]},
        "groups": {"parallel-1": {"members": ["firewall", "ids", "monitor"], "copies": {},
                                  "merge": ["firewall", "ids", "monitor"]}},
        "match": [{"priority": 0, "dst": "192.168.0.0/24"}]}
    # the JSON's graph is a graph file's graph: it checks, and applies flattened
    gs = parse_graphs({"graphs": [g]}, "compiled")
    assert to_rpc(gs.graphs[0]) == {
        "name": "edge", "entry": "firewall",
        "nodes": {"firewall": ["ids"], "ids": ["monitor"], "monitor": ["nat"],
                  "nat": ["shaper"], "shaper": ["port:out"]}}
    assert gs.rule_params() == [{"graph": "edge", "priority": 0, "dst": "192.168.0.0/24"}]


def test_edge_explain_says_why_for_every_adjacent_pair() -> None:
    lines = edge().explain()
    assert lines[0] == "policy edge: chain firewall -> ids -> monitor -> nat -> shaper"
    pairs = [x for x in lines if x.startswith(("firewall, ids:", "ids, monitor:",
                                              "monitor, nat:", "nat, shaper:"))]
    assert len(pairs) == 4
    assert pairs[2] == (
        "monitor, nat: parallel with a copy: nat writes l3_addr, l3_other, l4_ports, which "
        "monitor reads: nat works on a copy (write after read: Table 3 Y); but nat cannot "
        "join the group: firewall, nat: not parallel: firewall drops packets that nat would "
        "see in parallel, and nat has history (its verdicts depend on the packets it saw "
        "before): they could differ from the chain's (Table 3: Modify Flow first: N); "
        "priority [firewall, nat] runs them in parallel all the same")
    assert pairs[3] == ("nat, shaper: not parallel: shaper reads l3_addr, l3_other, l4_ports, "
                        "which nat writes (read after write: Table 3 N)")
    assert lines[-5:] == [
        "graph edge: entry parallel-1, 3 node(s), 1 parallel group(s)",
        "  parallel-1 = [firewall | ids | monitor] (merge firewall > ids > monitor; no copy)"
        " -> nat",
        "  nat -> shaper",
        "  shaper -> port:out",
        "rule: dst 192.168.0.0/24 (priority 0) -> graph edge"]


def test_copy_members_and_declare_override() -> None:
    c = compile_data({"policy": {
        "name": "rw", "nfs": ["monitor", "marker", "tagger"], "exit": "drop",
        "declare": {"marker": {"reads": ["l3_addr"], "writes": ["l3_other"]},
                    "tagger": {"writes": ["l2"]}}}})
    assert c.nodes == (("monitor", "marker", "tagger"),)
    grp = c.graph.groups["parallel-1"]
    assert grp.copies == {"marker": ["l3_other"], "tagger": ["l2"]}
    assert c.lines()[1] == ("  parallel-1 = [monitor | marker | tagger] (merge monitor > "
                            "marker > tagger; marker copies l3_other; tagger copies l2) -> drop")


def test_chain_order_from_templates() -> None:
    """Free NFs keep the order of nfs; Order, Position and Priority move them."""
    c = compile_data({"policy": {
        "name": "o", "nfs": ["monitor", "nat", "firewall", "ids", "shaper"],
        "order": [["shaper", "after", "monitor"]], "position": [["firewall", "first"],
                                                               ["nat", "last"]],
        "priority": [["shaper", "ids"]]}})
    assert c.policy.chain == ("firewall", "monitor", "shaper", "ids", "nat")


# -- errors, by their text -----------------------------------------------------------

@pytest.mark.parametrize("policy, expected", [
    ({"nfs": ["firewall", "nat", "firewall"]},
     ["p.yaml: policy.nfs[2]: policy 'edge': 'firewall' is listed twice (first at nfs[0]): "
      "list each NF once"]),
    ({"nfs": ["firewall", "idss"]},
     ["p.yaml: policy.nfs[1]: policy 'edge': 'idss' is not an NF with a declaration (known: "
      "forward, firewall, monitor, flowclass, ddos-detect, scrubber, nat, l3fwd, lb, vpn, "
      "ids, sampler, shaper, dpi): fix the name, or declare its operations under declare: "
      "idss: {reads, writes, drops, routes, history}; did you mean 'ids'?"]),
    ({"nfs": []}, ["p.yaml: policy.nfs: policy 'edge': empty: list the NFs of the service, "
                   "e.g. [firewall, monitor]"]),
    ({"nfs": ["firewall", "nat"], "order": [["firewall", "before", "natt"]]},
     ["p.yaml: policy.order[0]: policy 'edge': order [firewall, before, natt]: 'natt' is not "
      "one of the policy's nfs (firewall, nat); did you mean 'nat'?"]),
    ({"nfs": ["firewall", "nat"], "order": [["firewall", "befre", "nat"]]},
     ["p.yaml: policy.order[0]: policy 'edge': order [firewall, befre, nat]: 'befre' is not "
      "before or after; did you mean 'before'?"]),
    ({"nfs": ["firewall", "nat"], "order": [["nat", "after", "nat"]]},
     ["p.yaml: policy.order[0]: policy 'edge': order [nat, after, nat]: an NF cannot be "
      "after itself: name two NFs"]),
    ({"nfs": ["firewall", "nat"], "order": [["nat", "firewall"]], "priority": ["nat"],
      "position": [["nat", "middle"]]},
     ["p.yaml: policy.order[0]: policy 'edge': expected [NF, before|after, NF], got a list "
      "of 2",
      "p.yaml: policy.priority[0]: policy 'edge': expected [NF, NF] (the first one's verdict "
      "wins), got a string ('nat')",
      "p.yaml: policy.position[0]: policy 'edge': position [nat, middle]: 'middle' is not "
      "first or last"]),
    ({"nfs": ["firewall", "nat"], "priority": [["nat", "nat"]]},
     ["p.yaml: policy.priority[0]: policy 'edge': priority [nat, nat]: an NF cannot win over "
      "itself: name two NFs"]),
    ({"nfs": ["firewall", "nat", "ids"], "position": [["firewall", "first"],
                                                      ["ids", "first"]]},
     ["p.yaml: policy.position[1]: policy 'edge': position [ids, first]: position[0] "
      "(firewall first) already puts firewall first: only one NF can be first"]),
    ({"nfs": ["firewall", "nat"], "position": [["nat", "first"], ["nat", "last"]]},
     ["p.yaml: policy.position[1]: policy 'edge': position [nat, last]: position[0] (nat "
      "first) puts nat first: an NF cannot be both first and last"]),
    ({"nfs": ["firewall", "nat", "shaper"],
      "order": [["firewall", "before", "nat"], ["nat", "before", "shaper"],
                ["firewall", "after", "shaper"]]},
     ["p.yaml: policy.order[0]: policy 'edge': the templates contradict each other: order[0] "
      "(firewall before nat), order[1] (nat before shaper), order[2] (shaper before firewall) "
      "make a cycle firewall -> nat -> shaper -> firewall: remove or reverse one of them"]),
    ({"nfs": ["firewall", "ids"], "order": [["ids", "before", "firewall"]],
      "priority": [["firewall", "ids"]]},
     ["p.yaml: policy.order[0]: policy 'edge': the templates contradict each other: "
      "priority[0] (firewall > ids: firewall's verdict wins), order[0] (ids before firewall) "
      "make a cycle firewall -> ids -> firewall (a priority puts the NF whose verdict wins "
      "before the other in the chain): remove or reverse one of them"]),
    ({"nfs": ["firewall", "nat"], "order": [["nat", "before", "firewall"]],
      "position": [["firewall", "first"]]},
     ["p.yaml: policy.order[0]: policy 'edge': the templates contradict each other: "
      "position[0] (firewall first), order[0] (nat before firewall) make a cycle firewall -> "
      "nat -> firewall: remove or reverse one of them"]),
    ({"nfs": ["firewall", "mine"],
      "declare": {"mine": {"reads": ["l4port"]}, "other": {}}},
     ["p.yaml: policy.declare.mine.reads[0]: policy 'edge': 'l4port' is not a region "
      "(regions: l2, l3_addr, l3_other, l4_ports, l4_other, payload); did you mean "
      "'l4_ports'?",
      "p.yaml: policy.declare.other: policy 'edge': 'other' is not one of the policy's nfs "
      "(firewall, mine): add it to nfs or remove its declaration"]),
    ({"nfs": ["firewall"], "exit": "out"},
     ["p.yaml: policy.exit: policy 'edge': 'out' is not port:NAME or drop: it is where the "
      "last NF of the chain sends packets"]),
    ({"nfs": ["firewall"], "match": {"dst": "10.0.0.1/8"}},
     ["p.yaml: policy.match[0].dst: policy 'edge': '10.0.0.1/8' has bits set after the "
      "prefix length: write 10.0.0.0/8 (or the address alone for one host)"]),
    ({"nfs": ["firewall"], "match": {"dprt": 5}},
     ["p.yaml: policy.match[0].dprt: unknown key (known keys here: priority, proto, src, "
      "dst, sport, dport, in_port); did you mean 'dport'?"]),
    ({"nfs": ["firewall"], "orders": []},
     ["p.yaml: policy.orders: unknown key (known keys here: name, match, nfs, order, "
      "priority, position, exit, hops, declare); did you mean 'order'?"]),
    ({"nfs": ["x"], "declare": {"x": {"reads": "l2", "drops": "yes"}}},
     ["p.yaml: policy.declare.x.reads: expected a list, got a string ('l2')",
      "p.yaml: policy.declare.x.drops: expected true or false, got a string ('yes')"]),
])
def test_policy_errors(policy: dict[str, Any], expected: list[str]) -> None:
    assert issues(policy) == expected


def test_policy_name_and_file_shape_errors() -> None:
    assert issues({"nfs": ["firewall"], "name": "9x"}) == [
        "p.yaml: policy.name: policy '9x': '9x' is not a valid name: use 1-31 letters, "
        "digits, '_', '.' or '-', starting with a letter (it names the graph)"]
    for data, text in [(None, "got nothing"), ([], "got a list")]:
        with pytest.raises(PolicyError) as e:
            compile_data(data, "p.yaml")
        assert str(e.value) == (f"p.yaml: expected a mapping with the key policy (name, "
                                f"match, nfs, order, priority, position, exit, hops, declare); "
                                f"{text} (see docs/graphs.md)")
    with pytest.raises(PolicyError) as e:
        compile_data({"polic": {}}, "p.yaml")
    assert str(e.value) == ("p.yaml: no policy: a policy file holds one under policy: (see "
                            "docs/graphs.md); did you mean 'policy'?")


# -- parallel groups in a graph file ---------------------------------------------------

def test_group_errors_in_a_graph_file() -> None:
    g = {"graphs": [{"name": "g", "nodes": {"p1": ["port:out"]}, "groups": {
        "p1": {"members": ["fw", "ids"], "copies": {"nat": ["l2"], "ids": ["l5"]},
               "merge": ["fw"]},
        "p3": {"members": ["ids"]}}}]}
    with pytest.raises(GraphError) as e:
        parse_graphs(g, "g.yaml")
    assert e.value.issues == [
        "g.yaml: graphs[0].groups.p1.copies.nat: graph 'g': group 'p1': 'nat' is not a member "
        "(members: fw, ids)",
        "g.yaml: graphs[0].groups.p1.copies.ids: graph 'g': group 'p1': 'l5' is not a region "
        "(regions: l2, l3_addr, l3_other, l4_ports, l4_other, payload, or all)",
        "g.yaml: graphs[0].groups.p1.merge: graph 'g': group 'p1': merge must list every "
        "member once (members: fw, ids)",
        "g.yaml: graphs[0].groups.p3: graph 'g': group 'p3' is not a node of this graph: list "
        "it under nodes with its next hops, or remove it",
        "g.yaml: graphs[0].groups.p3.members: graph 'g': group 'p3': a group needs at least 2 "
        "members, got 1: make a single NF a plain node",
        "g.yaml: graphs[0].groups.p3.members[0]: graph 'g': group 'p3': 'ids' is already a "
        "member of group 'p1': a service is in one group at most"]


def test_flatten_keeps_edges_into_and_out_of_groups() -> None:
    gs = parse_graphs({"graphs": [{"name": "g", "entry": "cls", "nodes": {
        "cls": ["par", "drop"], "par": ["nat", "port:b"], "nat": ["port:out"]},
        "groups": {"par": {"members": ["fw", "mon", "ids"]}}}]}, "g.yaml",
        services=["cls", "fw", "mon", "ids", "nat"])
    flat = flatten(gs.graphs[0])
    assert flat.entry == "cls" and not flat.groups
    assert dict(flat.nodes) == {"cls": ["fw", "drop"], "fw": ["mon", "port:b"],
                                "mon": ["ids", "port:b"], "ids": ["nat", "port:b"],
                                "nat": ["port:out"]}
    with pytest.raises(GraphError) as e:
        parse_graphs({"graphs": [{"name": "g", "nodes": {"par": ["port:out"]},
                                  "groups": {"par": {"members": ["fw", "mom"]}}}]},
                     "g.yaml", services=["fw", "mon"])
    assert e.value.issues == [
        "g.yaml: graphs[0].groups.par.members[1]: graph 'g': group 'par': no NF in nfs has "
        "service 'mom' (services: fw, mon); did you mean 'mon'?"]


# -- the command -----------------------------------------------------------------------

def test_cli_compile() -> None:
    res = runner.invoke(app, ["graph", "compile", str(EDGE)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == edge().lines()
    res = runner.invoke(app, ["graph", "compile", str(EDGE), "--explain"])
    assert res.exit_code == 0 and res.output.splitlines() == edge().explain()
    res = runner.invoke(app, ["graph", "compile", str(EDGE), "--json"])
    assert res.exit_code == 0
    out = json.loads(res.output)
    assert out["chain"] == ["firewall", "ids", "monitor", "nat", "shaper"]
    assert [p["mode"] for p in out["pairs"]] == ["parallel", "parallel", "copy", "sequential"]
    assert out["graph"]["groups"]["parallel-1"]["members"] == ["firewall", "ids", "monitor"]


def test_cli_compile_refuses_a_bad_policy(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("policy:\n  name: e\n  nfs: [firewall, nat]\n"
                 "  position: [[firewall, first], [nat, first]]\n")
    res = runner.invoke(app, ["graph", "compile", str(f)])
    assert res.exit_code == 1
    assert res.output.splitlines() == [
        f"{f}: policy.position[1]: policy 'e': position [nat, first]: position[0] (firewall "
        f"first) already puts firewall first: only one NF can be first"]
    res = runner.invoke(app, ["graph", "compile", str(tmp_path / "none.yaml")])
    assert res.exit_code == 1 and res.output.strip() == f"{tmp_path / 'none.yaml'}: no such file"


def test_the_messages_in_docs_graphs_md_are_real() -> None:
    """The policy and group messages docs/graphs.md shows are what the checks print."""
    doc = (ROOT / "docs" / "graphs.md").read_text()
    shown = [x for x in doc.splitlines() if x.startswith(("edge.yaml: ", "par.yaml: "))]
    assert len(shown) == 7
    made: list[str] = []
    for policy in ({"nfs": ["firewall", "idss"]},
                   {"nfs": ["firewall", "nat", "shaper"],
                    "order": [["firewall", "before", "nat"], ["nat", "before", "shaper"],
                              ["firewall", "after", "shaper"]]},
                   {"nfs": ["firewall", "ids"], "order": [["ids", "before", "firewall"]],
                    "priority": [["firewall", "ids"]]},
                   {"nfs": ["firewall", "nat", "ids"],
                    "position": [["firewall", "first"], ["ids", "first"]]},
                   {"nfs": ["firewall", "nat"], "order": [["firewall", "before", "natt"]]}):
        made += [x.replace("p.yaml: ", "edge.yaml: ", 1) for x in issues(policy)]
    with pytest.raises(GraphError) as e:
        parse_graphs({"graphs": [{"name": "g", "nodes": {"p1": ["p3"], "p3": ["drop"]},
                                  "groups": {"p1": {"members": ["a", "ids"],
                                                    "copies": {"ids": ["l5"]}},
                                             "p3": {"members": ["b"]}}}]}, "par.yaml")
    made += e.value.issues
    assert [x for x in shown if x not in made] == []
    explained = doc.split("$ sluice graph compile examples/policies/edge.yaml --explain\n")[1]
    lines = explained.split("```")[0].splitlines()
    assert lines[0] == edge().explain()[0] and set(lines[2:]) <= set(edge().explain())


FLAT_EDGE = {"name": "edge", "entry": "firewall",
             "nodes": {"firewall": ["ids"], "ids": ["monitor"], "monitor": ["nat"],
                       "nat": ["shaper"], "shaper": ["port:out"]}}


def test_graph_apply_sends_a_policy_and_a_group_flattened(tmp_path: Path) -> None:
    """`sluice graph apply` takes a policy file, or a graph file with groups
    (here the graph `--json` printed): sluiced is sent the sequence."""
    res = runner.invoke(app, ["graph", "apply", str(EDGE), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    calls = [{"method": "graph.apply", "params": FLAT_EDGE},
             {"method": "rule.add",
              "params": {"rules": [{"graph": "edge", "priority": 0, "dst": "192.168.0.0/24"}]}}]
    assert json.loads(res.output) == calls
    f = tmp_path / "compiled.yaml"
    f.write_text(yaml.safe_dump({"graphs": [edge().to_json()["graph"]]}))
    res = runner.invoke(app, ["graph", "apply", str(f), "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == calls
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy:\n  name: e\n  nfs: [firewall, firewall]\n")
    res = runner.invoke(app, ["graph", "apply", str(bad), "--dry-run"])
    assert res.exit_code == 1
    assert res.output.splitlines() == [
        f"{bad}: policy.nfs[1]: policy 'e': 'firewall' is listed twice (first at nfs[0]): list "
        f"each NF once"]


def test_hops_give_nfs_their_out_ports() -> None:
    """An NF that sends OUT (nat, l3fwd, lb) needs the port among its hops."""
    c = compile_data({"policy": {
        "name": "h", "nfs": ["monitor", "dpi", "nat"], "exit": "port:out",
        "hops": {"nat": ["port:in", "drop"], "dpi": ["drop"]}}})
    assert c.nodes == (("monitor", "dpi"), ("nat",))
    assert dict(c.graph.nodes) == {"parallel-1": ["nat", "drop"],
                                   "nat": ["port:out", "port:in", "drop"]}
    assert to_rpc(c.graph)["nodes"] == {"monitor": ["dpi", "drop"], "dpi": ["nat", "drop"],
                                        "nat": ["port:out", "port:in", "drop"]}
    assert issues({"nfs": ["nat"], "hops": {"nat": ["monitor"], "nta": []}}) == [
        "p.yaml: policy.hops.nat[0]: policy 'edge': 'monitor' is not port:NAME or drop: an "
        "NF's other next hops are ports (its OUT verdicts) or drop",
        "p.yaml: policy.hops.nta: policy 'edge': 'nta' is not one of the policy's nfs (nat); "
        "did you mean 'nat'?"]


def test_sdnfv_fig3_ddos_and_ids_share_the_packet() -> None:
    """SDNFV §3 (Fig. 3): "the DDoS and IDS services only examine packets ...
    it is safe to permit both NFs to analyze the same packet at the same time"."""
    c = compile_data({"policy": {"name": "anomaly", "nfs": ["ddos-detect", "ids"]}})
    assert c.nodes == (("ddos-detect", "ids"),)
    assert c.pairs[0].mode == PARALLEL
    assert c.graph.groups["parallel-1"].copies == {}
    # the other way round the IDS (it drops, and the detector's counts are
    # only messages) still shares the packet
    c = compile_data({"policy": {"name": "anomaly", "nfs": ["ids", "ddos-detect"]}})
    assert c.nodes == (("ids", "ddos-detect"),)
