"""Input files, topohub topologies and the `place` command end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from conftest import EXAMPLES, ROOT
from typer.testing import CliRunner

from sluice.placement import cli
from sluice.placement.cli import place
from sluice.placement.division import ORDERS
from sluice.placement.io import InputError, load_problem, problem_from_dicts

app = typer.Typer()
app.command()(place)
runner = CliRunner()

TOPO = {"nodes": ["A", "B", {"name": "C", "cores": 4}], "links": [["A", "B"], ["B", "C"]]}
FLOWS = {
    "services": {"s": 2},
    "chains": {"web": ["s"]},
    "flows": [{"id": "f1", "class": "web", "ingress": "A", "egress": "C", "bandwidth": 10}],
}


def summary(output: str) -> dict[str, str]:
    """The rows of the `place` summary table that fit on one line: label -> value."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 2 and all(cells):
            rows.setdefault(cells[0], cells[1])
    return rows


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


# ----- loading ------------------------------------------------------------------------


def test_example_files_load():
    p = load_problem(EXAMPLES / "topology.yaml", EXAMPLES / "flows.yaml")
    assert p.graph.number_of_nodes() == 6
    assert len(p.flows) == 21  # 9 listed + 12 generated
    assert p.cores("core-1") == 4
    assert p.flow_by_id["video-1"].chain == ("firewall", "transcoder")
    assert p.services["transcoder"].flows_per_core == 2


def test_generated_flows_follow_the_seed():
    d = {**FLOWS, "generate": {"count": 5, "class": "web", "bandwidth": [1, 9]}}
    a = problem_from_dicts(TOPO, d, seed=1)
    b = problem_from_dicts(TOPO, d, seed=1)
    c = problem_from_dicts(TOPO, d, seed=2)
    key = [(f.ingress, f.egress, f.bandwidth) for f in a.flows]
    assert key == [(f.ingress, f.egress, f.bandwidth) for f in b.flows]
    assert key != [(f.ingress, f.egress, f.bandwidth) for f in c.flows]


def test_topohub_and_synthetic_topologies():
    p = problem_from_dicts({"topohub": "sndlib/geant", "defaults": {"cores": 2}}, {"services": {}})
    assert p.graph.number_of_nodes() == 22 and p.graph.number_of_edges() == 36
    assert all(p.cores(n) == 2 for n in p.nodes)
    assert all(p.delay(u, v) > 0 for u, v in p.graph.edges)
    s = problem_from_dicts({"synthetic": {"nodes": 22, "edges": 64, "seed": 3}}, {"services": {}})
    assert s.graph.number_of_edges() == 64


@pytest.mark.parametrize(
    ("topo", "flows", "message"),
    [
        (TOPO, {**FLOWS, "flows": [{**FLOWS["flows"][0], "ingress": "Q"}]},
         "flows: flows[0].ingress: 'Q' is not a node of the topology (nodes: A, B, C): "
          "fix the name or add the node to the topology"),
        (TOPO, {**FLOWS, "chains": {"web": ["nope"]}},
         "flows: chains.web[0]: 'nope' is not under services (services: s): add it there or "
         "fix the name"),
        (TOPO, {**FLOWS, "flows": [{**FLOWS["flows"][0], "class": "mail"}]},
         "flows: flows[0].class: 'mail' is not under chains (chains: web): add it there or fix "
         "the name"),
        (TOPO, {**FLOWS, "flows": [{**FLOWS["flows"][0], "bandwidth": -1}]},
         "flows: flows[0].bandwidth: must be at least 0, got -1"),
        (TOPO, {**FLOWS, "flows": [{**FLOWS["flows"][0], "colour": "red"}]},
         "flows: flows[0].colour: unknown key (known keys here: id, class, chain, ingress, "
         "egress, bandwidth, max_delay)"),
        ({"nodes": ["A"], "links": [["A", "Z"]]}, FLOWS,
         "topology: links[0].b: 'Z' is not listed under nodes (nodes: A): add it there or fix "
         "the name"),
        ({"topohub": "sndlib/atlantis"}, FLOWS,
         "topology: topohub: topohub has no topology 'sndlib/atlantis' (sndlib/ has abilene, "
         "atlanta, brain, cost266, dfn-bwin, dfn-gwin, di-yuan, france, ... (26 in all)); did "
         "you mean 'sndlib/atlanta'?"),
        ({"nodes": ["A"], "topohub": "sndlib/geant"}, FLOWS,
         "topology: topohub and nodes/links are given: give only one of nodes and links, "
         "topohub or synthetic"),
        ({"synthetic": {"nodes": 5, "edges": 50}}, FLOWS,
         "topology: synthetic: a connected simple graph on 5 nodes has between 4 and 10 links; "
         "50 were asked for: set edges in that range"),
        (TOPO, {**FLOWS, "flows": [FLOWS["flows"][0], FLOWS["flows"][0]]},
         "flows: flows[1].id: 'f1' is already the id of flows[0]: give every flow its own id"),
        ([1, 2], FLOWS,
         "topology: expected a mapping (nodes and links, topohub or synthetic) at the top "
         "level, got a list of 2 items"),
    ],
)
def test_bad_input_names_the_problem(topo, flows, message):
    with pytest.raises(InputError) as err:
        problem_from_dicts(topo, flows)
    assert err.value.issues == [message]


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_problem(tmp_path / "missing.yaml", tmp_path / "f.yaml")
    bad = write(tmp_path, "t.yaml", "nodes: [A, B\nlinks: []\n")
    with pytest.raises(InputError, match=r"not valid YAML: .* line \d+"):
        load_problem(bad, bad)
    dup = write(tmp_path, "d.yaml", "nodes: [A, B]\nlinks: []\nnodes: [C]\n")
    with pytest.raises(InputError) as err:
        load_problem(dup, dup)
    assert str(err.value) == (f"{dup}: not valid YAML: key 'nodes' is given twice in one "
                              f"mapping at line 3 column 1")
    badj = write(tmp_path, "t.json", '{"nodes": [}')
    with pytest.raises(InputError, match="not valid JSON: .* line 1"):
        load_problem(badj, badj)


