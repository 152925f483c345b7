"""sluice-lb against real TCP: HTTP servers in three backend namespaces and a
curl client in a fourth, each on a TAP port of sluiced; the VIP
10.63.0.100:80 is the load balancer's (nfs/lb/README.md).

Every request is a curl with its own source port (--local-port), so the
flows are named and can be sent again: the spread over the backends
follows their weights (1:2:3), a backend removed at run time (a message)
loses its flows to the others and no other flow moves, a backend added
back takes its share of new flows, connections held open keep their
backend while the table sends new ones elsewhere, and a SIGHUP with a bad file keeps the
running configuration. Also with the ASan+UBSan build."""

from __future__ import annotations

import re
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
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
    wait_until,
)
from netns import sh

CLIENT = "10.63.0.1"
VIP = "10.63.0.100"
VIP_MAC = "02:63:00:00:00:64"
CLIENT_MAC = "02:63:00:00:00:01"
BACKENDS = {"b1": ("10.63.0.11", 1), "b2": ("10.63.0.12", 2), "b3": ("10.63.0.13", 3)}
N = 300  # requests per round
# The spread of N flows over weights 1:2:3 (50, 100, 150): the binomial
# standard deviation is at most 8.7; 30 is 3.5 of them for the widest.
SPREAD = 30


def mac(name: str) -> str:
    return f"02:63:00:00:00:{10 + int(name[1:]):02x}"


def backend_line(name: str, weight: int | None = None) -> str:
    addr, w = BACKENDS[name]
    return (f"{name} {addr} weight {w if weight is None else weight} mac {mac(name)} "
            f"via {name}")


def config(weights: dict[str, int] | None = None) -> str:
    lines = [f"vip {VIP} proto tcp ports 80"]
    lines += [f"backend {backend_line(n, (weights or {}).get(n))}" for n in BACKENDS]
    return "\n".join(lines) + "\n"


@pytest.fixture
def namespaces(tmp_path: Path) -> Iterator[dict[str, str]]:
    tag = netns.tag()
    names = {"client": f"slb{tag}c", **{b: f"slb{tag}{b[1:]}" for b in BACKENDS}}
    # http.server runs in the namespaces: the pids of each, all ours
    # (started below), are killed before it is deleted.
    with netns.namespaces(names.values(), kill=True):
        yield names


def setup_ns(ns: str, ifname: str, addr: str, ifmac: str, peer: str, peer_mac: str) -> None:
    """The namespace's TAP interface: address, MAC, no IPv6, and the one
    neighbour it talks to, for good (no ARP)."""
    netns.host(ns, ifname, addr, mac=ifmac)
    netns.neigh(ns, ifname, peer, peer_mac)


# A tiny HTTP server that answers its name and closes first, with no
# Content-Length: curl reads to the end of the stream, so the server's
# FIN comes first and the client's side of each connection ends CLOSED
# (not in TIME_WAIT, which would keep curl from binding the same source
# port again for the next round; with http.server's Content-Length curl
# sometimes closed first: "curl: (45) bind failed").
SERVER = """
import socketserver, sys
name, addr = sys.argv[1], sys.argv[2]
class H(socketserver.BaseRequestHandler):
    def handle(self):
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            data += chunk
        head = b"HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\n"
        self.request.sendall(head + name.encode())
socketserver.TCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer((addr, 80), H).serve_forever()
"""


