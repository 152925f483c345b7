"""sluice-l3fwd's SIGHUP reload does not stall traffic (nfs/l3fwd/README.md,
"Reload"): a thread reads the routes file and builds the new rte_lpm while
packets go on through the old one, and the NF thread swaps the tables
between two bursts.

An endless capture (net_pcap, infinite_rx) to 192.168.0.0/16 goes through
sluice-l3fwd, whose routes file has tens of thousands of /24 routes
elsewhere (rte_lpm's rule table is searched linearly per add: a build of
a second or more) and 192.168.0.0/16 out of port o1. The new file sends
192.168.0.0/16 out of o2: while it is built the NF keeps receiving and
forwarding (out of o1), and once it is swapped in the traffic leaves
through o2 only."""

from __future__ import annotations

import re
import signal
import time

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    port,
    prog,
    service,
    wait_until,
)
from packets import write
from scapy.all import IP, UDP, Ether, Raw

N_ROUTES = 40000
MAC1, MAC2 = "02:62:00:00:00:01", "02:62:00:00:00:02"


def _capture() -> list[bytes]:
    return [bytes(Ether(src="02:00:00:00:00:05", dst="02:00:00:00:00:06")
                  / IP(src=f"10.62.0.{i + 1}", dst=f"192.168.{i}.9", ttl=64)
                  / UDP(sport=1000 + i, dport=9) / Raw(b"x" * 18)) for i in range(32)]


def _routes(out: str, mac: str) -> str:
    # /24s from 16.0.0.0 up: none of them meets the traffic.
    lines = [f"route {16 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}.0/24 port o1 mac {MAC1}"
             for i in range(N_ROUTES)]
    lines.append(f"route 192.168.0.0/16 port {out} mac {mac}")
    return "\n".join(lines) + "\n"


def _tx(run, name: str) -> int:
    return port(run.client.call("stats"), name)["tx_pkts"]


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_reload_under_traffic(launch, node, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    routes = tmp_path / "routes"
    routes.write_text(_routes("o1", MAC1))
    src = write(tmp_path / "in.pcap", _capture())
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "o1", "device": "net_null0,no-rx=1"},
               {"name": "o2", "device": "net_null1,no-rx=1"}],
        nfs=[{"name": "l3", "program": prog("l3fwd", build), "service": "l3fwd",
              "args": ["--routes", str(routes), "--max-routes", str(N_ROUTES + 10),
                       "--stats-ms", "0"]}],
        chain=["l3fwd", "drop"]), build)
    (nf,) = run.nfs
    wait_until(lambda: _tx(run, "o1") > 10_000, 60, "traffic out of o1")

    routes.write_text(_routes("o2", MAC2))
    t0 = time.monotonic()
    run.kill(nf, signal.SIGHUP)
    reloaded = f"sluice-l3fwd: reloaded {routes}: {N_ROUTES + 1} IPv4 and 0 IPv6 routes"
    during = []
    while reloaded not in nf.log.read_text():
        st = run.client.call("stats")
        during.append((service(st, "l3fwd")["rx_pkts"], port(st, "o1")["tx_pkts"],
                       port(st, "o2")["tx_pkts"]))
        assert time.monotonic() < t0 + 120, "timed out after 120 s waiting for the reload"
        time.sleep(0.05)
    print(f"build: {time.monotonic() - t0:.2f} s, {len(during)} samples")
    assert "reloading" in nf.log.read_text()
    assert len(during) >= 2, "the build ended before the traffic was sampled twice"
    assert during[-1][0] > during[0][0], during  # rx went on: no stall
    assert during[-1][1] > during[0][1], during  # and out of o1, the old route
    assert during[-1][2] == 0, during
    # The new route: o2 only, from the swap on.
    o1 = _tx(run, "o1")
    wait_until(lambda: _tx(run, "o2") > 10_000, 30, "traffic out of o2")
    assert _tx(run, "o1") == o1
    run.client.call("rx.pause")
    run.stop()
    assert nf.exited() == 0
    log = nf.log.read_text()
    assert_no_sanitizer_report(log, nf.log.name)
    line = next(ln for ln in log.splitlines() if ln.startswith("l3fwd-stats: reason=exit "))
    c = dict(kv.split("=") for kv in line.split()[2:])
    assert int(c["packets"]) == int(c["forwarded"]) > 20_000, line
    assert int(c["out.o1"]) + int(c["out.o2"]) == int(c["forwarded"]), line
    assert re.search(r" no_route=0 ttl_exceeded=0 icmp_sent=0 ", line), line
