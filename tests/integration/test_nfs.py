"""Each sample NF in a real chain: firewall, monitor, speedtest, and
malformed packets through all of them."""

from __future__ import annotations

import ipaddress
import json
import random
import re
import signal
import struct
import subprocess

from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, read, write
from scapy.all import (
    ARP,
    IP,
    TCP,
    UDP,
    Dot1AD,
    Dot1Q,
    Ether,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    Raw,
)

from sluice.runtime.launch import Launcher

RULES = """\
default: allow
rules:
  - {name: block-low, action: deny, src: 10.0.0.0/28}
  - {name: no-dns, action: deny, proto: udp, dport: 53}
  - {name: block-v6, action: deny, dst: "2001:db8:1::/120"}
  - {name: web, action: allow, proto: tcp, dport: 80}
"""


def _denied(frame: bytes) -> str | None:
    """The test's own reading of RULES: first match wins."""
    p = Ether(frame)
    l3 = p.getlayer(IP) or p.getlayer(IPv6)
    if l3 is None:
        return None
    src, dst = ipaddress.ip_address(l3.src), ipaddress.ip_address(l3.dst)
    if src in ipaddress.ip_network("10.0.0.0/28"):
        return "block-low"
    if UDP in p and p[UDP].dport == 53:
        return "no-dns"
    if dst in ipaddress.ip_network("2001:db8:1::/120"):
        return "block-v6"
    return None


def test_firewall_drops_exactly_what_its_rules_match(launch, node, tmp_path):
    frames = mixed(4000, flows=150, seed=11)
    expected = [f for f in frames if _denied(f) is None]
    by_rule: dict[str, int] = {}
    for f in frames:
        if (r := _denied(f)) is not None:
            by_rule[r] = by_rule.get(r, 0) + 1
    assert set(by_rule) == {"block-low", "no-dns", "block-v6"}  # the trace exercises all
    (tmp_path / "rules.yaml").write_text(RULES)
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(tmp_path / "rules.yaml")]}],
        chain=["firewall", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 30,
               "the capture to be read")
    st = wait_drained(run)
    fw = st["nfs"][0]
    assert fw["drops"]["nf_verdict"] == len(frames) - len(expected)
    assert st["drops_total"] == len(frames) - len(expected)
    run.stop()
    assert read(dst) == expected
    log = next(p for p in run.nfs if p.label == "fw").log.read_text()
    for name, n in by_rule.items():
        assert re.search(rf"rule=\d+ name={name} action=deny packets={n} ", log), (name, n)


NEW_RULES = """\
default: allow
rules:
  - {name: no-web, action: deny, proto: tcp, dport: 80}
  - {name: no-ntp-low, action: deny, proto: udp, src: 172.16.0.0/29, dport: 123}
"""


def _new_denied(frame: bytes) -> str | None:
    """The test's own reading of NEW_RULES (capture B has IPv4 only)."""
    p = Ether(frame)
    if TCP in p and p[TCP].dport == 80:
        return "no-web"
    if (UDP in p and p[UDP].dport == 123
            and ipaddress.ip_address(p[IP].src) in ipaddress.ip_network("172.16.0.0/29")):
        return "no-ntp-low"
    return None


