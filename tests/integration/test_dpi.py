"""sluice-dpi on real Linux traffic: two network namespaces, each holding
one of sluiced's TAP interfaces, talk through a graph whose entry is the
DPI. curl fetches a file from python's http.server (HTTP) and the client
sends a DNS query (built by scapy) to a UDP socket; nDPI names both, each
detection is a Message seen on sluiced's event subscription, and the rule
``HTTP -> web`` moves the HTTP flow from the default hop (``bridge``) to
the ``web`` service, which sluiced's counters and the DPI's own show.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import netns
import pytest
from conftest import deployment, port, prog, service, wait_until
from netns import sh
from scapy.all import DNS, DNSQR

from sluice.runtime.client import Client

CLIENT, SERVER = "10.67.0.1", "10.67.0.2"


@pytest.fixture
def namespaces():
    names = [f"sld{netns.tag()}{x}" for x in "cs"]
    with netns.namespaces(names):
        yield names


def wire(namespaces: list[str], ifs: list[str]) -> None:
    """Moves each TAP interface into its namespace with its address, and
    makes each side know the other's MAC for good (no ARP, no IPv6)."""
    netns.wire_pair(namespaces, ifs, (CLIENT, SERVER))


class Events:
    """sluiced's event subscription, read by a thread."""

    def __init__(self, node: str, socket_path: str):
        self.events: list[dict[str, Any]] = []
        self._sub = Client(node, socket_path, timeout=5.0)
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        try:
            for ev in self._sub.events():
                self.events.append(ev)
        except Exception:  # noqa: BLE001 (sluiced stopped)
            pass

    def messages(self) -> list[dict[str, Any]]:
        return [e["data"] for e in list(self.events) if e["kind"] == "nf.message"
                and e["data"].get("key") == "dpi.app"]


NODES = {"dpi": ["bridge", "web"],
         "bridge": ["port:right", "port:left"],
         "web": ["port:right", "port:left"]}


def dns_query() -> bytes:
    return bytes(DNS(id=0x5151, rd=1, qd=DNSQR(qname="sluice.example")))


def start(launch, node: str, namespaces: list[str], tmp_path: Path,
          rules_text: str) -> tuple[Any, Events, dict[str, Any]]:
    """sluiced with TAP ports left (client side) and right (server side),
    sluice-dpi with these rules, graph apps and the rule that sends our
    flows to it; the namespaces wired. Returns the launcher, the event
    subscription and the stats before any traffic."""
    ifs = [f"{ns}i" for ns in namespaces]
    rules = tmp_path / "apps.rules"
    rules.write_text(rules_text)
    dep = deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "dpi", "program": prog("dpi"), "service": "dpi",
              "args": ["--rules", str(rules), "--stats-ms", "0"]},
             {"name": "br", "program": prog("forward"), "service": "bridge",
              "args": ["--bridge", "left,right"]},
             {"name": "web", "program": prog("forward"), "service": "web",
              "args": ["--bridge", "left,right"]}],
        chain=["drop"])
    run = launch(dep)
    ev = Events(node, run.dep.socket_path())
    # The graph, applied until the subscription has seen it (then events
    # flow), and the rule that sends our flows (either direction) to it.
    for _ in range(20):
        v = run.client.call("graph.apply", name="apps", nodes=NODES)["version"]
        try:
            wait_until(lambda v=v: any(e["kind"] == "graph.applied"
                                       and e["data"]["version"] == v for e in list(ev.events)),
                       0.5, "graph.applied")
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"no graph.applied event; events: {ev.events}")
    run.client.call("rule.add", graph="apps", src="10.67.0.0/24")
    wire(namespaces, ifs)
    return run, ev, run.client.call("stats")


def counters(run: Any) -> str:
    """The DPI's counters, asked for with the stats message: the newest
    dpi-stats line and the lines after it."""
    log = run.run_dir / "dpi.log"
    mark = "dpi-stats: reason=message "
    n = log.read_text().count(mark)
    run.client.call("flow.request", type="message", service="dpi", key="stats", value="now")
    text = wait_until(lambda: log.read_text().count(mark) > n and log.read_text(), 10,
                      f"the counters in {log}")
    return text[text.rindex(mark):]


