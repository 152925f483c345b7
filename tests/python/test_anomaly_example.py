"""examples/anomaly.yaml loads, its graph validates against its own NFs and
ports, its rule and firewall files are the ones it names, and its detector
threshold separates the flood from everyone else in the capture."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import yaml

from sluice.core.deploy import load_deployment
from sluice.core.graph import validate
from sluice.runtime import traces

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "anomaly.yaml"


def test_example_loads_and_its_graph_validates() -> None:
    dep = load_deployment(EXAMPLE, check_env=False)  # the structure; programs need a build
    assert [(n.name, n.service) for n in dep.nfs] == [
        ("fw", "firewall"), ("sampler", "sampler"), ("detect", "ddos-detect"),
        ("sandbox", "sandbox"), ("ids", "ids"), ("scrubber", "scrubber")]
    assert dep.nfs[-1].replicas == 0
    (pol,) = dep.policies
    assert (pol.on, pol.key, pol.from_, pol.action, pol.nf, pol.args, pol.once) == (
        "message", "alarm", "ddos-detect", "start", "scrubber", ["--prefix", "{value}"], True)
    (g,) = dep.graphs
    assert g.name == "anomaly" and g.entry_node() == "firewall"
    assert g.nodes["sandbox"] == ["drop"]  # what the IDS diverts goes nowhere else
    # the scrubber is a next hop of the firewall too: its RequestMe takes the
    # prefix's flows there, sampled or not
    assert "scrubber" in g.nodes["firewall"] and "scrubber" in g.nodes["ddos-detect"]
    services = sorted({n.service for n in dep.nfs})
    assert validate(dep.graphs, [], services, [p.name for p in dep.ports]) == []
    # the files its NFs read are beside it
    for nf in dep.nfs:
        for a in nf.args:
            if a.endswith((".rules", ".yaml")):
                assert (EXAMPLE.parent / a).is_file(), a
    ids = next(n for n in dep.nfs if n.service == "ids")
    rules = (EXAMPLE.parent / ids.args[ids.args.index("--rules") + 1]).read_text()
    assert re.search(r"^divert .*content:\"/etc/passwd\"; divert:sandbox;.*sid:1001;", rules,
                     re.M)
    assert dep.ports[0].device == "net_pcap0,rx_pcap=traces/anomaly.pcap,infinite_rx=1"


def test_doc_shows_the_example() -> None:
    doc = (REPO / "docs" / "anomaly.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert blocks, "no yaml block in docs/anomaly.md"
    assert yaml.safe_load(blocks[0]) == yaml.safe_load(EXAMPLE.read_text()), \
        "docs/anomaly.md shows a different examples/anomaly.yaml: copy the file's keys into it"


def test_threshold_alarms_the_flood_and_no_one_else_at_usual_rates() -> None:
    """Per loop of the capture, what the detector counts (to the servers, per
    source /24), if the sampler takes about a quarter of each prefix's flows
    (the flood's 256, the exploits' 40) and all of a client's (one flow)."""
    dep = load_deployment(EXAMPLE, check_env=False)
    args = next(n for n in dep.nfs if n.service == "ddos-detect").args
    pps = int(args[args.index("--pps") + 1])
    frames = traces.anomaly_mix()
    to_servers: Counter[bytes] = Counter(
        f[26:29] for f in frames if f[12:14] == b"\x08\x00" and f[30:33] == bytes([192, 168, 0]))
    flood, exploits = to_servers.pop(bytes([10, 66, 6])), to_servers.pop(bytes([10, 77, 7]))
    busiest = max(to_servers.values())
    assert (len(frames), flood, exploits, busiest) == (8000, 2700, 200, 23)
    flood_from = pps * len(frames) / (flood / 4)  # replay rate at which the flood alarms
    assert flood_from <= 150_000, flood_from
    assert pps * len(frames) / (exploits / 4) >= 1_500_000
    assert pps * len(frames) / busiest >= 3_000_000


def test_trace_gen_anomaly_writes_the_example_capture(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "anomaly.pcap"
    line = traces.generate(out, anomaly=True)
    assert line == (f"{out}: 8000 packets, 496 flows, anomaly mix (DDoS mix with 2700 flood "
                    f"packets from 10.66.6.0/24; 40 exploit connections from 10.77.7.0/24), "
                    f"1356284 bytes of frames (seed 1)")
    assert traces.read_pcap(out) == traces.anomaly_mix()
    for bad in ({"ddos": True}, {"size": 64}, {"syn": True}, {"clients": 3}):
        try:
            traces.generate(tmp_path / "x.pcap", anomaly=True, **bad)  # type: ignore[arg-type]
        except traces.TraceError as e:
            assert str(e) == ("--anomaly makes the anomaly-detection mix, which takes "
                              "--packets and --seed only"), e
        else:
            raise AssertionError(f"{bad} with --anomaly was taken")


def test_check_of_a_copy_names_the_anomaly_capture_command(tmp_path: Path) -> None:
    f = tmp_path / "anomaly.yaml"
    f.write_text(EXAMPLE.read_text().replace("name: anomaly,", "name: copy,"))
    for name in ("anomaly.rules", "anomaly-fw.yaml"):
        (tmp_path / name).write_text((EXAMPLE.parent / name).read_text())
    try:
        load_deployment(f)
    except Exception as e:  # noqa: BLE001 (DeploymentError, checked by its text)
        want = (f"ports[0].device: rx_pcap=traces/anomaly.pcap: no file {tmp_path}/traces/"
                f"anomaly.pcap (relative paths start at the deployment file's folder): fix the "
                f"path, or make the anomaly-detection capture (a flood and exploits) with "
                f"`sluice trace gen --anomaly {tmp_path}/traces/anomaly.pcap`")
        assert want in str(e), e
    else:
        raise AssertionError("a copy without its capture was taken")