def _capture_b(n: int, seed: int = 3) -> list[bytes]:
    """n frames from 172.16.0.0/24 (no address of mixed()): TCP to 80 and
    443, UDP to 53 and 123, of varied sizes."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        src = f"172.16.0.{rnd.randrange(1, 40)}"
        proto, dport = rnd.choice([(TCP, 80), (TCP, 443), (UDP, 53), (UDP, 123)])
        pkt = (Ether(src="02:00:00:00:00:03", dst="02:00:00:00:00:04") /
               IP(src=src, dst=f"192.168.9.{rnd.randrange(1, 10)}", id=i) /
               proto(sport=2000 + rnd.randrange(50), dport=dport))
        pad = max(0, rnd.choice([60, 128, 512, 1400]) - len(pkt))
        out.append(bytes(pkt / Raw(bytes([i & 0xFF]) * pad)))
    return out


def _counters(log: str, reason: str) -> dict[str, str]:
    """The firewall's counter report for `reason` (README.md: Counters):
    {'header': ..., 'rule=1 name=...': 'packets=P bytes=B', ..., 'end': ...}."""
    lines = log.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(f"fw-counters: reason={reason} "))
    rep = {"header": lines[i]}
    for ln in lines[i + 1:]:
        if ln.startswith("fw-counters: end "):
            rep["end"] = ln.removeprefix("fw-counters: end ")
            return rep
        m = re.fullmatch(r"fw-counter: (rule=\S+ name=\S+ action=\S+) (packets=\d+ bytes=\d+)", ln)
        assert m, ln
        rep[m[1]] = m[2]
    raise AssertionError(f"no end line after {lines[i]!r}")


def _pb(frames: list[bytes]) -> str:
    return f"packets={len(frames)} bytes={sum(map(len, frames))}"


def test_firewall_reloads_its_rules_on_sighup(launch, node, tmp_path, monkeypatch):
    """A running firewall (a real process) gets SIGHUP after a rules file
    rewrite: capture A went through the old rules, capture B (held back
    until then) goes through the new ones only, and each rule's drops are
    exact. B comes in on its own port; a rule sends its flows to a graph
    whose first hop, `gate`, is stopped (SIGSTOP) before sluiced reads any
    port, so B waits in gate's ring until the reload is done."""
    a = mixed(3000, flows=150, seed=11)
    b = _capture_b(1000)
    old_a = [_denied(f) for f in a]  # the rule that denies each frame, or None
    new_b = [_new_denied(f) for f in b]
    exp_a = [f for f, r in zip(a, old_a, strict=True) if r is None]
    exp_b = [f for f, r in zip(b, new_b, strict=True) if r is None]
    # The new rules are not the old: B under the old rules would lose its
    # DNS and keep its web traffic.
    assert {_denied(f) for f in b} == {None, "no-dns"}
    assert set(new_b) == {None, "no-web", "no-ntp-low"}
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    src_a, src_b = write(tmp_path / "a.pcap", a), write(tmp_path / "b.pcap", b)
    dst = tmp_path / "out.pcap"
    dep = deployment(
        node,
        ports=[{"name": "a", "device": f"net_pcap0,rx_pcap={src_a}"},
               {"name": "b", "device": f"net_pcap1,rx_pcap={src_b}"},
               {"name": "out", "device": f"net_pcap2,tx_pcap={dst}"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(rules)]},
             {"name": "gate", "program": prog("forward"), "service": "gate"}],
        chain=["firewall", "port:out"],
        sluiced_args=["--nf-hang-ms", "0"])  # gate is frozen on purpose: not a hang
    dep["graphs"] = [{"name": "held", "nodes": {"gate": ["firewall"], "firewall": ["port:out"]},
                      "match": [{"priority": 10, "src": "172.16.0.0/24"}]}]

    apply_graphs = Launcher._apply_graphs

    def then_stop_gate(self: Launcher) -> None:
        apply_graphs(self)  # the launcher resumes rx right after this
        self.kill(next(p for p in self.nfs if p.label == "gate"), signal.SIGSTOP)

    monkeypatch.setattr(Launcher, "_apply_graphs", then_stop_gate)
    run = launch(dep)
    monkeypatch.undo()
    fw, gate = (next(p for p in run.nfs if p.label == n) for n in ("fw", "gate"))
    try:
        drops_a = len(a) - len(exp_a)

        def a_done() -> dict | None:
            s = run.client.call("stats")
            return s if (port(s, "out")["tx_pkts"] == len(exp_a)
                         and service(s, "firewall")["drops"]["nf_verdict"] == drops_a) else None

        wait_until(a_done, 30, "capture A through the old rules")
        listed = run.client.call("nf.list")
        held = next(n for n in listed if n["service"] == "gate")
        assert held["rx_ring"]["count"] == len(b)  # all of B waits for the gate
        (fw_pid,) = [n["pid"] for n in listed if n["service"] == "firewall"]
        assert fw_pid == fw.pid

        rules.write_text(NEW_RULES)
        run.kill(fw, signal.SIGHUP)  # the pid sluiced lists
        reloaded = (f"sluice-firewall: reloaded 2 rules from {rules}, default allow, "
                    f"non-IP allow, matcher acl")
        wait_until(lambda: reloaded in fw.log.read_text(), 10, "the firewall's reload line")
    finally:
        run.kill(gate, signal.SIGCONT)
    n_out = len(exp_a) + len(exp_b)
    drops_b = len(b) - len(exp_b)
    wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] == n_out, 30,
               "capture B out")
    st = wait_drained(run)
    assert port(st, "b")["rx_pkts"] == len(b)
    assert service(st, "firewall")["drops"]["nf_verdict"] == drops_a + drops_b
    assert st["drops_total"] == drops_a + drops_b
    run.stop()
    assert read(dst) == exp_a + exp_b  # A by the old rules, then B by the new
    log = fw.log.read_text()
    by_old = {r: [f for f, d in zip(a, old_a, strict=True) if d == r]
              for r in ("block-low", "no-dns", "block-v6")}
    # The reload is built in the background, then the old counters are
    # printed at the swap, then the new rules (README.md, "Reload").
    started = (f"sluice-firewall: reloading {rules} in the background; packets go on "
               f"through the 4 current rules until it is built\n")
    assert (log.index(started) < log.index("fw-counters: reason=reload ")
            < log.index(reloaded))
    at_reload = _counters(log, "reload")
    assert at_reload["header"] == f"fw-counters: reason=reload file={rules} rules=4 matcher=acl"
    assert at_reload["rule=1 name=block-low action=deny"] == _pb(by_old["block-low"])
    assert at_reload["rule=2 name=no-dns action=deny"] == _pb(by_old["no-dns"])
    assert at_reload["rule=3 name=block-v6 action=deny"] == _pb(by_old["block-v6"])
    assert at_reload["end"] == f"packets={len(a)} allowed={len(exp_a)} denied={drops_a}"
    at_exit = _counters(log, "exit")
    assert at_exit["header"] == f"fw-counters: reason=exit file={rules} rules=2 matcher=acl"
    for i, r in enumerate(("no-web", "no-ntp-low"), start=1):
        assert at_exit[f"rule={i} name={r} action=deny"] == _pb(
            [f for f, d in zip(b, new_b, strict=True) if d == r])
    assert at_exit["rule=default name=- action=allow"] == _pb(exp_b)
    assert at_exit["end"] == f"packets={len(b)} allowed={len(exp_b)} denied={drops_b}"


