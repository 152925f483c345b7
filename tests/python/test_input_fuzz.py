"""Property-based fuzzing of the input files: deployment files (sluice.core.deploy),
graph files (sluice.core.graph) and placement inputs (sluice.placement.io).

The strategies start from the valid files in examples/ and break them
structurally (keys deleted, unknown keys, values of other YAML types,
duplicated and swapped list items, edges to unknown nodes, cycles) or as text
(truncated, tabs, aliases, an alias bomb). Whatever the input, loading gives
the module's own error (DeploymentError, GraphError, InputError), one line per
problem that starts with the file and stays short, and never another
exception; a valid input round-trips. The CLI exits 1 with those lines and no
traceback. The profile is derandomized, so CI sees the same examples every run.

Below the fuzz tests are plain regression tests, one per bug the fuzzing found.
"""

from __future__ import annotations

import copy
import math
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.deploy import Deployment, DeploymentError, load_deployment, load_graphs
from sluice.core.graph import GraphError, GraphSet, parse_graphs, to_rpc
from sluice.placement.cli import place
from sluice.placement.io import InputError, problem_from_dicts, read_data

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DEPLOYMENTS = {p.name: yaml.safe_load(p.read_text())
               for p in (EXAMPLES / "demo.yaml", EXAMPLES / "ddos.yaml")}
GRAPHS = {p.name: yaml.safe_load(p.read_text())
          for p in sorted((EXAMPLES / "graphs").glob("*.yaml"))}
TOPOLOGY = yaml.safe_load((EXAMPLES / "placement" / "topology.yaml").read_text())
FLOWS = yaml.safe_load((EXAMPLES / "placement" / "flows.yaml").read_text())

FUZZ = settings(derandomize=True, deadline=None, max_examples=250, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_FILES = settings(FUZZ, max_examples=80)
MAX_LINE = 2000  # no problem line is longer (an alias bomb's repr would be)

place_app = typer.Typer()
place_app.command()(place)
runner = CliRunner()

# -- strategies -------------------------------------------------------------------------

# Values of every YAML type, and the edge cases of each.
ODD_VALUES = [None, True, False, 0, -1, 2**64, -(2**63), 10**30, 1.5, -0.0, math.inf, -math.inf,
              math.nan, "", " ", "\t", "é☃漢", "x" * 5000, "9" * 5000, "²", "port:", "port:nosuch",
              "drop", "any", [], [None], [1, "a"], {}, {"x": 1}, {None: 1}]
NAMES = ["firewall", "monitor", "forward", "sampler", "ids", "scrubber", "ddos-detect", "nosuch",
         "port:out", "port:in", "drop", "edge-a", "dc-1", "web", "video", "fw", "in", "out"]
values = st.one_of(
    st.sampled_from(ODD_VALUES),
    st.sampled_from(NAMES),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.lists(st.one_of(st.integers(), st.text(max_size=8), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8)),
                    max_size=3),
)
keys = st.one_of(st.sampled_from(["zz", "nme", "name", "nodes", "entry", "graph", "match",
                                  "count", "class", "chain", "cores", "replicas"]),
                 st.integers(-3, 3), st.none(), st.booleans(), st.text(max_size=8))


def _paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, path + (i,))
    return out


def _at(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


@st.composite
def mutated(draw: st.DrawFn, bases: dict[str, Any]) -> Any:
    """One of ``bases`` with 1-4 structural mutations."""
    obj = copy.deepcopy(bases[draw(st.sampled_from(sorted(bases)))])
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(obj)))
        if not path:
            if draw(st.booleans()):
                return draw(values)  # the whole file is something else
            continue
        parent, key = _at(obj, path[:-1]), path[-1]
        op = draw(st.sampled_from(["delete", "replace", "rename", "add", "duplicate", "swap",
                                   "name"]))
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = draw(values)
        elif op == "rename" and isinstance(parent, dict):
            parent[draw(keys)] = parent.pop(key)
        elif op == "add" and isinstance(parent, dict):
            parent[draw(keys)] = draw(values)
        elif op == "add" and isinstance(parent, list):
            parent.append(draw(values))
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif op == "swap" and isinstance(parent, list) and len(parent) > 1:
            other = draw(st.integers(0, len(parent) - 1))
            parent[key], parent[other] = parent[other], parent[key]
        elif op == "name":  # another (known or unknown) name: duplicates, dangling edges
            parent[key] = draw(st.sampled_from(NAMES))
    return obj