# ----- CLI -----------------------------------------------------------------------------


def test_cli_example_end_to_end(tmp_path):
    out = tmp_path / "plan.json"
    png = tmp_path / "plan.png"
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "--algo", "greedy", "--out", str(out), "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == "example-6: 6 nodes, 7 links, 16 cores, 21 flows -> greedy"
    rows = summary(res.stdout)
    assert {k: rows[k] for k in ("algorithm", "status", "flows accepted", "cores used",
                                 "validator")} == {
        "algorithm": "greedy", "status": "heuristic", "flows accepted": "20 of 21",
        "cores used": "15 of 16", "validator": "OK"}
    data = json.loads(out.read_text())
    assert data["algorithm"] == "greedy"
    assert data["flows_offered"] == 21
    assert data["flows_accepted"] == len(data["flows"]) == 20
    assert data["rejected"] == [{
        "flow": "too-fast", "constraint": "delay bound (6)",
        "reason": "the fastest route from edge-a through nodes able to run firewall to dc-2 "
                  "takes 6, the flow allows 3"}]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_division_shows_rejections_and_writes_stdout_json():
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "--out", "-", "-t", "30"])
    assert res.exit_code == 0, res.output
    start = res.stdout.index("{")
    data = json.loads(res.stdout[start:])
    assert data["algorithm"] == "division"
    assert data["details"]["batches"] == 4


def test_cli_division_order_option():
    args = [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"), "--out", "-", "-t", "30"]
    res = runner.invoke(app, [*args, "--order", "input"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout[res.stdout.index("{"):])
    assert data["details"]["order"] == "input"
    res = runner.invoke(app, [*args, "--order", "random"])
    assert res.exit_code == 2
    assert res.stderr == "error: unknown order 'random'; choose one of: constrained, input\n"
    assert res.stdout == ""
    assert set(cli.ORDERS) == set(ORDERS)


def test_cli_affinity_reports_protection(tmp_path):
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "-a", "affinity"])
    assert res.exit_code == 0, res.output
    rows = summary(res.stdout)
    assert (rows["flows accepted"], rows["validator"]) == ("11 of 21", "OK")
    # every accepted flow is protected; 10 flows cannot be protected or placed
    assert rows["protected flows"] == "11 (backup route for every single node"
    assert "rejected flows (10)" in [ln.rstrip() for ln in res.stdout.splitlines()]


def test_cli_topohub_reference(tmp_path):
    flows = write(tmp_path, "f.yaml", {
        "services": {"s": 4},
        "flows": [{"chain": ["s"], "ingress": "at1.at", "egress": "de1.de", "bandwidth": 10}],
    })
    res = runner.invoke(app, ["topohub:sndlib/geant", str(flows), "-a", "greedy"])
    assert res.exit_code == 0, res.output
    assert summary(res.stdout)["flows accepted"] == "1 of 1"