def test_dpi_detects_and_steers(launch, node, namespaces, tmp_path: Path):
    run, ev, before = start(launch, node, namespaces, tmp_path,
                            "# HTTP goes through the web service\nHTTP -> web\n")

    # DNS: a query to a UDP socket of the server (which only reads it).
    srv = tmp_path / "www"
    srv.mkdir()
    body = os.urandom(200_000)
    (srv / "blob").write_bytes(body)
    udp = subprocess.Popen(
        ["ip", "netns", "exec", namespaces[1], sys.executable, "-c",
         "import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
         f"s.bind(('{SERVER}', 53)); print('ready', flush=True); "
         "d=s.recvfrom(2048)[0]; print(d.hex(), flush=True)"],
        stdout=subprocess.PIPE, text=True)
    http = subprocess.Popen(
        ["ip", "netns", "exec", namespaces[1], sys.executable, "-m", "http.server", "80",
         "--bind", SERVER, "--directory", str(srv)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert udp.stdout is not None and udp.stdout.readline() == "ready\n"
        q = dns_query()
        sh("ip", "netns", "exec", namespaces[0], sys.executable, "-c",
           "import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
           f"s.bind(('{CLIENT}', 40053)); s.sendto(bytes.fromhex('{q.hex()}'), "
           f"('{SERVER}', 53))")
        assert udp.stdout.readline().strip() == q.hex()  # it got through, as sent
        wait_until(lambda: f"{SERVER}:80 " in sh("ip", "netns", "exec", namespaces[1], "ss",
                                                 "-ltnH").stdout, 10, "http.server to listen")
        got = tmp_path / "got"
        r = sh("ip", "netns", "exec", namespaces[0], "curl", "-sS", "--max-time", "20",
               "--local-port", "40080", "-o", str(got), f"http://{SERVER}/blob", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        http.terminate()
        udp.kill()
        http.wait(5)
        udp.wait(5)
    assert hashlib.sha256(got.read_bytes()).hexdigest() == hashlib.sha256(body).hexdigest()

    # Both detections, as Messages on the subscription.
    msgs = wait_until(lambda: len(ev.messages()) >= 2 and ev.messages(), 10,
                      f"two dpi.app messages; events: {ev.events}")
    values = sorted(m["value"] for m in msgs)
    assert values == [
        "app=DNS category=Network by=payload host=sluice.example "
        f"flow=udp {CLIENT}:40053 > {SERVER}:53",
        f"app=HTTP category=Web by=payload host={SERVER} "
        f"flow=tcp {CLIENT}:40080 > {SERVER}:80",
    ], msgs
    assert all(m["nf"] == "dpi" and m["service"] == "dpi" and m["result"] == "applied"
               for m in msgs), msgs

    # The HTTP flow after its first request went through web; the rest
    # (its handshake, DNS) through bridge. The DPI's own counters agree,
    # once the last packets (the end of the connection) are through:
    # sluiced's stats and the DPI's counters line, again until they match.
    log = run.run_dir / "dpi.log"

    def delta(st: dict[str, Any], name: str) -> int:
        return service(st, name)["rx_pkts"] - service(before, name)["rx_pkts"]

    def settled() -> tuple[dict[str, Any], str] | None:
        st = run.client.call("stats")
        last = counters(run)
        rule = re.search(r"dpi-rule: rule=1 line=2 app=HTTP to=web flows=1 packets=(\d+)\n",
                         last)
        rx = sum(port(st, n)["rx_pkts"] - port(before, n)["rx_pkts"] for n in ("left", "right"))
        tx = sum(port(st, n)["tx_pkts"] - port(before, n)["tx_pkts"] for n in ("left", "right"))
        if rule and delta(st, "web") == int(rule.group(1)) and rx == tx == delta(st, "dpi"):
            return st, last
        return None

    st, last = wait_until(settled, 15, f"sluiced's and the DPI's counters to agree ({log})")
    line = last.splitlines()[0]
    web, dpi, bridge = delta(st, "web"), delta(st, "dpi"), delta(st, "bridge")
    assert web > 100, (web, last)
    assert bridge + web == dpi, (bridge, web, dpi)
    # handshake (SYN, SYN-ACK, ACK) and the DNS query went the default way
    assert bridge == 4, (bridge, web, dpi)
    assert f" steered={web} dropped=0 " in line, line
    assert " detected=2 guessed=0 undetected=0 " in line, line
    assert " non_ip=0 malformed=0 flows=2 " in line, line
    assert (f"dpi: tcp {CLIENT}:40080 > {SERVER}:80 app=HTTP category=Web by=payload "
            f"host={SERVER} packets=4\n") in log.read_text()
    moved = {n: port(st, n)["tx_pkts"] - port(before, n)["tx_pkts"] for n in ("left", "right")}
    rx = {n: port(st, n)["rx_pkts"] - port(before, n)["rx_pkts"] for n in ("left", "right")}
    assert moved["left"] == rx["right"] and moved["right"] == rx["left"], (moved, rx)
    assert st["drops_total"] == before["drops_total"], st

    # A bad rules file is refused at start: one line naming the file and
    # the line, exit status 1, and sluiced keeps running.
    bad = tmp_path / "bad.rules"
    bad.write_text("HTTP -> web\nGopher -> web\n")
    r = sh(prog("dpi"), "--", "--node", node, "--service", "dpi2", "--rules", str(bad),
           check=False)
    assert r.returncode == 1, r
    assert (f"sluice-dpi: {bad}:2: unknown application 'Gopher': nDPI 4.2.0 has no protocol "
            "of that name\n") in r.stderr, r.stderr
    assert run.client.call("status")


def test_dpi_drops_tls_by_its_sni(launch, node, namespaces, tmp_path: Path):
    """A TLS ClientHello from curl (SNI sluice.example) is detected, sent
    as a Message with its host, and the rule TLS -> drop drops it and
    every later packet of the connection: the server gets no byte, curl
    times out, sluiced counts the DPI's drops as nf_verdict."""
    run, ev, before = start(launch, node, namespaces, tmp_path, "TLS -> drop\n")
    tcp = subprocess.Popen(
        ["ip", "netns", "exec", namespaces[1], sys.executable, "-c",
         "import socket; s=socket.socket(); "
         "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         f"s.bind(('{SERVER}', 443)); s.listen(); print('ready', flush=True); "
         "c=s.accept()[0]; c.settimeout(4); print('accepted', flush=True)\n"
         "try: print(len(c.recv(4096)), flush=True)\n"
         "except OSError: print('nothing', flush=True)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert tcp.stdout is not None and tcp.stdout.readline() == "ready\n"
        r = sh("ip", "netns", "exec", namespaces[0], "curl", "-sk", "--max-time", "3",
               "--local-port", "40443", "--resolve", f"sluice.example:443:{SERVER}",
               "https://sluice.example/", check=False)
        assert r.returncode == 28, r  # timed out: no ServerHello ever came
        assert tcp.stdout.readline() == "accepted\n"  # the handshake went through
        assert tcp.stdout.readline() == "nothing\n"  # the ClientHello did not
    finally:
        tcp.kill()
        tcp.wait(5)
    msgs = wait_until(lambda: ev.messages(), 10, f"a dpi.app message; events: {ev.events}")
    assert [m["value"] for m in msgs] == [
        "app=TLS category=Web by=payload host=sluice.example "
        f"flow=tcp {CLIENT}:40443 > {SERVER}:443"], msgs

    def nf_drops(st: dict[str, Any]) -> int:
        return int(service(st, "dpi")["drops"]["nf_verdict"]
                   - service(before, "dpi")["drops"]["nf_verdict"])

    def settled() -> tuple[dict[str, Any], str] | None:
        st = run.client.call("stats")
        last = counters(run)
        m = re.search(r"dpi-rule: rule=1 line=1 app=TLS to=drop flows=1 packets=(\d+)\n", last)
        return (st, last) if m and int(m.group(1)) == nf_drops(st) > 0 else None

    st, last = wait_until(settled, 15, "sluiced's and the DPI's drop counts to agree")
    drops = nf_drops(st)
    line = last.splitlines()[0]
    assert f" steered=0 dropped={drops} " in line, line
    assert " detected=1 guessed=0 undetected=0 " in line, line
    # the handshake and nothing else of the connection reached the server
    assert service(st, "bridge")["rx_pkts"] - service(before, "bridge")["rx_pkts"] >= 3
    assert st["drops_total"] - before["drops_total"] == drops, st

    # SIGHUP: a bad file keeps the rule and says why; a good one replaces it.
    log = run.run_dir / "dpi.log"
    pid = next(n["pid"] for n in run.client.call("nf.list") if n["service"] == "dpi")
    rules = tmp_path / "apps.rules"
    rules.write_text("TLS -> nowhere\n")
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: ("sluice-dpi: reload failed, keeping the 1 current rules: "
                        f"{rules}:1: no service 'nowhere' (") in log.read_text(), 10,
               f"the failed reload in {log}")
    rules.write_text("DNS -> web\nTLS -> drop\n")
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: (f"sluice-dpi: reloaded 2 rules from {rules}\n"
                        "sluice-dpi:   rule 1: DNS -> web\n"
                        "sluice-dpi:   rule 2: TLS -> drop\n") in log.read_text(), 10,
               f"the reload in {log}")