def _hops(h: Any) -> list[str]:
    return [h] if isinstance(h, str) else list(h or [])


@st.composite
def graph_with_extra_edge(draw: st.DrawFn) -> tuple[dict[str, Any], str, str]:
    """An example graph file with one more edge: from a node to a node that
    reaches it (itself included: a cycle) or to a node that does not exist.
    Returns the file, the graph's name and the new edge's target."""
    data = copy.deepcopy(GRAPHS[draw(st.sampled_from(sorted(GRAPHS)))])
    g = data["graphs"][draw(st.integers(0, len(data["graphs"]) - 1))]
    nodes = g["nodes"]
    src = draw(st.sampled_from(sorted(nodes)))

    def reaches(a: str) -> bool:
        todo, seen = [a], set()
        while todo:
            n = todo.pop()
            if n == src:
                return True
            seen.add(n)
            todo += [h for h in _hops(nodes.get(n)) if h in nodes and h not in seen]
        return False

    target = draw(st.sampled_from(sorted(n for n in nodes if reaches(n)) + ["nosuch"]))
    hops = _hops(nodes[src])
    hops.insert(draw(st.integers(0, len(hops))), target)
    nodes[src] = hops
    return data, g["name"], target


def alias_bomb(levels: int, width: int = 10) -> str:
    """A flow list of YAML anchors, each ``width`` aliases of the one before:
    small text, ``width ** levels`` items when walked (billion laughs)."""
    items = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    items += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(items) + "]"


def text_mutations(text: str) -> st.SearchStrategy[str]:
    """A valid file's text, broken as text."""
    lines = text.splitlines(keepends=True)
    n = len(text)
    return st.one_of(
        st.integers(0, n).map(lambda i: text[:i]),  # truncated anywhere
        st.tuples(st.integers(0, n), st.sampled_from(["\t", "\t- x\n", ": ", "- ", "&a ", "*a ",
                                                      "*nosuch ", "!!binary ", "!!python/none ",
                                                      "{", "]", "'", "\"", "%YAML 1.1\n",
                                                      "\x00", "\ufeff", "? [a]\n: 1\n",
                                                      "9" * 5000, "[" * 3000]))
        .map(lambda t: text[:t[0]] + t[1] + text[t[0]:]),
        st.lists(st.integers(0, max(len(lines) - 1, 0)), min_size=1, max_size=4)
        .map(lambda drop: "".join(x for i, x in enumerate(lines) if i not in drop)),
        st.sampled_from([text + "\n" + text, text.replace("  ", "\t"), "", "---\n...\n",
                         text + f"\nbomb: {alias_bomb(9)}\n",
                         text.replace("chain: [", f"chain: [{alias_bomb(9)}, ", 1),
                         text.replace("nodes:", f"entry: {alias_bomb(9)}\n    nodes:", 1),
                         "a: &a [*a]\n" + text]),
    )


# -- what every failure must look like --------------------------------------------------

def assert_clear(issues: list[str], *sources: str) -> None:
    """Every problem is one short line that starts with the file's name."""
    assert issues
    for line in issues:
        assert "\n" not in line, line
        assert len(line) <= MAX_LINE, line[:300]
        assert line.startswith(tuple(f"{s}: " for s in sources)), line[:300]
        assert line.split(": ", 1)[1].strip(), line


def deployment_outcome(data: Any) -> Deployment | None:
    try:
        return Deployment.from_dict(data, source="fuzz.yaml", base_dir=EXAMPLES, check_env=False)
    except DeploymentError as e:
        assert_clear(e.issues, "fuzz.yaml")
        return None


def graphs_outcome(data: Any) -> GraphSet | None:
    try:
        return parse_graphs(data, "fuzz.yaml")
    except GraphError as e:
        assert_clear(e.issues, "fuzz.yaml")
        return None


def in_file(text: str, fn: Callable[[Path], Any], name: str = "fuzz.yaml") -> Any:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_text(text)
        return fn(path)


# -- deployments ------------------------------------------------------------------------

@FUZZ
@given(mutated(DEPLOYMENTS))
def test_a_broken_deployment_gives_deployment_errors(data: Any) -> None:
    dep = deployment_outcome(data)
    if dep is not None:  # still valid: it round-trips
        dumped = dep.model_dump(by_alias=True, exclude_unset=True)
        assert deployment_outcome(yaml.safe_load(yaml.safe_dump(dumped))) == dep