def test_cli_bad_inputs_give_a_clear_message(tmp_path):
    flows = write(tmp_path, "f.yaml", {**FLOWS, "flows": [{**FLOWS["flows"][0], "egress": "X"}]})
    topo = write(tmp_path, "t.yaml", TOPO)
    res = runner.invoke(app, [str(topo), str(flows)])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {flows}: flows[0].egress: 'X' is not a node of the topology (nodes: A, B, C): "
         "fix the name or add the node to the topology",
        "error: fix the file(s) above; docs/placement.md describes the formats"]
    assert "Traceback" not in res.output
    # a flows file with nothing to place: said, not a "0 of 0" run
    empty = write(tmp_path, "e.yaml", {**FLOWS, "flows": []})
    res = runner.invoke(app, [str(topo), str(empty)])
    assert (res.exit_code, res.stdout, res.stderr) == (1, "", (
        f"error: {empty}: no flows to place: list them under flows, or have some made with "
        f"generate (docs/placement.md, \"File formats\")\n"))

    res = runner.invoke(app, [str(tmp_path / "nope.yaml"), str(flows)])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {tmp_path / 'nope.yaml'}: no such file",
        "error: fix the file(s) above; docs/placement.md describes the formats"]

    garbage = write(tmp_path, "g.yaml", "services: {s: 1\n")
    res = runner.invoke(app, [str(topo), str(garbage)])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        f"error: {garbage}: not valid YAML: expected ',' or '}}', but got '<stream end>' at "
        f"line 2 column 1",
        "error: fix the file(s) above; docs/placement.md describes the formats"]

    res = runner.invoke(app, [str(topo), str(topo)])  # a topology given as flows
    assert res.exit_code == 1
    assert res.stderr.splitlines()[:3] == [
        f"error: {topo}: services: missing: this key is required (see docs/placement.md)",
        f"error: {topo}: links: unknown key (known keys here: services, chains, flows, "
        f"generate)",
        f"error: {topo}: nodes: unknown key (known keys here: services, chains, flows, "
        f"generate)"]

    res = runner.invoke(app, [str(topo), str(flows), "--algo", "annealing"])
    assert res.exit_code == 2
    assert res.stderr == ("error: unknown algorithm 'annealing'; choose one of: division, "
                          "milp, greedy, affinity\n")

    res = runner.invoke(app, [str(topo), str(flows), "-t", "0"])
    assert res.exit_code == 2
    assert res.stderr == "error: --time-limit must be a positive number of seconds, got 0\n"


def test_cli_unwritable_output(tmp_path):
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "-a", "greedy", "-o", str(tmp_path / "no" / "such" / "dir.json")])
    assert res.exit_code == 4
    # found before the solve (which may take minutes), and says what to do
    assert res.stderr == (f"error: cannot write {tmp_path / 'no' / 'such' / 'dir.json'}: the "
                          f"folder {tmp_path / 'no' / 'such'} does not exist: create it or give "
                          f"--out a path in an existing folder\n")
    assert res.stdout == ""
    assert not (tmp_path / "no").exists()

    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "-a", "greedy", "--plot", str(tmp_path / "no" / "p.png")])
    assert res.exit_code == 4 and res.stdout == ""
    assert res.stderr == (f"error: cannot write {tmp_path / 'no' / 'p.png'}: the folder "
                          f"{tmp_path / 'no'} does not exist: create it or give --plot a path "
                          f"in an existing folder\n")

    # a folder where the file should be: found when writing, after the solve
    (tmp_path / "plan.json").mkdir()
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "-a", "greedy", "-o", str(tmp_path / "plan.json")])
    assert res.exit_code == 4
    assert res.stderr == (f"error: cannot write {tmp_path / 'plan.json'}: Is a directory: give "
                          f"--out a path you may write to\n")


@pytest.mark.parametrize(("name", "what"), [("p.txt", "a .txt file"),
                                            ("p", "a file without an extension")])
def test_cli_plot_format_is_checked_before_the_solve(tmp_path, name, what):
    # was: matplotlib's ValueError as a traceback after the solve (p.txt), or
    # "placement drawn to p" while the file written was p.png
    res = runner.invoke(app, [str(EXAMPLES / "topology.yaml"), str(EXAMPLES / "flows.yaml"),
                              "-a", "greedy", "--plot", str(tmp_path / name)])
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (f"error: --plot {tmp_path / name}: cannot draw {what}: give a path "
                          f"ending in .png, .svg or .pdf\n")
    assert list(tmp_path.iterdir()) == []


def test_cli_header_counts_in_singular_and_plural(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short names: the header stays on one line
    topo = Path("t.yaml")
    topo.write_text("nodes: [{name: A, cores: 1}, B]\nlinks: [[A, B]]\n")
    flows = Path("f.yaml")
    flows.write_text("services: {s: 1}\nflows: [{chain: [s], ingress: A, egress: B, "
                     "bandwidth: 1}]\n")
    res = runner.invoke(app, [str(topo), str(flows), "-a", "greedy"])
    assert res.exit_code == 0
    assert res.stdout.splitlines()[0] == f"{topo}: 2 nodes, 1 link, 3 cores, 1 flow -> greedy"
    assert "flows accepted                │ 1 of 1" in res.stdout


def test_module_runs_standalone():
    res = subprocess.run([sys.executable, "-m", "sluice.placement.cli", "--help"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert res.returncode == 0
    assert "--algo" in res.stdout and "--time-limit" in res.stdout


def test_place_is_a_plain_function(tmp_path):
    out = tmp_path / "p.json"
    place(EXAMPLES / "topology.yaml", EXAMPLES / "flows.yaml", algo="greedy", out=out)
    assert json.loads(out.read_text())["flows_offered"] == 21