def _end(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _flow_str(frame: bytes) -> str:
    """A frame's flow as sluice-monitor writes it: directional, "proto
    src:sport > dst:dport" (IPv6 addresses in brackets)."""
    p = Ether(frame)
    l3 = p[IP] if IP in p else p[IPv6]
    l4 = p[TCP] if TCP in p else p[UDP]
    return (f"{type(l4).__name__.lower()} {_end(l3.src, l4.sport)} > "
            f"{_end(l3.dst, l4.dport)}")


def test_monitor_counts_protocols_and_flows(launch, node, tmp_path):
    frames = mixed(2000, flows=60, seed=5)
    tcp = sum(1 for f in frames if TCP in Ether(f))
    v6 = sum(1 for f in frames if IPv6 in Ether(f))
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "mon", "program": prog("monitor"), "service": "monitor",
              "args": ["--interval", "0", "--top", "3"]}],
        chain=["monitor", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] == len(frames), 30,
               "all packets out")
    run.stop()
    log = run.nfs[0].log.read_text()
    # The one report (--interval 0: at exit), exact but for uptime and rate.
    mon = [ln for ln in log.splitlines() if ln.startswith("mon-")]
    assert len(mon) == 6, log
    nbytes = sum(map(len, frames))
    tcp_b = sum(len(f) for f in frames if TCP in Ether(f))
    flows: dict[str, list[int]] = {}  # directional: each way is a flow
    for f in frames:
        pb = flows.setdefault(_flow_str(f), [0, 0])
        pb[0], pb[1] = pb[0] + 1, pb[1] + len(f)
    assert re.fullmatch(
        rf"mon-stats: reason=exit uptime=\d+\.\d packets={len(frames)} bytes={nbytes} "
        rf"pps=\d+ ipv4={len(frames) - v6} ipv6={v6} flows={len(flows)} flows_capacity=65536 "
        r"flows_untracked=0 untracked_bytes=0", mon[0]), mon[0]
    assert mon[1:3] == [
        f"mon-proto: packets tcp={tcp} udp={len(frames) - tcp} icmp=0 other_ipv4=0 "
        "other_ipv6=0 non_ip=0 malformed=0",
        f"mon-proto: bytes tcp={tcp_b} udp={nbytes - tcp_b} icmp=0 other_ipv4=0 "
        "other_ipv6=0 non_ip=0 malformed=0"]
    # The 3 flows of the most bytes, largest first (no tie among them).
    top = sorted(flows.items(), key=lambda kv: -kv[1][1])[:4]
    assert top[2][1][1] > top[3][1][1], top
    got = [re.fullmatch(r"mon-top: rank=(\d) packets=(\d+) bytes=(\d+) flow=(.*)", ln)
           for ln in mon[3:]]
    assert all(got), mon[3:]
    assert [(int(m[1]), int(m[2]), int(m[3]), m[4]) for m in got] == [
        (i, p, b, k) for i, (k, (p, b)) in enumerate(top[:3], start=1)], mon[3:]