@pytest.mark.parametrize("name", sorted(DEPLOYMENTS))
def test_the_example_deployments_round_trip(name: str) -> None:
    dep = load_deployment(EXAMPLES / name, check_env=False)
    dumped = yaml.safe_dump(dep.model_dump(by_alias=True, exclude_unset=True))
    again = in_file(dumped, lambda p: load_deployment(p, check_env=False))
    assert again.model_dump() == dep.model_dump()  # == compares the file's path too
    assert again.rule_params() == dep.rule_params()


def _deployment_text_outcome(text: str) -> None:
    def load(path: Path) -> None:
        try:
            load_deployment(path, check_env=False)
        except DeploymentError as e:
            assert_clear(e.issues, str(path))
    in_file(text, load)


@FUZZ_FILES
@given(st.sampled_from(sorted(DEPLOYMENTS)).flatmap(
    lambda n: text_mutations((EXAMPLES / n).read_text())))
def test_a_broken_deployment_text_gives_deployment_errors(text: str) -> None:
    _deployment_text_outcome(text)


# -- graphs -----------------------------------------------------------------------------

@FUZZ
@given(mutated(GRAPHS))
def test_a_broken_graph_file_gives_graph_errors(data: Any) -> None:
    gs = graphs_outcome(data)
    if gs is not None:
        assert graphs_outcome(gs.model_dump(exclude_unset=True)) == gs


@FUZZ
@given(graph_with_extra_edge())
def test_an_edge_back_or_to_nowhere_is_named(case: tuple[dict[str, Any], str, str]) -> None:
    data, name, target = case
    with pytest.raises(GraphError) as e:
        parse_graphs(data, "fuzz.yaml")
    assert_clear(e.value.issues, "fuzz.yaml")
    if target == "nosuch":
        want = (f"graph '{name}': node '", "': edge to 'nosuch', which is not a node of this "
                "graph (add it under nodes, or use port:NAME or drop)")
    else:
        want = (f"graph '{name}': cycle ", "a graph must not loop; remove one of its edges (or "
                "end the path with port:NAME or drop)")
    assert any(want[0] in m and m.endswith(want[1]) for m in e.value.issues), e.value.issues


@st.composite
def dags(draw: st.DrawFn) -> dict[str, list[str]]:
    """A valid graph: services s0..sN, edges only forward, s0 reaches all."""
    n = draw(st.integers(1, 8))
    nodes: dict[str, list[str]] = {}
    for i in range(n):
        later = [f"s{j}" for j in range(i + 1, n)]
        hops = draw(st.lists(st.sampled_from(later), unique=True)) if later else []
        if i + 1 < n and f"s{i + 1}" not in hops:
            hops.append(f"s{i + 1}")  # a path through all: every node is reached
        nodes[f"s{i}"] = hops + [draw(st.sampled_from(["drop", "port:out"]))]
    return nodes


@FUZZ
@given(dags(), st.data())
def test_generated_graphs_round_trip_and_cycles_are_named(nodes: dict[str, list[str]],
                                                          data: st.DataObject) -> None:
    gs = parse_graphs({"graphs": [{"name": "g", "nodes": nodes}]}, "fuzz.yaml")
    rpc = to_rpc(gs.graphs[0])
    assert rpc == {"name": "g", "entry": "s0", "nodes": nodes}
    assert to_rpc(parse_graphs({"graphs": [rpc]}).graphs[0]) == rpc
    # an edge from a node back to one before it (or itself) closes a cycle
    names = list(nodes)
    j = data.draw(st.integers(0, len(names) - 1))
    i = data.draw(st.integers(0, j))
    cyclic = {k: list(v) for k, v in nodes.items()}
    cyclic[names[j]].insert(0, names[i])
    with pytest.raises(GraphError) as e:
        parse_graphs({"graphs": [{"name": "g", "nodes": cyclic}]}, "fuzz.yaml")
    assert_clear(e.value.issues, "fuzz.yaml")
    assert any(f"graph 'g': cycle {names[i]} -> " in m and m.endswith(
        "a graph must not loop; remove one of its edges (or end the path with port:NAME or "
        "drop)") for m in e.value.issues), e.value.issues


@FUZZ_FILES
@given(st.sampled_from(sorted(GRAPHS)).flatmap(
    lambda n: text_mutations((EXAMPLES / "graphs" / n).read_text())))
def test_a_broken_graph_text_gives_graph_errors(text: str) -> None:
    def load(path: Path) -> None:
        try:
            load_graphs(path)
        except GraphError as e:
            assert_clear(e.issues, str(path))
    in_file(text, load)


