"""`sluice graph apply` of a deployment file that has no graphs and no
rules (examples/demo.yaml): refused with what to use instead, where it
used to apply nothing and say only that the node's flows keep their graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.deploy import load_graphs
from sluice.core.graph import GraphError

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"


def test_a_deployment_without_graphs_is_refused(tmp_path: Path) -> None:
    want = (f"{DEMO}: a deployment with no graphs and no rules: nothing for `sluice graph "
            f"apply` to apply; its chain is set by `sluice chain set`, the whole file by "
            f"`sluice apply {DEMO}`")
    with pytest.raises(GraphError) as e:
        load_graphs(DEMO)
    assert e.value.issues == [want]
    # before connecting: no node needed, --dry-run or not
    for extra in ([], ["--dry-run"]):
        r = CliRunner().invoke(app, ["graph", "apply", str(DEMO), *extra,
                                     "--socket", str(tmp_path / "none.sock")])
        assert (r.exit_code, r.stdout, r.stderr) == (1, "", want + "\n")


def test_a_deployment_with_rules_only_is_still_a_graph_file(tmp_path: Path) -> None:
    p = tmp_path / "d.yaml"
    p.write_text('ports: [{name: out, device: net_null0}]\n'
                 'nfs: [{name: f, program: sluice-forward, service: forward}]\n'
                 'chain: [forward, "port:out"]\n'
                 'rules: [{graph: default, proto: udp}]\n')
    gs = load_graphs(p)
    assert (gs.graphs, gs.rule_params()) == ([], [{"graph": "default", "priority": 0,
                                                   "proto": "udp"}])