def test_speedtest_loop_and_every_buffer_returns(launch, node, tmp_path):
    run = launch(deployment(
        node, ports=[],
        nfs=[{"name": "st", "program": prog("speedtest"), "service": "speedtest",
              "args": ["--duration", "1.5", "--packets", "256", "--latency"]},
             {"name": "f", "program": prog("forward"), "service": "fwd"}],
        chain=["speedtest", "fwd", "speedtest"]))
    st_proc = next(p for p in run.nfs if p.label == "st")
    wait_until(lambda: st_proc.exited() is not None, 30, "speedtest to finish")
    assert st_proc.exited() == 0
    lines = [ln for ln in st_proc.log.read_text().splitlines() if ln.startswith("{")]
    res = json.loads(lines[-1])
    assert res["packets"] == 256 and res["received"] > 100_000 and res["mpps"] > 0
    assert res["latency_ns"]["min"] > 0
    # Cycles per packet: TSC cycles of the run / packets received. "seconds"
    # is printed to 1 ms (+-0.0005 s) and cycles_per_pkt to 0.01.
    hz, secs, got = res["tsc_hz"], res["seconds"], res["received"]
    assert abs(res["cycles_per_pkt"] - hz * secs / got) <= hz * 0.0005 / got + 0.005, res
    # The same in every report line: cycles/pkt = tsc_hz / (Mpps * 1e6), Mpps
    # printed to 0.01 (+-0.005) and cycles/pkt to 0.1 (+-0.05).
    reports = re.findall(r"^sluice-speedtest: (\d+\.\d\d) Mpps, (\d+\.\d) cycles/pkt$",
                         st_proc.log.read_text(), re.M)
    assert reports, st_proc.log.read_text()
    for mpps, cpp in ((float(m), float(c)) for m, c in reports):
        high = hz / ((mpps - 0.005) * 1e6) + 0.05 if mpps > 0.005 else float("inf")
        assert hz / ((mpps + 0.005) * 1e6) - 0.05 <= cpp <= high, (mpps, cpp, hz)
    # The packets in flight when it left were dropped and counted; none leaked.
    wait_until(lambda: run.client.call("status")["mbufs"]["in_use"] == 0, 5,
               "every mbuf back in the pool")
    stats = run.client.call("stats")
    fwd = next(s for s in stats["services"] if s["name"] == "fwd")
    sp = next(s for s in stats["services"] if s["name"] == "speedtest")
    # Every packet made is eventually dropped once: 256 = drops of both services.
    drops = sum(fwd["drops"].values()) + sum(sp["drops"].values())
    assert drops == 256, (fwd["drops"], sp["drops"])