# -- placement input --------------------------------------------------------------------

def placement_outcome(topology: Any, flows: Any) -> None:
    try:
        problem_from_dicts(topology, flows, topology_source="topo.yaml",
                           flows_source="flows.yaml")
    except InputError as e:
        assert_clear(e.issues, "topo.yaml", "flows.yaml")


@FUZZ
@given(mutated({"t": TOPOLOGY}), mutated({"f": FLOWS}), st.sampled_from(["t", "f", "both"]))
def test_broken_placement_input_gives_input_errors(topology: Any, flows: Any, which: str
                                                   ) -> None:
    placement_outcome(topology if which != "f" else TOPOLOGY, flows if which != "t" else FLOWS)


@FUZZ_FILES
@given(text_mutations((EXAMPLES / "placement" / "flows.yaml").read_text()))
def test_broken_placement_text_gives_input_errors(text: str) -> None:
    def load(path: Path) -> None:
        try:
            read_data(path)
        except InputError as e:
            assert_clear(e.issues, str(path))
    in_file(text, load)


# -- the CLI ----------------------------------------------------------------------------

def assert_cli_refuses(res: Any, path: Path) -> None:
    assert res.exit_code == 1, (res.exit_code, res.output, res.exception)
    assert not isinstance(res.exception, Exception) or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output + res.stderr
    lines = res.stderr.splitlines()
    assert lines and all(str(path) in line for line in lines), res.stderr


@settings(FUZZ, max_examples=40)
@given(st.sampled_from(sorted(DEPLOYMENTS)).flatmap(
    lambda n: text_mutations((EXAMPLES / n).read_text())))
def test_sluice_check_refuses_a_broken_file_in_lines(text: str) -> None:
    def check(path: Path) -> None:
        # the command's verdict is the loader's (programs checked too)
        try:
            load_deployment(path)
        except DeploymentError:
            valid = False
        else:
            valid = True
        event("valid" if valid else "refused")
        res = runner.invoke(app, ["check", str(path)])
        if valid:
            assert (res.exit_code, res.stderr) == (0, ""), res.output
            assert res.stdout.startswith(f"{path}: ok: node "), res.stdout
        else:
            assert_cli_refuses(res, path)
    in_file(text, check)


@settings(FUZZ, max_examples=40)
@given(st.sampled_from(sorted(GRAPHS)).flatmap(
    lambda n: text_mutations((EXAMPLES / "graphs" / n).read_text())))
def test_sluice_graph_apply_dry_run_refuses_a_broken_file_in_lines(text: str) -> None:
    def check(path: Path) -> None:
        # the command's verdict is the loader's
        try:
            load_graphs(path)
        except GraphError:
            valid = False
        else:
            valid = True
        event("valid" if valid else "refused")
        res = runner.invoke(app, ["graph", "apply", "--dry-run", str(path)])
        if valid:
            assert (res.exit_code, res.stderr) == (0, ""), res.output
            assert res.stdout.startswith(f"{path}: ok: "), res.stdout
        else:
            assert_cli_refuses(res, path)
    in_file(text, check)


@settings(FUZZ, max_examples=25)
@given(text_mutations((EXAMPLES / "placement" / "flows.yaml").read_text()))
def test_sluice_place_refuses_a_broken_flows_file(text: str) -> None:
    def check(path: Path) -> None:
        topo = EXAMPLES / "placement" / "topology.yaml"
        try:
            read_data(path)
        except InputError:
            res = runner.invoke(place_app, [str(topo), str(path)])
            assert res.exit_code == 1, (res.output, res.exception)
            assert "Traceback" not in res.output + res.stderr
            assert res.stderr.startswith(f"error: {path}: "), res.stderr
    in_file(text, check)


# -- regressions: one per bug the fuzzing found -----------------------------------------

def deployment_errors(text: str) -> list[str]:
    def load(path: Path) -> list[str]:
        with pytest.raises(DeploymentError) as e:
            load_deployment(path, check_env=False)
        return [m.replace(f"{path}: ", "d.yaml: ", 1) for m in e.value.issues]
    return in_file(text, load)


def test_a_list_as_a_key_is_a_yaml_error_not_a_type_error() -> None:
    # was: TypeError: unhashable type: 'list' from the duplicate-key check
    assert deployment_errors("? [a, b]\n: 1\nports: []\nchain: [drop]\n") == [
        "d.yaml: line 1, column 3: invalid YAML (a list cannot be a key: keys are names "
        "(write the key in quotes if it is meant as one))"]
    assert deployment_errors("ports: []\n? {a: 1}\n: 1\n") == [
        "d.yaml: line 2, column 3: invalid YAML (a mapping cannot be a key: keys are names "
        "(write the key in quotes if it is meant as one))"]


