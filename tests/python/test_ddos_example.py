"""examples/ddos.yaml validates, and docs/ddos.md shows it as it is."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sluice.core.deploy import load_deployment

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


def test_example_threshold_alarms_the_attack_and_no_client_at_any_usual_rate() -> None:
    """The capture is replayed as fast as the machine goes, so the threshold must
    separate the attack prefix from the busiest client's /24 over a wide range of
    replay rates: slow builds (~0.1 Mpps) to fast servers (~9 Mpps). With --pps
    10000 the busiest clients alarmed from 3.2 Mpps, which a two-core VM reached."""
    from collections import Counter

    from sluice.runtime import traces

    dep = load_deployment(REPO / "examples" / "ddos.yaml", check_env=False)
    args = dep.nfs[0].args
    pps = int(args[args.index("--pps") + 1])
    frames = traces.ddos_mix()  # what `sluice trace gen --ddos` writes
    to_servers: Counter[bytes] = Counter()
    for f in frames:
        # IPv4 to 192.168.0.0/24 (--protect), counted per source /24
        if f[12:14] == b"\x08\x00" and f[30:33] == bytes([192, 168, 0]):
            to_servers[f[26:29]] += 1
    attack = to_servers.pop(bytes([10, 66, 6]))
    busiest = max(to_servers.values())
    assert (len(frames), attack, busiest) == (6000, 2119, 19)
    # replay rate (packets/s) at which the attack reaches --pps, and the busiest client
    lowest, highest = pps * len(frames) / attack, pps * len(frames) / busiest
    assert lowest <= 100_000, lowest
    assert highest >= 9_000_000, highest
