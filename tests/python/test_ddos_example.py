"""examples/ddos.yaml validates, and docs/ddos.md shows it as it is."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sluice.deploy import load_deployment

REPO = Path(__file__).resolve().parents[2]


def test_example_validates_and_doc_shows_it() -> None:
    path = REPO / "examples" / "ddos.yaml"
    dep = load_deployment(path, check_env=False)  # the structure; programs need a build
    assert [n.name for n in dep.nfs] == ["detect", "fwd", "scrubber"]
    assert dep.nfs[2].replicas == 0
    (pol,) = dep.policies
    assert (pol.on, pol.key, pol.from_, pol.action, pol.nf, pol.args, pol.once) == (
        "message", "alarm", "ddos-detect", "start", "scrubber", ["--prefix", "{value}"], True)
    (g,) = dep.graphs
    assert g.name == "ddos"

    doc = (REPO / "docs" / "ddos.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert blocks, "no yaml block in docs/ddos.md"
    assert yaml.safe_load(blocks[0]) == yaml.safe_load(path.read_text()), \
        "docs/ddos.md shows a different examples/ddos.yaml: copy the file's keys into it"
