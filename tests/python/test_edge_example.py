"""examples/edge.yaml loads, its graphs validate, and docs/edge.md shows it as it is."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sluice.core.deploy import load_deployment

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "edge.yaml"


def test_example_loads_and_graphs_validate() -> None:
    dep = load_deployment(EXAMPLE, check_env=False)  # the structure; programs need a build
    assert [(n.name, n.service) for n in dep.nfs] == [
        ("fw", "firewall"), ("ids", "ids"), ("shaper", "shaper"), ("nat", "nat"),
        ("sandbox", "sandbox")]
    assert [p.name for p in dep.ports] == ["lan", "wan"]
    graphs = {g.name: g for g in dep.graphs}
    assert set(graphs) == {"outbound", "inbound"}
    data = yaml.safe_load(EXAMPLE.read_text())
    nodes = {g["name"]: g["nodes"] for g in data["graphs"]}
    # Outbound the NAT is last, inbound first: the other NFs see LAN addresses both ways.
    assert nodes["outbound"]["nat"] == ["port:wan"]
    assert list(nodes["inbound"])[0] == "nat"
    assert nodes["inbound"]["firewall"][0] == "port:lan"
    for g in nodes.values():
        assert "sandbox" in g["ids"] and g["sandbox"] == ["drop"]
    assert [g["match"] for g in data["graphs"]] == [[{"priority": 10, "in_port": "lan"}],
                                                    [{"priority": 10, "in_port": "wan"}]]


def test_nf_arguments_name_files_that_exist() -> None:
    dep = load_deployment(EXAMPLE, check_env=False)
    args = {n.name: n.args for n in dep.nfs}
    nat = args["nat"]
    assert nat[nat.index("--send") + 1] == "next"
    assert (nat[nat.index("--inside") + 1], nat[nat.index("--outside") + 1]) == ("lan", "wan")
    assert "--stateful" in args["fw"]
    for a in args.values():
        for i, v in enumerate(a[:-1]):
            if v in ("--rules", "--config"):
                assert (EXAMPLE.parent / a[i + 1]).is_file(), a[i + 1]
    rules = (EXAMPLE.parent / "edge" / "ids.rules").read_text()
    assert set(re.findall(r"divert:([\w.-]+);", rules)) == {"sandbox"}


def test_doc_shows_the_example() -> None:
    doc = (REPO / "docs" / "edge.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert blocks, "no yaml block in docs/edge.md"
    assert yaml.safe_load(blocks[0]) == yaml.safe_load(EXAMPLE.read_text()), \
        "docs/edge.md shows a different examples/edge.yaml: copy the file's keys into it"


def test_netns_script_matches_the_files() -> None:
    """The script's addresses are those of the NAT's pool and the firewall's admin rule,
    and it refuses anything but up and down."""
    import subprocess

    script = REPO / "examples" / "edge-netns.sh"
    assert script.stat().st_mode & 0o111, "edge-netns.sh must be executable"
    text = script.read_text()
    consts = dict(re.findall(r"^([A-Z_]+)=([0-9.]+)", text, re.M))
    nat = yaml.safe_load((EXAMPLE.parent / "edge" / "nat.yaml").read_text())
    assert consts["POOL"] == nat["pool"]
    fw = yaml.safe_load((EXAMPLE.parent / "edge" / "fw.yaml").read_text())
    admin = next(r for r in fw["rules"] if r.get("name") == "admin-in")
    assert (consts["ADMIN"], consts["LAN_ADDR"]) == (admin["src"], admin["dst"])
    assert nat["forwards"][0]["inside"] == f"{consts['LAN_ADDR']}:{admin['dport']}"
    r = subprocess.run(["sh", str(script)], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (1, "edge-netns.sh: usage: edge-netns.sh up|down\n")
