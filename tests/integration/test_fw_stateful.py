"""sluice-firewall --stateful against real TCP: two network namespaces on
sluiced's TAP ports, bridged through the firewall. The inside may open
connections (its rule), the outside may not (the default policy): curl
from inside gets its page, curl from outside gets no connection, and the
replies of the inside's connection pass although no rule allows them."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import netns
import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    prog,
    service,
    wait_until,
)
from netns import sh

INSIDE, OUTSIDE = "10.66.1.1", "10.66.1.2"


@pytest.fixture
def namespaces():
    names = [f"sls{netns.tag()}{x}" for x in "fg"]  # inside, outside
    with netns.namespaces(names):
        yield names


def _wire(namespaces: list[str], ifs: list[str]) -> None:
    # No ARP: the TCP packets are the only IP traffic on the wire.
    netns.wire_pair(namespaces, ifs, (INSIDE, OUTSIDE))


def _server(ns: str, addr: str, root: Path) -> subprocess.Popen:
    p = subprocess.Popen(
        ["ip", "netns", "exec", ns, "python3", "-m", "http.server", "8080", "--bind", addr,
         "--directory", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        r = sh("ip", "netns", "exec", ns, "ss", "-Htln", "sport = :8080", check=False)
        return addr in r.stdout

    wait_until(listening, 10, f"the HTTP server in {ns}")
    return p


def _curl(ns: str, addr: str, timeout: float) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, "curl", "-sS", "--max-time", str(timeout),
              "--connect-timeout", str(timeout), f"http://{addr}:8080/page.txt",
              check=False, timeout=timeout + 10)


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_outbound_allowed_inbound_refused(launch, node, namespaces, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    ifs = [f"{ns}i" for ns in namespaces]
    rules = tmp_path / "fw.yaml"
    # Non-TCP frames (the kernel's IGMP reports when an interface comes
    # up...) are allowed by the default and counted there.
    rules.write_text("default: allow\nrules:\n"
                     f"  - {{name: inside-out, action: allow, proto: tcp, src: {INSIDE}}}\n"
                     "  - {name: no-tcp-in, action: deny, proto: tcp}\n"
                     f"  - {{name: no-ping-in, action: deny, proto: icmp, src: {OUTSIDE}}}\n")
    run = launch(deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "fw", "program": prog("firewall", build), "service": "firewall",
              "args": ["--rules", str(rules), "--stateful", "--stats-ms", "0"]},
             {"name": "br", "program": prog("forward", build), "service": "bridge",
              "args": ["--bridge", "left,right"]}],
        chain=["firewall", "bridge", "drop"]), build)
    fw = next(p for p in run.nfs if p.label.startswith("fw"))
    _wire(namespaces, ifs)
    page = "stateful firewall test page\n" * 100
    for d in ("in", "out"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "page.txt").write_text(page)
    servers = [_server(namespaces[1], OUTSIDE, tmp_path / "out"),
               _server(namespaces[0], INSIDE, tmp_path / "in")]
    try:
        before = run.client.call("stats")
        # ICMP echo: the outside's pings are refused (rule 3), the inside's
        # get their replies (the default allows the first request; the
        # replies are packets of its connection).
        r = sh("ip", "netns", "exec", namespaces[1], "ping", "-c", "2", "-i", "0.2", "-W", "1",
               INSIDE, check=False)
        assert r.returncode == 1 and "2 packets transmitted, 0 received" in r.stdout, r.stdout
        r = sh("ip", "netns", "exec", namespaces[0], "ping", "-c", "3", "-i", "0.2", "-W", "2",
               OUTSIDE, check=False)
        assert r.returncode == 0 and "3 packets transmitted, 3 received" in r.stdout, r.stdout
        # Outbound: the SYN is allowed by the rule, every later packet of
        # the connection (the replies too) by its state.
        r = _curl(namespaces[0], OUTSIDE, 10)
        assert r.returncode == 0, r.stderr
        assert r.stdout == page
        # Inbound: the SYN meets the default policy; no connection.
        t0 = time.monotonic()
        r = _curl(namespaces[1], INSIDE, 2)
        assert r.returncode == 28, (r.returncode, r.stdout, r.stderr)  # timed out
        assert r.stdout == ""
        assert time.monotonic() - t0 >= 1.9
        st = run.client.call("stats")
    finally:
        for s in servers:
            s.terminate()
            s.wait(10)
    drops = service(st, "firewall")["drops"]["nf_verdict"] - \
        service(before, "firewall")["drops"]["nf_verdict"]
    run.stop()
    assert fw.exited() == 0
    log = fw.log.read_text()
    assert_no_sanitizer_report(log, fw.log.name)
    # One SYN through rule 1 (curl from inside), the outside's SYN and its
    # retransmission through rule 2; nothing invalid.
    assert "fw-counter: rule=1 name=inside-out action=allow packets=1 bytes=" in log, log
    m = re.search(r"fw-counter: rule=2 name=no-tcp-in action=deny packets=(\d+) ", log)
    assert m, log
    refused = int(m[1])
    assert "fw-counter: rule=3 name=no-ping-in action=deny packets=2 bytes=196\n" in log, log
    m = re.search(r"fw-counter: rule=default name=- action=allow packets=(\d+) ", log)
    assert m, log
    other = int(m[1])
    assert 1 <= refused <= 3, log  # a SYN at 0 s, a retransmission at 1 s
    m = re.search(r"fw-counters: end packets=(\d+) allowed=(\d+) denied=(\d+)\n", log)
    assert m, log
    total, allowed, denied = map(int, m.groups())
    assert denied == refused + 2
    assert drops == denied  # sluiced counted every drop as the NF's verdict
    m = re.search(r"fw-stats: reason=exit .* packets=(\d+) bytes=\d+ pps=\d+( .*)\n", log)
    assert m, log
    assert int(m[1]) == total  # every packet once
    ct = {k: int(v) for k, v in re.findall(r" (\w+)=(\d+)", m[2])}
    # curl's connection, closed (TIME_WAIT), and the non-TCP flows the
    # default allowed (each a connection, by timeout: the inside's ping
    # among them); nothing invalid.
    assert ct["conns_closing"] == 1, m[0]
    assert ct["created"] == 1 + ct["conns_new"] + ct["conns_established"], m[0]
    assert ct["conns"] == ct["created"]
    assert (ct["invalid"], ct["table_full"], ct["expired"], ct["reopened"]) == (0, 0, 0, 0)
    assert ct["pkts_new"] >= 1  # the SYN+ACK
    assert ct["pkts_established"] >= 3 + 5  # the ACK, the request, the page; pings
    assert ct["pkts_closing"] >= 3  # FIN, FIN, ACK
    assert total == 1 + refused + 2 + other + sum(ct[f"pkts_{g}"] for g in
                                             ("new", "established", "closing"))
    assert allowed == total - denied
