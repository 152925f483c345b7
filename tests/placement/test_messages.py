"""Every problem of a topology or flows file is one line in the project's
wording (as docs/deployment.md's errors): FILE: key.path: what is wrong and
what to do. Exact lines, for each kind of problem, and through `sluice place`."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from sluice.placement.cli import place
from sluice.placement.io import InputError, load_problem, problem_from_dicts

app = typer.Typer()
app.command()(place)
runner = CliRunner()

TOPO = {"nodes": ["A", "B", {"name": "C", "cores": 4}], "links": [["A", "B"], ["B", "C"]]}
F0 = {"id": "f1", "class": "web", "ingress": "A", "egress": "C", "bandwidth": 10}
FLOWS = {"services": {"s": 2}, "chains": {"web": ["s"]}, "flows": [F0]}
DOC = "see docs/placement.md"


def issues(topology, flows) -> list[str]:
    with pytest.raises(InputError) as err:
        problem_from_dicts(topology, flows, topology_source="t.yaml", flows_source="f.yaml")
    return err.value.issues


def flows_with(**flow) -> dict:
    return {**FLOWS, "flows": [{**F0, **flow}]}


def gen(**g) -> dict:
    return {**FLOWS, "generate": [{"count": 2, "class": "web", **g}]}


def drop(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


@pytest.mark.parametrize(("topology", "flows", "lines"), [
    # pydantic's kinds of problem, in our words
    (TOPO, drop(FLOWS, "services"),
     [f"f.yaml: services: missing: this key is required ({DOC})"]),
    (TOPO, {**FLOWS, "flows": [drop(F0, "ingress")]},
     [f"f.yaml: flows[0].ingress: missing: this key is required ({DOC})"]),
    (TOPO, flows_with(bandwdth=3),
     ["f.yaml: flows[0].bandwdth: unknown key (known keys here: id, class, chain, ingress, "
      "egress, bandwidth, max_delay); did you mean 'bandwidth'?"]),
    ({**TOPO, "colour": "red"}, FLOWS,
     ["t.yaml: colour: unknown key (known keys here: name, defaults, nodes, links, topohub, "
      "synthetic, delay_per_km)"]),
    (TOPO, flows_with(bandwidth="100"),
     ["f.yaml: flows[0].bandwidth: expected a number, got a string ('100')"]),
    ({**TOPO, "defaults": {"cores": 1.5}}, FLOWS,
     ["t.yaml: defaults.cores: expected an integer, got a number (1.5)"]),
    ({**TOPO, "defaults": {"cores": True}}, FLOWS,
     ["t.yaml: defaults.cores: expected an integer, got a boolean (true)"]),
    ({**TOPO, "nodes": ["A", "B", {"name": 7}]}, FLOWS,
     ["t.yaml: nodes[2].name: expected a string, got a number (7): write it in quotes if it "
      "is meant as a name"]),
    (TOPO, flows_with(bandwidth=-1), ["f.yaml: flows[0].bandwidth: must be at least 0, got -1"]),
    ({**TOPO, "defaults": {"capacity": 0}}, FLOWS,
     ["t.yaml: defaults.capacity: must be more than 0, got 0"]),
    ({**TOPO, "nodes": ["A", "B", {"name": "C", "cores": 10**30}]}, FLOWS,
     ["t.yaml: nodes[2].cores: must be at most 1000000, got 1000000000000000000000000000000"]),
    ({**TOPO, "defaults": {"cores": 10**7}}, FLOWS,
     ["t.yaml: defaults.cores: must be at most 1000000, got 10000000"]),
    ({"synthetic": {"nodes": 10**6, "edges": 10**6}}, FLOWS,
     ["t.yaml: synthetic.nodes: must be at most 1000, got 1000000"]),
    (TOPO, {**FLOWS, "services": {"s": 0}}, ["f.yaml: services.s: must be at least 1, got 0"]),
    (TOPO, {**FLOWS, "services": {"s": {"flows_per_core": 0}}},
     ["f.yaml: services.s.flows_per_core: must be at least 1, got 0"]),
    (TOPO, {**FLOWS, "flows": {"f1": F0}}, ["f.yaml: flows: expected a list, got a mapping"]),
    (TOPO, {**FLOWS, "flows": [5]},
     ["f.yaml: flows[0]: expected a mapping with keys id, class, chain, ingress, egress, "
      "bandwidth, max_delay; got a number (5)"]),
    ({**TOPO, "defaults": None}, FLOWS,
     ["t.yaml: defaults: expected a mapping with keys cores, capacity, delay; got nothing "
      "(null)"]),
    ({**TOPO, "nodes": ["A", 5]}, FLOWS,
     ["t.yaml: nodes[1]: expected a string, got a number (5): write it in quotes if it is "
      "meant as a name"]),
    ({**TOPO, "nodes": ["A", [5]]}, FLOWS,
     ["t.yaml: nodes[1]: expected a node name or a mapping with keys name, cores, "
      "flows_per_core, pos; got a list of 1 item"]),
    ({**TOPO, "links": [["A", "B", "C"]]}, FLOWS,
     ["t.yaml: links[0]: expected [A, B] or a mapping with keys a, b, capacity, delay; got "
      "a list of 3 items"]),
    ({**TOPO, "links": [["A", 1]]}, FLOWS,
     ["t.yaml: links[0][1]: expected a string, got a number (1): write it in quotes if it is "
      "meant as a name"]),
    ({**TOPO, "nodes": ["A", ""]}, FLOWS, ["t.yaml: nodes[1]: empty: give a name"]),
    ({**TOPO, "nodes": [{"name": "A", "pos": [1, 2, 3]}]}, FLOWS,
     ["t.yaml: nodes[0].pos: expected [x, y] (2 numbers), got 3 numbers"]),
    ({**TOPO, "nodes": [{"name": "A", "pos": [1]}]}, FLOWS,
     ["t.yaml: nodes[0].pos: expected [x, y] (2 numbers), got 1 number"]),
    (TOPO, {**FLOWS, "chains": {"web": []}}, ["f.yaml: chains.web: empty: give at least one "
                                              "service"]),
    (TOPO, {**FLOWS, "services": {1: 2}},
     ["f.yaml: services: a number (1) cannot be a key: keys are names (write the key in "
      "quotes if it is meant as one)"]),
    (TOPO, {**FLOWS, "generate": 5},
     ["f.yaml: generate: expected a mapping or a list of mappings with keys count, class, "
      "chain, bandwidth, delay_stretch, min_delay, seed, prefix; got a number (5)"]),
    # our validators, without pydantic's "Value error, "
    (TOPO, flows_with(chain=["s"]),
     ["f.yaml: flows[0]: both class and chain are given: give one of them"]),
    (TOPO, flows_with(**{"class": None}),
     ["f.yaml: flows[0]: missing: give class (a name under chains) or chain (a list of "
      "services)"]),
    ({**TOPO, "topohub": "sndlib/geant"}, FLOWS,
     ["t.yaml: topohub and nodes/links are given: give only one of nodes and links, topohub "
      "or synthetic"]),
    ({}, FLOWS, [f"t.yaml: no nodes: give nodes and links, topohub or synthetic ({DOC})"]),
    (TOPO, gen(bandwidth=[80, 21]),
     ["f.yaml: generate[0].bandwidth: [80, 21] is an empty range: write [21, 80]"]),
    (TOPO, gen(bandwidth=[1.2, 1.7]),
     ["f.yaml: generate[0].bandwidth: [1.2, 1.7] holds no whole number, and generated "
      "bandwidths are whole numbers: widen the range"]),
    (TOPO, gen(bandwidth="fast"),
     ["f.yaml: generate[0].bandwidth: expected a number or a range [low, high], got a "
      "string ('fast')"]),
])
def test_schema_problems_in_our_words(topology, flows, lines):
    assert issues(topology, flows) == lines


@pytest.mark.parametrize(("where", "value", "line"), [
    ("capacity", math.inf, "t.yaml: defaults.capacity: inf is not a finite number: give an "
                           "ordinary number"),
    ("delay", math.nan, "t.yaml: defaults.delay: nan is not a finite number: give an ordinary "
                        "number"),
    ("link", math.inf, "t.yaml: links[0].capacity: inf is not a finite number: give an "
                       "ordinary number"),
    ("pos", math.nan, "t.yaml: nodes[0].pos[1]: nan is not a finite number: give an ordinary "
                      "number"),
    ("bandwidth", math.inf, "f.yaml: flows[0].bandwidth: inf is not a finite number: give an "
                            "ordinary number"),
    ("max_delay", math.inf, "f.yaml: flows[0].max_delay: inf is not a finite number: leave "
                            "max_delay out for no delay bound"),
    ("delay_stretch", math.inf, "f.yaml: generate[0].delay_stretch: inf is not a finite "
                                "number: write delay_stretch: null for no delay bound"),
    ("min_delay", -math.inf, "f.yaml: generate[0].min_delay: -inf is not a finite number: "
                             "give an ordinary number"),
    ("gen_bandwidth", math.inf, "f.yaml: generate[0].bandwidth: inf is not a finite number: "
                                "give a number >= 0, or a range [low, high] of whole numbers"),
    ("gen_range", math.nan, "f.yaml: generate[0].bandwidth: [1, nan] is not a range of finite "
                            "numbers: give a number >= 0, or a range [low, high] of whole "
                            "numbers"),
    ("delay_per_unit", math.inf, "t.yaml: synthetic.delay_per_unit: inf is not a finite "
                                 "number: give an ordinary number"),
    ("delay_per_km", math.nan, "t.yaml: delay_per_km: nan is not a finite number: give an "
                               "ordinary number"),
])
def test_inf_and_nan_are_refused_everywhere(where, value, line):
    topo, flows = dict(TOPO), dict(FLOWS)
    if where in ("capacity", "delay"):
        topo["defaults"] = {where: value}
    elif where == "link":
        topo["links"] = [{"a": "A", "b": "B", "capacity": value}]
    elif where == "pos":
        topo["nodes"] = [{"name": "A", "pos": [0, value]}, "B", "C"]
    elif where in ("bandwidth", "max_delay"):
        flows = flows_with(**{where: value})
    elif where in ("delay_stretch", "min_delay"):
        flows = gen(**{where: value})
    elif where == "gen_bandwidth":
        flows = gen(bandwidth=value)
    elif where == "gen_range":
        flows = gen(bandwidth=[1, value])
    elif where == "delay_per_unit":
        topo = {"synthetic": {"nodes": 3, "edges": 2, "delay_per_unit": value}}
    else:
        topo = {"topohub": "sndlib/geant", where: value}
    assert issues(topo, flows) == [line]


@pytest.mark.parametrize(("topology", "flows", "lines"), [
    (TOPO, flows_with(ingress="Q", egress="c"),
     ["f.yaml: flows[0].ingress: 'Q' is not a node of the topology (nodes: A, B, C): "
      "fix the name or add the node to the topology",
      "f.yaml: flows[0].egress: 'c' is not a node of the topology (nodes: A, B, C): "
       "fix the name or add the node to the topology"]),
    (TOPO, flows_with(**{"class": "webb"}),
     ["f.yaml: flows[0].class: 'webb' is not under chains (chains: web): add it there or fix "
      "the name; did you mean 'web'?"]),
    (TOPO, flows_with(**{"class": None, "chain": ["s", "ss"]}),
     ["f.yaml: flows[0].chain[1]: 'ss' is not under services (services: s): add it there or "
      "fix the name; did you mean 's'?"]),
    (TOPO, {**FLOWS, "chains": {"web": ["t"]}},
     ["f.yaml: chains.web[0]: 't' is not under services (services: s): add it there or fix "
      "the name"]),
    (TOPO, {**FLOWS, "flows": [F0, F0]},
     ["f.yaml: flows[1].id: 'f1' is already the id of flows[0]: give every flow its own id"]),
    (TOPO, {**FLOWS, "flows": [{**F0, "id": "f2"}, drop(F0, "id")]},
     ["f.yaml: flows[1]: its default id 'f2' (the flow's number) is already the id of "
      "flows[0]: give it an id"]),
    (TOPO, {**FLOWS, "generate": {"count": 2, "class": "web", "prefix": "f"}},
     ["f.yaml: generate: generated id 'f1' is already the id of flows[0]: set prefix to one "
      "no other flow id starts with"]),
    ({"nodes": ["A"]}, {**FLOWS, "flows": [], "generate": {"count": 2, "class": "web"}},
     ["f.yaml: generate: random flows need a topology with at least 2 nodes: add nodes, or "
      "list the flows under flows"]),
    ({**TOPO, "nodes": ["A", "B", "C", "A"]}, FLOWS,
     ["t.yaml: nodes[3]: node 'A' is already listed at nodes[0]: list each node once"]),
    ({**TOPO, "links": [["A", "A"], ["A", "B"], ["B", "A"], {"a": "A", "b": "Z"}]}, FLOWS,
     ["t.yaml: links[0]: a link joins two different nodes, this one joins 'A' to itself: "
      "remove it or fix a name",
      "t.yaml: links[2]: link B-A is already listed at links[1]: list each link once (a link "
      "carries both directions)",
      "t.yaml: links[3].b: 'Z' is not listed under nodes (nodes: A, B, C): add it there or "
      "fix the name"]),
    ({**TOPO, "nodes": ["A", "B", {"name": "C", "flows_per_core": {"ids": 1}}]}, FLOWS,
     ["t.yaml: nodes[2].flows_per_core.ids: 'ids' is not under services in f.yaml (services: "
      "s): fix the name"]),
    ({"synthetic": {"nodes": 5, "edges": 50}}, FLOWS,
     ["t.yaml: synthetic: a connected simple graph on 5 nodes has between 4 and 10 links; 50 "
      "were asked for: set edges in that range"]),
])
def test_references_name_the_key(topology, flows, lines):
    assert issues(topology, flows) == lines


@pytest.mark.parametrize(("key", "line"), [
    ("sndlib/geamt", "t.yaml: topohub: topohub has no topology 'sndlib/geamt' (sndlib/ has "
                     "abilene, atlanta, brain, cost266, dfn-bwin, dfn-gwin, di-yuan, france, "
                     "... (26 in all)); did you mean 'sndlib/geant'?"),
    ("nosuch/x", "t.yaml: topohub: topohub has no topology 'nosuch/x' (groups: backbone, "
                 "caida, gabriel, sndlib, topozoo; keys look like sndlib/geant, "
                 "topozoo/Abilene)"),
    ("../../x", "t.yaml: topohub: '../../x' is not a topohub key: keys are GROUP/NAME, such "
                "as sndlib/geant, topozoo/Abilene or gabriel/25/0"),
    ("sndlib", "t.yaml: topohub: 'sndlib' is not a topohub key: keys are GROUP/NAME, such as "
               "sndlib/geant, topozoo/Abilene or gabriel/25/0"),
    (5, "t.yaml: topohub: expected a string, got a number (5): write it in quotes if it is "
        "meant as a name"),
])
def test_topohub_problems_name_the_file_and_key(key, line):
    assert issues({"topohub": key}, FLOWS) == [line]


def test_a_topohub_reference_names_the_argument(tmp_path):
    flows = tmp_path / "f.yaml"
    flows.write_text(yaml.safe_dump(FLOWS))
    with pytest.raises(InputError) as err:
        load_problem("topohub:sndlib/geamt", flows)
    assert err.value.issues == [
        "topohub:sndlib/geamt: topohub has no topology 'sndlib/geamt' (sndlib/ has abilene, "
        "atlanta, brain, cost266, dfn-bwin, dfn-gwin, di-yuan, france, ... (26 in all)); did "
        "you mean 'sndlib/geant'?"]


def test_yaml_and_json_infinities_are_refused_from_files(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text("nodes: [A, B]\nlinks: [{a: A, b: B, delay: .inf}]\n")
    flows = tmp_path / "f.json"
    flows.write_text('{"services": {"s": 1}, "flows": [{"chain": ["s"], "ingress": "A", '
                     '"egress": "B", "bandwidth": Infinity, "max_delay": NaN}]}')
    ok = tmp_path / "ok.yaml"
    ok.write_text("nodes: [A, B]\nlinks: [[A, B]]\n")
    with pytest.raises(InputError) as err:
        load_problem(topo, flows)
    assert err.value.issues == [f"{topo}: links[0].delay: inf is not a finite number: give an "
                                f"ordinary number"]
    with pytest.raises(InputError) as err:
        load_problem(ok, flows)
    assert err.value.issues == [
        f"{flows}: flows[0].bandwidth: inf is not a finite number: give an ordinary number",
        f"{flows}: flows[0].max_delay: nan is not a finite number: leave max_delay out for no "
        f"delay bound"]
    date = tmp_path / "d.yaml"
    date.write_text("nodes: [A, 2024-01-01]\nlinks: []\n")
    with pytest.raises(InputError) as err:
        load_problem(date, flows)
    assert err.value.issues == [f"{date}: nodes[1]: expected a string, got a date "
                                f"(2024-01-01): write it in quotes if it is meant as a name"]


def cli(tmp_path: Path, topology, flows, *args: str):
    t = tmp_path / "t.yaml"
    f = tmp_path / "f.yaml"
    t.write_text(topology if isinstance(topology, str) else yaml.safe_dump(topology))
    f.write_text(flows if isinstance(flows, str) else yaml.safe_dump(flows))
    res = runner.invoke(app, [str(t), str(f), *args])
    return res, t, f


def test_cli_prints_one_line_per_problem_with_brackets_intact(tmp_path):
    res, t, f = cli(tmp_path, {**TOPO, "links": [["A", "B", "C"]]},
                    gen(bandwidth="fast", seed="1"))
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {t}: links[0]: expected [A, B] or a mapping with keys a, b, capacity, delay; "
        f"got a list of 3 items",
        "error: fix the file(s) above; docs/placement.md describes the formats"]
    res, t, f = cli(tmp_path, TOPO, gen(bandwidth="fast", seed="1"))
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {f}: generate[0].bandwidth: expected a number or a range [low, high], got a "
        f"string ('fast')",
        f"error: {f}: generate[0].seed: expected an integer, got a string ('1')",
        "error: fix the file(s) above; docs/placement.md describes the formats"]


def test_cli_refuses_yaml_inf_and_a_bad_topohub_key(tmp_path):
    res, t, f = cli(tmp_path, "topohub: sndlib/geamt\ndefaults: {capacity: .inf}\n", FLOWS)
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {t}: defaults.capacity: inf is not a finite number: give an ordinary number",
        "error: fix the file(s) above; docs/placement.md describes the formats"]
    res, t, f = cli(tmp_path, "topohub: sndlib/geamt\n", FLOWS)
    assert res.exit_code == 1
    assert res.stderr.splitlines()[0] == (
        f"error: {t}: topohub: topohub has no topology 'sndlib/geamt' (sndlib/ has abilene, "
        f"atlanta, brain, cost266, dfn-bwin, dfn-gwin, di-yuan, france, ... (26 in all)); did "
        f"you mean 'sndlib/geant'?")
    res = runner.invoke(app, ["topohub:nosuch/x", str(f)])
    assert res.exit_code == 1
    assert res.stderr.splitlines()[0] == (
        "error: topohub:nosuch/x: topohub has no topology 'nosuch/x' (groups: backbone, caida, "
        "gabriel, sndlib, topozoo; keys look like sndlib/geant, topozoo/Abilene)")


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_cli_refuses_a_time_limit_that_is_not_a_positive_number(tmp_path, value):
    res, _, _ = cli(tmp_path, TOPO, FLOWS, "--time-limit", value)
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        f"error: --time-limit must be a positive number of seconds, got {value}"]


def test_make_problem_says_what_to_do() -> None:
    """The library's own checks (make_problem, for callers without files)."""
    import networkx as nx

    from sluice.placement.model import Flow, ProblemError, make_problem

    g = nx.Graph()
    g.add_node("A", cores=2)
    g.add_node("B", cores=2)
    g.add_edge("A", "B", capacity=10.0, delay=1.0)
    with pytest.raises(ProblemError) as e:
        make_problem(g, {"fw": 4}, [Flow("f1", ("fw",), "A", "Q", 1.0),
                                    Flow("f2", (), "A", "B", 1.0)])
    assert e.value.issues == [
        "flow 'f1': egress 'Q' is not a node of the topology (known: A, B): fix the name or "
        "add the node to the topology",
        "flow 'f2': the service chain is empty: list the services the flow goes through"]
    with pytest.raises(ProblemError) as e:
        make_problem(nx.Graph(), {"fw": 4}, [])
    assert e.value.issues == [
        "the topology has no nodes: give it at least one (a host with cores)"]