def _malformed() -> list[bytes]:
    eth = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x0800))
    ip_ok = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"x" * 8))
    bad_ihl = bytearray(ip_ok)
    bad_ihl[0] = 0x43
    big_ihl = bytearray(ip_ok)
    big_ihl[0] = 0x4F
    short_total = bytearray(ip_ok)
    struct.pack_into("!H", short_total, 2, 12)
    bad_version = bytearray(ip_ok)
    bad_version[0] = 0x75
    ip6 = IPv6(src="2001:db8::1", dst="2001:db8::2")
    frames = [
        eth[:10],                                           # truncated Ethernet
        eth + ip_ok[:10],                                   # truncated IPv4
        eth + bytes(bad_ihl),                               # IHL 3
        eth + bytes(big_ihl),                               # IHL past the end
        eth + bytes(short_total),                           # total length < header
        eth + bytes(bad_version),                           # version 7
        bytes(Ether() / IP(dst="10.0.0.2", options=b"\x01\x01\x01\x00") / UDP() / b"opt"),
        bytes(Ether() / IP(dst="10.0.0.2", flags="MF", frag=0) / UDP() / (b"a" * 40)),
        bytes(Ether() / IP(dst="10.0.0.2", frag=5, proto=17) / (b"b" * 40)),
        bytes(Ether() / ip6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
              IPv6ExtHdrRouting() / TCP(dport=80)),
        bytes(Ether() / ip6 / IPv6ExtHdrFragment(offset=0, m=1) / UDP() / b"f1"),
        bytes(Ether() / ip6 / IPv6ExtHdrFragment(offset=8, m=0, nh=17) / b"f2"),
        bytes(Ether() / ip6 / IPv6ExtHdrHopByHop())[:60],   # cut in the ext header
        bytes(Ether() / Dot1Q(vlan=5) / IP(dst="10.0.0.2") / UDP(dport=53)),
        bytes(Ether() / Dot1AD(vlan=6) / Dot1Q(vlan=7) / ip6 / UDP()),
        bytes(Ether() / Dot1Q() / Dot1Q() / Dot1Q() / IP()),  # three tags
        bytes(Ether() / ARP()),
        bytes(Ether() / IP(dst="10.0.0.2") / TCP())[:40],   # TCP header cut
        eth,                                                # IPv4 type, no payload
        bytes(range(256)) * 5 + bytes(234),                 # 1514 bytes of junk
    ]
    return [f for f in frames for _ in range(25)]


def test_malformed_packets_pass_every_sample_nf(launch, node, tmp_path):
    """Nothing crashes and nothing is lost. (The firewall's rules match none
    of these frames: scapy reads malformed headers too leniently to say
    which ones a rule should match.)"""
    frames = _malformed()
    (tmp_path / "rules.yaml").write_text(
        "default: allow\nrules:\n  - {name: none, action: deny, src: 203.0.113.0/24}\n")
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(tmp_path / "rules.yaml")]},
             {"name": "mon", "program": prog("monitor"), "service": "monitor",
              "args": ["--interval", "0"]},
             {"name": "fwd", "program": prog("forward"), "service": "forward"}],
        chain=["firewall", "monitor", "forward", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 30,
               "the capture to be read")
    st = wait_drained(run)
    assert st["drops_total"] == 0
    assert all(n["state"] == "running" for n in st["nfs"])
    run.stop()
    assert all(p.exited() == 0 for p in run.nfs), [(p.label, p.exited()) for p in run.nfs]
    assert read(dst) == frames
    mon = next(p for p in run.nfs if p.label == "mon").log.read_text()
    assert re.search(r"malformed=[1-9]", mon)


def test_speedtest_numbers_are_checked(launch, node):
    """Each number option takes digits in its range (strtoul took '-1' as
    4294967295, and ' 5' and '+5'); the NF stops at start with the reason."""
    launch(deployment(node, ports=[], nfs=[
        {"name": "f", "program": prog("forward"), "service": "f"}], chain=["f", "drop"]))
    bad = [(["--packets", "-1"], "--packets: '-1' is not a whole number from 1 to 65536"),
           (["--packets", " 5"], "--packets: ' 5' is not a whole number from 1 to 65536"),
           (["--packets", "65537"], "--packets: '65537' is not a whole number from 1 to 65536"),
           (["--size", "63"], "--size: '63' is not a whole number from 64 to 1518"),
           (["--flows", "0"], "--flows: '0' is not a whole number from 1 to 4294967295"),
           (["--duration", "x"], "--duration: 'x' is not a number from 0 to 1000000000"),
           (["--report", "0"], "--report: '0' is not more than 0 seconds")]
    for args, msg in bad:
        r = subprocess.run([prog("speedtest"), "--", "--node", node, "-s", "st", *args],
                           capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stderr.splitlines()[0]) == (1, f"sluice-speedtest: {msg}"), \
            (args, r.stderr)
