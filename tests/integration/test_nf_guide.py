"""docs/nf-guide.md: the NF it shows is built with the command it shows
and does what it says in a real chain."""

from __future__ import annotations

import re
import shlex
import subprocess

from conftest import ROOT, build_dir, deployment, port, wait_drained, wait_until
from packets import read, write
from scapy.all import IP, UDP, Ether, IPv6

GUIDE = ROOT / "docs" / "nf-guide.md"


def test_guide_example_matches_its_file():
    code = re.search(r"```c\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    assert code in (ROOT / "docs" / "examples" / "ttl.c").read_text()


def test_guide_nf_builds_and_decrements_ttl(launch, node, tmp_path):
    cmd = re.search(r"```sh\n(cc .*?)\n```", GUIDE.read_text(), re.S).group(1)
    cmd = cmd.replace("\\\n", " ").replace("build/", f"{build_dir()}/")
    cmd = cmd.replace("-o sluice-ttl", f"-o {tmp_path}/sluice-ttl")
    r = subprocess.run(["sh", "-c", cmd], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{shlex.quote(cmd)}: {r.stderr}"

    frames = [bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", ttl=t) / UDP() / b"data")
              for t in (64, 2, 1, 0, 255)]
    frames.append(bytes(Ether() / IPv6(hlim=1) / UDP()))  # not IPv4: passes unchanged
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "ttl", "program": str(tmp_path / "sluice-ttl"), "service": "ttl"}],
        chain=["ttl", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 20,
               "the capture to be read")
    st = wait_drained(run)
    assert st["nfs"][0]["drops"]["nf_verdict"] == 2  # TTL 1 and 0
    run.stop()
    # TTL 64, 2 and 255 come out one lower with the header checksum
    # recomputed (scapy computes it again once deleted), the rest of each
    # frame as it was; the IPv6 frame unchanged.
    want = []
    for f in frames[:2] + frames[4:5]:
        p = Ether(f)
        p[IP].ttl -= 1
        del p[IP].chksum
        want.append(bytes(p))
    assert [Ether(f)[IP].ttl for f in want] == [63, 1, 254]
    assert read(dst) == want + frames[5:]


def _headers() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "include" / "sluice").glob("*.h")))


def test_guide_names_only_what_the_headers_declare():
    names = set(re.findall(r"\b(sl_[a-z0-9_]+|SL_[A-Z0-9_]+)\b", GUIDE.read_text()))
    assert {"sl_nf_main", "sl_pkt_udp", "SL_ACCESS_ROUTE", "sl_stats_line_head"} <= names
    declared = set(re.findall(r"\b(sl_[a-z0-9_]+|SL_[A-Z0-9_]+)\b", _headers()))
    assert sorted(names - declared) == []


def test_guide_prototypes_are_the_headers():
    """The prototypes the guide quotes are the headers' own, word for word."""
    protos = re.findall(r"`((?:int|void) sl_[a-z_]+\(.*?\))`", GUIDE.read_text(), re.S)
    assert len(protos) == 3, protos
    headers = " ".join(_headers().split())
    for proto in protos:
        assert " ".join(proto.split()) + ";" in headers, proto