def test_nesting_too_deep_is_a_yaml_error_not_a_recursion_error() -> None:
    # was: RecursionError from the YAML parser
    text = "ports: " + "[" * 3000 + "]" * 3000 + "\nchain: [drop]\n"
    assert deployment_errors(text) == [
        "d.yaml: invalid YAML (lists or mappings nested too deep to read): nest them less "
        "deeply"]
    with pytest.raises(GraphError) as e:
        in_file("graphs: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", load_graphs)
    # in_file() writes fuzz.yaml in a fresh temporary folder
    assert re.fullmatch(re.escape(tempfile.gettempdir()) + r"/[^/]+/fuzz\.yaml: "
                        + re.escape("invalid YAML (lists or mappings nested too deep to "
                                    "read): nest them less deeply"), str(e.value)), str(e.value)


def test_a_number_of_5000_digits_is_a_yaml_error_not_a_value_error() -> None:
    # was: ValueError: Exceeds the limit (4300 digits) for integer string conversion
    assert deployment_errors("node: {ring_size: " + "9" * 5000 + "}\nports: []\n") == [
        "d.yaml: line 1, column 19: invalid YAML (a number of 5000 characters is too long to "
        "read: use a smaller number)"]


def test_a_character_yaml_refuses_is_one_line() -> None:
    # was: "invalid YAML (unacceptable character ...\n  in "<unicode string>", position 8)"
    assert deployment_errors("ports: [\x00]\n") == [
        "d.yaml: invalid YAML (character #x0000 at position 8: special characters are not "
        "allowed): remove it"]
    with pytest.raises(InputError) as e:
        in_file("services: [\x07]\n", read_data)
    assert e.value.issues[0].endswith(": not valid YAML: character #x0007 at position 11: "
                                      "special characters are not allowed; remove it")


def test_a_key_that_is_not_a_name_says_so() -> None:
    # was: "None: Keys should be strings (got nothing (null))"
    assert deployment_errors("~: 1\nnode: {1: x}\nports: []\nchain: [drop]\n") == [
        "d.yaml: node: a number (1) cannot be a key: keys are names (write the key in quotes "
        "if it is meant as one)",
        "d.yaml: nothing (null) cannot be a key: keys are names (write the key in quotes if "
        "it is meant as one)"]


def test_an_alias_bomb_is_not_expanded_into_the_message() -> None:
    # was: the repr of all 10**6 items in the message (10**9 with 9 levels: no end)
    bomb = alias_bomb(6)
    t0 = time.monotonic()
    assert deployment_errors(f"node: {{mode: {bomb}}}\nports: []\nchain: [drop]\n") == [
        "d.yaml: node.mode: a list is not one of: shared, poll"]
    graph = f"graphs:\n  - name: g\n    nodes: {{a: [drop]}}\n    match: [{{in_port: {bomb}}}]\n"
    with pytest.raises(GraphError) as e:
        in_file(graph, load_graphs)
    assert e.value.issues[0].endswith(
        ": graphs[0].match[0].in_port: graph 'g': a list is not a port name: give the name "
        "of a port of the node, e.g. in")
    assert time.monotonic() - t0 < 5


def test_an_alias_bomb_in_a_rule_field_is_not_walked() -> None:
    # was: model_dump() copied the rule's fields, walking all 10**7 items (seconds, GBs)
    graph = (f"graphs:\n  - name: g\n    nodes: {{a: [drop]}}\n"
             f"rules: [{{graph: g, src: {alias_bomb(7)}}}]\n")
    t0 = time.monotonic()
    with pytest.raises(GraphError) as e:
        in_file(graph, load_graphs)
    assert e.value.issues[0].endswith(
        ": rules[0].src: rule for graph 'g': expected an address or prefix such as 10.0.0.0/8 "
        "or 2001:db8::/32, got a list")
    assert time.monotonic() - t0 < 2


def graph_issue(match: dict[str, Any]) -> list[str]:
    with pytest.raises(GraphError) as e:
        parse_graphs({"graphs": [{"name": "g", "nodes": {"a": ["drop"]}, "match": [match]}]},
                     "g.yaml")
    return e.value.issues


