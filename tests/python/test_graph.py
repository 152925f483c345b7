"""Service graphs and rules: the file format, every check with its exact
message (docs/graphs.md), the examples, and what sluiced is sent."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from sluice.core.deploy import Deployment, DeploymentError, load_deployment, load_graphs
from sluice.core.graph import (
    GraphError,
    GraphSpec,
    RuleSpec,
    format_match,
    match_params,
    parse_graphs,
    rule_params,
    same_rule,
    to_rpc,
    validate,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "graphs"

ANOMALY = """\
graphs:
  - name: anomaly
    entry: firewall
    nodes:
      firewall: [sampler, drop]
      sampler: [ids, ddos-detect]
      ids: [scrubber]
      ddos-detect: [scrubber]
      scrubber: ["port:out", drop]
    match:
      - {priority: 10, proto: udp, dst: 10.0.0.0/8, dport: 53, in_port: in}
"""


def issues(data: Any, **kw: Any) -> list[str]:
    with pytest.raises(GraphError) as e:
        parse_graphs(data, "g.yaml", **kw)
    return e.value.issues


def graph(nodes: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"graphs": [{"name": "g", "nodes": nodes, **kw}]}


def one(data: Any, **kw: Any) -> str:
    found = issues(data, **kw)
    assert len(found) == 1, found
    return found[0]


# -- the format --------------------------------------------------------------------------

def test_the_brief_example_loads(tmp_path: Path) -> None:
    p = tmp_path / "a.yaml"
    p.write_text(ANOMALY)
    gs = load_graphs(p)
    assert [g.name for g in gs.graphs] == ["anomaly"]
    assert to_rpc(gs.graphs[0]) == {
        "name": "anomaly", "entry": "firewall",
        "nodes": {"firewall": ["sampler", "drop"], "sampler": ["ids", "ddos-detect"],
                  "ids": ["scrubber"], "ddos-detect": ["scrubber"],
                  "scrubber": ["port:out", "drop"]}}
    assert gs.rule_params() == [{"graph": "anomaly", "priority": 10, "proto": "udp",
                                 "dst": "10.0.0.0/8", "dport": 53, "in_port": "in"}]
    assert gs.describe() == "1 graph(s) (anomaly), 1 rule(s)"


def test_entry_defaults_to_the_first_node_and_order_is_kept() -> None:
    gs = parse_graphs(graph({"b": ["a"], "a": ["port:out"]}))
    assert to_rpc(gs.graphs[0]) == {"name": "g", "entry": "b",
                                    "nodes": {"b": ["a"], "a": ["port:out"]}}
    assert list(to_rpc(gs.graphs[0])["nodes"]) == ["b", "a"]


def test_a_lone_hop_is_a_list_of_one() -> None:
    gs = parse_graphs(graph({"a": "drop"}))
    assert gs.graphs[0].nodes == {"a": ["drop"]}


def test_top_level_rules_and_normalized_fields() -> None:
    gs = parse_graphs({"graphs": [{"name": "g", "nodes": {"a": ["drop"]},
                                   "match": [{"proto": "TCP", "sport": "1024 - 2000"}]}],
                       "rules": [{"graph": "g", "priority": 3, "proto": "17", "dport": "53",
                                  "src": " 2001:db8::/32 "},
                                 {"graph": "default", "proto": 132, "priority": -5},
                                 {"graph": "g", "proto": "SCTP", "dport": 9, "src": "any",
                                  "sport": "ANY"},
                                 {"graph": "g", "proto": "any", "dport": 9}]})
    assert gs.rule_params() == [
        {"graph": "g", "priority": 0, "proto": "tcp", "sport": "1024-2000"},
        {"graph": "g", "priority": 3, "proto": 17, "src": "2001:db8::/32", "dport": 53},
        {"graph": "default", "priority": -5, "proto": 132},
        {"graph": "g", "priority": 0, "proto": "sctp", "dport": 9},
        {"graph": "g", "priority": 0, "dport": 9}]


def test_the_examples_validate() -> None:
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert [f.name for f in files] == ["anomaly.yaml", "demo.yaml", "video.yaml"]
    # demo.yaml goes with the demo deployment
    demo = load_deployment(EXAMPLES.parent / "demo.yaml", check_env=False)
    assert load_graphs(EXAMPLES / "demo.yaml", demo.services(),
                       [p.name for p in demo.ports]).rule_params() == [
        {"graph": "tls", "priority": 10, "proto": "tcp", "dport": 443}]
    anomaly = load_graphs(EXAMPLES / "anomaly.yaml")
    g = anomaly.graphs[0]
    assert g.name == "anomaly" and g.entry_node() == "firewall"
    assert list(g.nodes) == ["firewall", "sampler", "ddos-detect", "ids", "scrubber"]
    assert {h for hops in g.nodes.values() for h in hops} >= {"ids", "ddos-detect",
                                                              "scrubber"}
    video = load_graphs(EXAMPLES / "video.yaml")
    v = video.graphs[0]
    assert list(v.nodes) == ["firewall", "video-detect", "policy", "transcoder", "cache",
                             "shaper"]
    assert v.entry_node() == "firewall"
    assert len(video.rule_params()) == 4
    # and against the services and ports a deployment would have
    for gs in (anomaly, video):
        services = [n for g in gs.graphs for n in g.nodes]
        assert validate(gs.graphs, gs.rules, services, ["in", "out"]) == []


def test_a_deployment_file_is_a_graph_file_too(tmp_path: Path) -> None:
    p = tmp_path / "d.yaml"
    p.write_text(textwrap.dedent("""\
        ports: [{name: out, device: net_null0}]
        nfs: [{name: f, program: sluice-forward, service: forward}]
        chain: [forward, "port:out"]
        graphs: [{name: g, nodes: {forward: ["port:out"]}}]
        rules: [{graph: g, proto: udp}]
        """))
    gs = load_graphs(p)
    assert [g.name for g in gs.graphs] == ["g"]
    assert gs.rule_params() == [{"graph": "g", "priority": 0, "proto": "udp"}]
    p.write_text(p.read_text().replace("{forward: [", "{fwd: ["))
    with pytest.raises(GraphError) as e:
        load_graphs(p)
    assert e.value.issues[0] == (
        f"{p}: graphs[0].nodes.fwd: graph 'g': node 'fwd': no NF in nfs has service 'fwd' "
        f"(services: forward): add an NF with service 'fwd' or fix the name; did you mean "
        f"'forward'?")


# -- file-level errors ----------------------------------------------------------------------

def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(GraphError) as e:
        load_graphs(tmp_path / "nosuch.yaml")
    assert e.value.issues == [f"{tmp_path}/nosuch.yaml: no such file"]
    with pytest.raises(GraphError) as e:
        load_graphs(tmp_path)
    assert e.value.issues == [f"{tmp_path}: is a folder, not a graph file"]
    p = tmp_path / "g.yaml"
    p.write_text("graphs:\n  - name: a\n    name: b\n")
    with pytest.raises(GraphError) as e:
        load_graphs(p)
    assert e.value.issues == [f"{p}: line 3, column 5: invalid YAML (key 'name' is given "
                              f"twice in one mapping)"]
    p.write_text("")
    with pytest.raises(GraphError) as e:
        load_graphs(p)
    assert e.value.issues == [f"{p}: the file is empty; a graph file needs graphs: (see "
                              f"docs/graphs.md)"]
    assert issues([1]) == ["g.yaml: expected a mapping with keys graphs, rules; got a list "
                           "(see docs/graphs.md)"]
    assert issues({"rules": []}) == ["g.yaml: no graphs: a graph file lists them under "
                                     "graphs: (see docs/graphs.md)"]
    assert issues({"graphs": []}) == ["g.yaml: graphs: empty: list at least one graph"]


def test_schema_errors_name_the_graph_and_node() -> None:
    assert one({"graphs": "x"}) == "g.yaml: graphs: expected a list, got a string ('x')"
    assert one({"graphs": [{"name": "g", "nodes": {"a": ["drop"]}}], "rule": []}) == (
        "g.yaml: rule: unknown key (known keys here: graphs, rules); did you mean 'rules'?")
    assert one({"graphs": [{"name": "g", "nodes": {"a": ["drop"]}, "entri": "a"}]}) == (
        "g.yaml: graphs[0].entri: graph 'g': unknown key (known keys here: name, entry, "
        "nodes, match, groups); did you mean 'entry'?")
    assert one({"graphs": [{"nodes": {"a": ["drop"]}}]}) == (
        "g.yaml: graphs[0].name: missing: this key is required (see docs/graphs.md)")
    assert one(graph("x")) == (
        "g.yaml: graphs[0].nodes: graph 'g': expected a mapping, got a string ('x')")
    assert one(graph({"a": ["drop", 5]})) == (
        "g.yaml: graphs[0].nodes.a[1]: graph 'g': node 'a': expected a string, got a "
        "number (5)")
    assert one(graph({"a": {"b": 1}})) == (
        "g.yaml: graphs[0].nodes.a: graph 'g': node 'a': expected a list, got a mapping")
    assert one(graph({"a": ["drop"]}, match=[{"prot": "tcp"}])) == (
        "g.yaml: graphs[0].match[0].prot: graph 'g': unknown key (known keys here: priority, "
        "proto, src, dst, sport, dport, in_port); did you mean 'proto'?")
    assert one({"graphs": [{"name": "g", "nodes": {"a": ["drop"]}}],
                "rules": [{"proto": "tcp"}]}) == (
        "g.yaml: rules[0].graph: missing: this key is required (see docs/graphs.md)")


# -- graph checks ---------------------------------------------------------------------------

def test_bad_graph_names_and_duplicates() -> None:
    assert one({"graphs": [{"name": "1x", "nodes": {"a": ["drop"]}}]}) == (
        "g.yaml: graphs[0].name: '1x' is not a valid graph name: use 1-31 letters, digits, "
        "'_', '.' or '-', starting with a letter")
    assert one({"graphs": [{"name": "g", "nodes": {"a": ["drop"]}},
                           {"name": "g", "nodes": {"b": ["drop"]}}]}) == (
        "g.yaml: graphs[1].name: graph 'g' is already declared at graphs[0]: give each graph "
        "its own name")


def test_no_nodes() -> None:
    assert one(graph({})) == (
        "g.yaml: graphs[0].nodes: graph 'g': no nodes: list at least one, e.g. firewall: "
        "[\"port:out\", drop]")


def test_cycles_print_their_path() -> None:
    assert one(graph({"fw": ["ids"], "ids": ["scrub"], "scrub": ["fw", "port:out"]})) == (
        "g.yaml: graphs[0].nodes.fw: graph 'g': cycle fw -> ids -> scrub -> fw: a graph must "
        "not loop; remove one of its edges (or end the path with port:NAME or drop)")
    assert one(graph({"a": ["a", "drop"]})) == (
        "g.yaml: graphs[0].nodes.a: graph 'g': cycle a -> a: a graph must not loop; remove "
        "one of its edges (or end the path with port:NAME or drop)")
    # one cycle per tangle, the first in file order
    found = issues(graph({"a": ["b", "x"], "b": ["c"], "c": ["b"], "x": ["y"],
                          "y": ["x"]}))
    assert [m.split(": a graph")[0] for m in found] == [
        "g.yaml: graphs[0].nodes.b: graph 'g': cycle b -> c -> b",
        "g.yaml: graphs[0].nodes.x: graph 'g': cycle x -> y -> x"]


def test_edges_to_a_service_that_is_not_a_node() -> None:
    found = issues(graph({"fw": ["ids", "idss"], "ids": ["drop"]}))
    assert found == [
        "g.yaml: graphs[0].nodes.fw[1]: graph 'g': node 'fw': edge to 'idss', which is not "
        "a node of this graph (add it under nodes, or use port:NAME or drop); did you mean "
        "'ids'?"]
    assert one(graph({"fw": ["monitor"]})) == (
        "g.yaml: graphs[0].nodes.fw[0]: graph 'g': node 'fw': edge to 'monitor', which is "
        "not a node of this graph (add it under nodes, or use port:NAME or drop)")


def test_unknown_services_against_a_deployments_nfs() -> None:
    assert one(graph({"fw": ["ids"], "ids": ["drop"]}), services=["fw", "idx"]) == (
        "g.yaml: graphs[0].nodes.ids: graph 'g': node 'ids': no NF in nfs has service 'ids' "
        "(services: fw, idx): add an NF with service 'ids' or fix the name; did you mean "
        "'idx'?")
    assert parse_graphs(graph({"fw": ["ids"], "ids": ["drop"]}))  # not checked without NFs


def test_ports() -> None:
    assert one(graph({"fw": ["port:outt"]}), ports=["in", "out"]) == (
        "g.yaml: graphs[0].nodes.fw[0]: graph 'g': node 'fw': no port named 'outt' (ports: "
        "in, out); did you mean 'port:out'?")
    assert one(graph({"fw": ["port:"]})) == (
        "g.yaml: graphs[0].nodes.fw[0]: graph 'g': node 'fw': 'port:' names no valid port: "
        "write port:NAME with a port of the node")
    assert parse_graphs(graph({"fw": ["port:anything"]}))  # not checked without ports


def test_nodes_without_a_next_hop() -> None:
    for hops in ([], None):
        assert one(graph({"fw": ["ids"], "ids": hops})) == (
            "g.yaml: graphs[0].nodes.ids: graph 'g': node 'ids' has no next hop: list at "
            "least one (the first is the default), e.g. [\"port:out\"] or [drop]")


def test_unreachable_nodes_and_entry() -> None:
    assert one(graph({"fw": ["drop"], "ids": ["drop"]})) == (
        "g.yaml: graphs[0].nodes.ids: graph 'g': node 'ids' is not reachable from entry "
        "'fw': add an edge to it from another node, or remove it")
    assert one(graph({"fw": ["ids"], "ids": ["drop"]}, entry="ids")) == (
        "g.yaml: graphs[0].nodes.fw: graph 'g': node 'fw' is not reachable from entry "
        "'ids': add an edge to it from another node, or remove it")
    assert one(graph({"fw": ["drop"]}, entry="fww")) == (
        "g.yaml: graphs[0].entry: graph 'g': entry 'fww' is not a node of this graph "
        "(nodes: fw): name one of them, or leave entry out to start at the first node; did "
        "you mean 'fw'?")


def test_sinks_are_not_nodes_and_names_are_services() -> None:
    found = issues(graph({"fw": ["drop"], "port:out": ["drop"], "drop": ["drop"]}))
    assert found == [
        "g.yaml: graphs[0].nodes.port:out: graph 'g': 'port:out' cannot be a node: ports and "
        "drop are where a graph ends; list them as next hops of a node",
        "g.yaml: graphs[0].nodes.drop: graph 'g': 'drop' cannot be a node: ports and drop "
        "are where a graph ends; list them as next hops of a node"]
    assert one(graph({"fw": ["x y"], "x y": ["drop"]})) == (
        "g.yaml: graphs[0].nodes.x y: graph 'g': node 'x y': not a valid service name: use "
        "1-31 letters, digits, '_', '.' or '-', starting with a letter")


def test_a_next_hop_listed_twice() -> None:
    assert one(graph({"fw": ["drop", "drop"]})) == (
        "g.yaml: graphs[0].nodes.fw[1]: graph 'g': node 'fw': next hop 'drop' is listed "
        "twice: list each once")


# -- rule checks ----------------------------------------------------------------------------

def match_issue(m: dict[str, Any], **kw: Any) -> str:
    return one(graph({"fw": ["drop"]}, match=[m]), **kw)


@pytest.mark.parametrize("m, msg", [
    ({"proto": "tcpp"}, "proto: graph 'g': 'tcpp' is not a protocol sluiced knows: use tcp, "
                        "udp, icmp, icmp6, icmpv6, sctp, gre, esp, ah, any or a number 0-255; "
                        "did you mean 'tcp'?"),
    ({"proto": 256}, "proto: graph 'g': 256 is not an IP protocol number: use 0 to 255"),
    ({"proto": [6]}, "proto: graph 'g': expected tcp, udp, icmp, icmp6, icmpv6, sctp, gre, "
                     "esp, ah, any or a number 0-255, got a list"),
    ({"src": "10.0.0.0/33"}, "src: graph 'g': '10.0.0.0/33' is not an IPv4 or IPv6 address "
                             "or prefix: write e.g. 10.0.0.0/8, 10.0.0.1 or 2001:db8::/32"),
    ({"dst": "10.0.0.1/8"}, "dst: graph 'g': '10.0.0.1/8' has bits set after the prefix "
                            "length: write 10.0.0.0/8 (or the address alone for one host)"),
    # Found by the API's fuzzing: a text with the words of ipaddress's
    # host-bits error raised instead of being refused.
    ({"dst": "host bits set"}, "dst: graph 'g': 'host bits set' is not an IPv4 or IPv6 "
                               "address or prefix: write e.g. 10.0.0.0/8, 10.0.0.1 or "
                               "2001:db8::/32"),
    ({"dst": "2001:db8::1/32"}, "dst: graph 'g': '2001:db8::1/32' has bits set after the "
                                "prefix length: write 2001:db8::/32 (or the address alone "
                                "for one host)"),
    ({"src": 10}, "src: graph 'g': expected an address or prefix such as 10.0.0.0/8 or "
                  "2001:db8::/32, got a number (10)"),
    ({"src": "10.0.0.0/8", "dst": "2001:db8::/32"},
     "dst: graph 'g': src is IPv4 and dst is IPv6: a flow has one address family; make them "
     "the same"),
    ({"dport": 70000}, "dport: graph 'g': 70000 is not a port: ports go from 0 to 65535"),
    ({"dport": "80-70000"}, "dport: graph 'g': '80-70000': 70000 is not a port: ports go "
                            "from 0 to 65535"),
    ({"sport": "5-3"}, "sport: graph 'g': '5-3' is an empty range: write 3-5"),
    ({"sport": "http"}, "sport: graph 'g': 'http' is not a port 0-65535 or a range N-M such "
                        "as 1024-65535"),
    ({"sport": True}, "sport: graph 'g': expected a port 0-65535 or a range N-M such as "
                      "1024-65535, got a boolean (true)"),
    ({"proto": "icmp", "dport": 5}, "dport: graph 'g': dport needs proto tcp, udp or sctp "
                                    "(or no proto): icmp packets have no ports"),
    ({"proto": 47, "sport": "1-2"}, "sport: graph 'g': sport needs proto tcp, udp or sctp (or "
                                    "no proto): 47 packets have no ports"),
    ({"priority": -1000001}, "priority: graph 'g': -1000001 is out of range: use -1000000 to "
                             "1000000 (higher wins)"),
    ({"priority": "high"}, "priority: graph 'g': expected an integer from -1000000 to "
                           "1000000, got a string ('high')"),
    ({"in_port": "port:in"}, "in_port: graph 'g': 'port:in' is not a port name: write "
                             "in_port: in"),
    ({"in_port": ""}, "in_port: graph 'g': '' is not a port name: give the name of a port of "
                      "the node, e.g. in"),
])
def test_bad_match_fields(m: dict[str, Any], msg: str) -> None:
    assert match_issue(m) == "g.yaml: graphs[0].match[0]." + msg


def test_in_port_against_the_ports() -> None:
    assert match_issue({"in_port": "eth0"}, ports=["in", "out"]) == (
        "g.yaml: graphs[0].match[0].in_port: graph 'g': no port named 'eth0' (ports: in, out)")
    assert match_issue({"in_port": "inn"}, ports=["in", "out"]).endswith(
        "(ports: in, out); did you mean 'in'?")


def test_top_level_rules_name_their_graph() -> None:
    base = {"name": "g", "nodes": {"fw": ["drop"]}}
    assert one({"graphs": [base], "rules": [{"graph": "gg", "proto": "udp"}]}) == (
        "g.yaml: rules[0].graph: no graph named 'gg' (graphs: g, default): name one of them, "
        "or add graph 'gg' under graphs; did you mean 'g'?")
    assert one({"graphs": [base], "rules": [{"graph": "g", "proto": "udpp"}]}) == (
        "g.yaml: rules[0].proto: rule for graph 'g': 'udpp' is not a protocol sluiced knows: "
        "use tcp, udp, icmp, icmp6, icmpv6, sctp, gre, esp, ah, any or a number 0-255; did "
        "you mean 'udp'?")
    assert one({"graphs": [base], "rules": [{"graph": "g", "foo": 1}]}) == (
        "g.yaml: rules[0].foo: unknown key (known keys here: priority, proto, src, dst, sport, "
        "dport, in_port, graph)")


def test_every_problem_is_reported_at_once() -> None:
    found = issues({"graphs": [{"name": "g", "nodes": {"fw": ["ids", "x"], "ids": []},
                                "match": [{"proto": "tcpp", "dport": -1}]}],
                    "rules": [{"graph": "h"}]})
    assert [m.split(": ")[1] for m in found] == [
        "graphs[0].nodes.fw[1]", "graphs[0].nodes.ids", "graphs[0].match[0].proto",
        "graphs[0].match[0].dport", "rules[0].graph"]


def test_match_params_for_the_cli() -> None:
    assert match_params({"proto": "udp", "port": "53", "src": None}) == (
        {"proto": "udp", "port": 53}, [])
    assert match_params({"colour": "red"}) == (
        {}, [("colour", "unknown key (known keys here: priority, proto, src, dst, sport, "
                        "dport, in_port)")])


# -- what is sent, and how rules are compared ----------------------------------------------

def test_rule_params() -> None:
    r = RuleSpec(graph="g", proto="udp", dport="53")
    assert rule_params(r) == {"graph": "g", "priority": 0, "proto": "udp", "dport": 53}
    g = GraphSpec(name="g", nodes={"a": ["drop"]})
    assert to_rpc(g) == {"name": "g", "entry": "a", "nodes": {"a": ["drop"]}}


def test_same_rule_and_format_match() -> None:
    mine = {"graph": "g", "priority": 10, "proto": "udp", "dst": "10.0.0.0/8", "dport": 53}
    theirs = {"id": 4, "graph": "g", "priority": 10, "proto": 17, "src": None,
              "dst": "10.0.0.0/8", "sport": "0-65535", "dport": "53-53", "in_port": None,
              "flows": 12}
    assert same_rule(mine, theirs)
    assert not same_rule(mine, {**theirs, "priority": 9})
    assert not same_rule(mine, {**theirs, "graph": "h"})
    assert not same_rule(mine, {**theirs, "dst": "10.0.0.0/16"})
    assert format_match(mine) == "udp dst 10.0.0.0/8 dport 53"
    assert format_match({"graph": "g", "priority": 0}) == "any flow"


# -- in a deployment -------------------------------------------------------------------------

DEP = {"node": {"name": "t", "cores": [0]},
       "ports": [{"name": "in", "device": "net_null0"}, {"name": "out", "device": "net_null1"}],
       "nfs": [{"name": "fw", "program": "sluice-firewall", "service": "firewall"},
               {"name": "mon", "program": "sluice-monitor", "service": "monitor"}],
       "chain": ["firewall", "port:out"]}


def dep_issues(extra: dict[str, Any]) -> list[str]:
    with pytest.raises(DeploymentError) as e:
        Deployment.from_dict({**DEP, **extra}, source="d.yaml", check_env=False)
    return e.value.issues


def test_deployment_with_graphs_and_rules() -> None:
    dep = Deployment.from_dict({**DEP, "graphs": [
        {"name": "mon", "nodes": {"firewall": ["monitor", "drop"], "monitor": ["port:out"]},
         "match": [{"priority": 5, "proto": "udp", "in_port": "in"}]}],
        "rules": [{"graph": "mon", "dst": "10.0.0.0/8"}, {"graph": "default", "dport": 22}]},
        source="d.yaml", check_env=False)
    assert dep.rule_params() == [
        {"graph": "mon", "priority": 5, "proto": "udp", "in_port": "in"},
        {"graph": "mon", "priority": 0, "dst": "10.0.0.0/8"},
        {"graph": "default", "priority": 0, "dport": 22}]
    assert dep.describe().endswith("chain firewall -> port:out, graph(s) mon, 3 rule(s)")


def test_deployment_graph_errors() -> None:
    assert dep_issues({"graphs": [
        {"name": "default", "nodes": {"firewall": ["monitor"], "monitor": ["port:outt"],
                                      "ids": ["drop"]},
         "match": [{"in_port": "eth0"}]}]}) == [
        "d.yaml: graphs[0].name: graph 'default' is the chain: set it with chain:, or give "
        "this graph another name",
        "d.yaml: graphs[0].nodes.monitor[0]: graph 'default': node 'monitor': no port named "
        "'outt' (ports: in, out); did you mean 'port:out'?",
        "d.yaml: graphs[0].nodes.ids: graph 'default': node 'ids': no NF in nfs has service "
        "'ids' (services: firewall, monitor): add an NF with service 'ids' or fix the name",
        "d.yaml: graphs[0].nodes.ids: graph 'default': node 'ids' is not reachable from entry "
        "'firewall': add an edge to it from another node, or remove it",
        "d.yaml: graphs[0].match[0].in_port: graph 'default': no port named 'eth0' (ports: "
        "in, out)"]
    assert dep_issues({"rules": [{"graph": "g"}]}) == [
        "d.yaml: rules[0].graph: no graph named 'g' (graphs: default): name one of them, or "
        "add graph 'g' under graphs"]
    assert dep_issues({"graphs": [{"name": "g", "nodes": "x"}]}) == [
        "d.yaml: graphs[0].nodes: graph 'g': expected a mapping, got a string ('x')"]


def test_the_messages_in_docs_graphs_md_are_real() -> None:
    """Every example line of docs/graphs.md is what the checks print."""
    doc = (EXAMPLES.parents[1] / "docs" / "graphs.md").read_text()
    shown = [line for line in doc.splitlines() if line.startswith(("g.yaml: ", "d.yaml: "))]
    assert len(shown) == 18
    made: list[str] = []
    for data in (
            graph({"fw": ["ids"], "ids": ["scrub"], "scrub": ["fw", "port:out"]}),
            graph({"fw": ["ids", "idss"], "ids": ["drop"]}),
            graph({"fw": ["drop"], "ids": []}),
            graph({"fw": ["drop"]}, entry="fww"),
            graph({"fw": ["drop", "drop"], "port:out": ["drop"]}),
            {"graphs": [{"name": "g", "nodes": {"a": ["drop"]}},
                        {"name": "g", "nodes": {"b": ["drop"]}}],
             "rules": [{"graph": "gg"}]},
            graph({"fw": ["drop"]}, match=[{"proto": "tcpp", "dst": "10.0.0.1/8",
                                             "sport": "5-3"}]),
            graph({"fw": ["drop"]}, match=[{"src": "10.0.0.0/8", "dst": "::/0"}]),
            graph({"fw": ["drop"]}, match=[{"proto": "icmp", "dport": 1}]),
            graph({"fw": ["drop"]}, match=[{"prot": "tcp"}])):
        with pytest.raises(GraphError) as e:
            parse_graphs(data, "g.yaml")
        made += e.value.issues
    made += dep_issues({"graphs": [{"name": "web", "nodes": {
        "firewall": ["monitor"], "monitor": ["port:outt", "ids"], "ids": ["drop"]},
        "match": [{"in_port": "eth0"}]}]})
    missing = [line for line in shown if line not in made]
    assert missing == []