def start_server(ns: str, name: str, addr: str, root: Path) -> None:
    """A tiny HTTP server in ns, answering its name."""
    script = root / "server.py"
    script.write_text(SERVER)
    log = open(root / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
    subprocess.Popen(["ip", "netns", "exec", ns, "python3", str(script), name, addr],
                     stdout=log, stderr=subprocess.STDOUT)

    def up() -> bool:
        r = sh("ip", "netns", "exec", ns, "curl", "-s", "--max-time", "1",
               f"http://{addr}/", check=False)
        return r.stdout == name

    wait_until(up, 20, f"the HTTP server of {name}")


def requests(ns: str, ports: range) -> dict[int, str]:
    """One curl per source port, in the client namespace: port -> the
    backend that answered ('FAIL' if none)."""
    script = (f"for p in $(seq {ports.start} {ports.stop - 1}); do "
              f"r=$(curl -s --max-time 5 --local-port $p http://{VIP}/) || r=FAIL$?; "
              f"echo \"$p $r\"; done")
    out = sh("ip", "netns", "exec", ns, "sh", "-c", script).stdout
    got = {int(p): r for p, r in (ln.split(maxsplit=1) for ln in out.splitlines())}
    assert sorted(got) == list(ports), out
    return got


# Connections held open across a change of the table: each sends half a
# request, waits for a line on stdin, then sends the rest and prints the
# backend that answers.
HOLDER = """
import socket, sys
client, vip, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
held = []
for p in range(first, first + n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(5)
    s.bind((client, p))
    s.connect((vip, 80))
    s.sendall(b"GET / HTTP/1.0\\r\\n")
    held.append((p, s))
print("ready", flush=True)
sys.stdin.readline()
for p, s in held:
    try:
        s.sendall(b"\\r\\n")
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        print(p, data.partition(b"\\r\\n\\r\\n")[2].decode() or "FAIL")
    except OSError as e:
        print(p, "FAIL" + type(e).__name__)
"""


def held_connections(ns: str, root: Path, ports: range, change) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """Opens a connection per source port, calls change() while they are
    open, then completes their requests: port -> the backend that answered."""
    script = root / "holder.py"
    script.write_text(HOLDER)
    p = subprocess.Popen(["ip", "netns", "exec", ns, "python3", str(script), CLIENT, VIP,
                          str(ports.start), str(len(ports))],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdin is not None
        assert p.stdout.readline() == "ready\n"
        change()
        out, _ = p.communicate("go\n", timeout=30)
    finally:
        p.kill()
        p.wait()
    got = {int(a): b for a, b in (ln.split(maxsplit=1) for ln in out.splitlines())}
    assert sorted(got) == list(ports), out
    return got


def assert_spread(got: dict[int, str], weights: dict[str, int]) -> None:
    n = Counter(got.values())
    total = sum(weights.values())
    assert not [b for b in n if b.startswith("FAIL")], n
    for b, w in weights.items():
        want = len(got) * w / total
        assert abs(n[b] - want) <= SPREAD, (b, n, weights)
    assert set(n) <= set(weights), n


def lb_stats(run, log: Path) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The counters of a stats message's lb-stats line."""
    before = log.read_text().count("lb-stats: reason=message")
    run.client.call("flow.request", type="message", service="lb", key="stats", value="")
    wait_until(lambda: log.read_text().count("lb-stats: reason=message") > before, 10,
               "the lb-stats line")
    line = [ln for ln in log.read_text().splitlines() if "lb-stats: reason=message" in ln][-1]
    return {k: int(v) for k, v in re.findall(r" (\w+)=(\d+)(?= |$)", line)}


def message(run, log: Path, key: str, value: str, result: str) -> None:  # type: ignore[no-untyped-def]
    run.client.call("flow.request", type="message", service="lb", key=key, value=value)
    want = f"lb-message: key={key} value={value} result={result}"
    wait_until(lambda: want in log.read_text(), 10, want)


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_http_behind_the_vip(launch, node, namespaces, tmp_path, asan):  # type: ignore[no-untyped-def]
    build = ASAN_BUILD if asan else build_dir()
    cfg = tmp_path / "lb.conf"
    cfg.write_text(config())
    ifs = {k: f"{ns}i" for k, ns in namespaces.items()}
    run = launch(deployment(
        node,
        ports=[{"name": k, "device": f"net_tap{i},iface={ifs[k]}"}
               for i, k in enumerate(["client", *BACKENDS])],
        nfs=[{"name": "lb", "program": prog("lb", build), "service": "lb",
              "args": ["--config", str(cfg), "--client-port", "client",
                       "--timeout", "120", "--closed-timeout", "120", "--stats-ms", "0"]}],
        chain=["lb", "drop"]), build)
    (lb,) = run.nfs
    setup_ns(namespaces["client"], ifs["client"], CLIENT, CLIENT_MAC, VIP, VIP_MAC)
    for b, (addr, _) in BACKENDS.items():
        setup_ns(namespaces[b], ifs[b], addr, mac(b), CLIENT, CLIENT_MAC)
        start_server(namespaces[b], b, addr, tmp_path)

    # 1. The spread follows the weights.
    weights = {b: w for b, (_, w) in BACKENDS.items()}
    first = requests(namespaces["client"], range(41000, 41000 + N))
    assert_spread(first, weights)
    st = lb_stats(run, lb.log)
    assert (st["new_flows"], st["moved"], st["drop_no_backend"], st["drop_table_full"],
            st["drop_malformed"]) == (N, 0, 0, 0, 0), st
    for b in BACKENDS:
        line = f"lb-backend: name={b} addr={BACKENDS[b][0]} weight={weights[b]} "
        flows = re.findall(re.escape(line) + r"entries=\d+ flows=(\d+)", lb.log.read_text())
        assert int(flows[-1]) == Counter(first.values())[b], (b, flows)

    # 2. b2 removed at run time: its flows move, no other's do.
    message(run, lb.log, "backend.remove", "b9", "error: no backend 'b9'")
    message(run, lb.log, "backend.remove", "b2", "applied backends=2")
    second = requests(namespaces["client"], range(41000, 41000 + N))
    on_b2 = [p for p, b in first.items() if b == "b2"]
    assert all(second[p] in ("b1", "b3") for p in on_b2), second
    assert {p: b for p, b in second.items() if p not in on_b2} == \
        {p: b for p, b in first.items() if p not in on_b2}
    st = lb_stats(run, lb.log)
    assert st["moved"] == len(on_b2) and st["backends"] == 2, st

    # 3. b2 back: new flows spread by the weights again.
    message(run, lb.log, "backend.add", backend_line("b2"), "applied backends=3")
    third = requests(namespaces["client"], range(42000, 42000 + N))
    assert_spread(third, weights)

    # 3b. Connections established before a change of the table keep
    # their backend: held open while b1 and b3 are drained (weight 0, so
    # the table sends every new connection to b2), they are answered by
    # the backends they started with.
    def drain() -> None:
        message(run, lb.log, "backend.weight", "b1 0", "applied backends=3")
        message(run, lb.log, "backend.weight", "b3 0", "applied backends=3")
        assert set(requests(namespaces["client"], range(45000, 45020)).values()) == {"b2"}

    held = held_connections(namespaces["client"], tmp_path, range(44000, 44060), drain)
    n = Counter(held.values())
    assert set(n) <= set(BACKENDS) and n["b1"] + n["b3"] >= 20, n
    message(run, lb.log, "backend.weight", "b1 1", "applied backends=3")
    message(run, lb.log, "backend.weight", "b3 3", "applied backends=3")

    # 4. SIGHUP: a bad file keeps the configuration; a good one drains b3.
    cfg.write_text(config() + "backend b4 10.63.0.14 weight much\n")
    run.kill(lb, signal.SIGHUP)
    bad = (f"sluice-lb: reload failed, keeping the current configuration (3 backends): "
           f"{cfg}:5: weight 'much' is not a whole number from 0 to 10000")
    wait_until(lambda: bad in lb.log.read_text(), 10, "the failed reload")
    cfg.write_text(config({"b3": 0}))
    run.kill(lb, signal.SIGHUP)
    wait_until(lambda: f"sluice-lb: reloaded {cfg}:" in lb.log.read_text(), 10, "the reload")
    fourth = requests(namespaces["client"], range(43000, 43000 + 60))
    assert "b3" not in fourth.values() and "FAIL" not in fourth.values(), fourth

    # 5. A bad file at start: one line naming it, exit status 1.
    bad_cfg = tmp_path / "bad.conf"
    bad_cfg.write_text(f"vip {VIP}\nbackend b1 {BACKENDS['b1'][0]} via nowhere\n")
    r = sh(prog("lb", build), "--", "--node", node, "-s", "lb2", "--config", str(bad_cfg),
           check=False)
    assert r.returncode == 1, r
    assert (f"sluice-lb: {bad_cfg}:2: backend 'b1': via 'nowhere': no such port "
            f"(sluice status lists them)\n") in r.stderr, r.stderr

    final = run.stop()
    assert final is not None
    text = lb.log.read_text()
    assert "lb-stats: reason=exit" in text, text[-2000:]
    assert_no_sanitizer_report(text, "sluice-lb's log")
    assert_no_sanitizer_report(run.sluiced.log.read_text(), "sluiced's log")