def test_digits_int_cannot_read_are_not_ports_or_protocols() -> None:
    # was: ValueError from int('²') ('²'.isdigit() is true) and from int() of 5000 digits
    assert graph_issue({"dport": "²"}) == [
        "g.yaml: graphs[0].match[0].dport: graph 'g': '²' is not a port 0-65535 or a range "
        "N-M such as 1024-65535"]
    assert graph_issue({"proto": "9" * 5000}) == [
        "g.yaml: graphs[0].match[0].proto: graph 'g': "
        "9999999999999999999999999999999999999999999999999999999...99 is not an IP protocol "
        "number: use 0 to 255"]
    assert graph_issue({"sport": "9" * 5000}) == [
        "g.yaml: graphs[0].match[0].sport: graph 'g': "
        "9999999999999999999999999999999999999999999999999999999...99 is not a port: ports go "
        "from 0 to 65535"]
    assert graph_issue({"dport": "1-" + "9" * 5000})[0].endswith(
        "...99' is not a port 0-65535 or a range N-M such as 1024-65535")
    assert graph_issue({"proto": "²"})[0].startswith(
        "g.yaml: graphs[0].match[0].proto: graph 'g': '²' is not a protocol sluiced knows")


def flows_with(generate: dict[str, Any]) -> dict[str, Any]:
    return {**FLOWS, "generate": [{"count": 2, "class": "web", **generate}]}


def input_errors(topology: Any, flows: Any) -> list[str]:
    with pytest.raises(InputError) as e:
        problem_from_dicts(topology, flows)
    return e.value.issues


def test_a_generated_bandwidth_range_is_checked() -> None:
    # was: ValueError (empty range for randrange), OverflowError (int(inf)), and a
    # nan bandwidth accepted
    assert input_errors(TOPOLOGY, flows_with({"bandwidth": [80, 21]})) == [
        "flows: generate[0].bandwidth: [80, 21] is an empty range: write [21, 80]"]
    assert input_errors(TOPOLOGY, flows_with({"bandwidth": [1, math.inf]}))[0] == (
        "flows: generate[0].bandwidth: [1, inf] is not a range of finite numbers: give a "
        "number >= 0, or a range [low, high] of whole numbers")
    assert input_errors(TOPOLOGY, flows_with({"bandwidth": math.nan}))[0] == (
        "flows: generate[0].bandwidth: nan is not a finite number: give a number >= 0, or a "
        "range [low, high] of whole numbers")


def test_a_union_names_keys_not_pydantic_members() -> None:
    # was: "flows: generate.list[function-after[_class_or_chain(), GenerateSpec]].0.count: ..."
    # and "topology: nodes.0.NodeSpec.pos: ..." followed by "topology: nodes.0.str: Input
    # should be a valid string"
    assert input_errors(TOPOLOGY, flows_with({"count": 0})) == [
        "flows: generate[0].count: must be at least 1, got 0"]
    assert input_errors({**TOPOLOGY, "nodes": [{"name": "a", "pos": [1, 2, 3]}]}, FLOWS) == [
        "topology: nodes[0].pos: expected [x, y] (2 numbers), got 3 numbers"]


def test_sizes_that_would_not_finish_are_refused() -> None:
    # was: a synthetic topology of 10**6 nodes or 10**9 generated flows ran out
    # of memory or time before any check
    assert input_errors({"synthetic": {"nodes": 10**6, "edges": 10**6}}, FLOWS) == [
        "topology: synthetic.nodes: must be at most 1000, got 1000000"]
    assert input_errors(TOPOLOGY, flows_with({"count": 10**9}))[0] == (
        "flows: generate[0].count: must be at most 100000, got 1000000000")


def test_placement_files_empty_deep_or_with_long_numbers() -> None:
    # was: "expected a mapping at the top level, got NoneType", RecursionError, ValueError
    assert input_errors(None, FLOWS) == [
        "topology: the file is empty: give nodes and links, topohub or synthetic"]
    with pytest.raises(InputError) as e:
        in_file("services: " + "[" * 3000 + "]" * 3000 + "\n", read_data)
    assert e.value.issues[0].endswith(": not valid YAML: lists or mappings nested too deep "
                                      "to read; nest them less deeply")
    with pytest.raises(InputError) as e:
        in_file('{"services": ' + "9" * 5000 + "}", read_data, "f.json")
    assert e.value.issues[0].endswith(": not valid JSON: Exceeds the limit (4300 digits) for "
                                      "integer string conversion: use a smaller number")
