"""sluice-firewall's SIGHUP reload does not stop traffic: the new rule file
is read and compiled (rte_acl) by a thread of its own while packets go on
through the old rules, and the tables are swapped between two bursts
(nfs/firewall/README.md, "Reload").

The firewall runs a few thousand random rules (an rte_acl build of a
second or more) under the endless traffic of a net_pcap infinite_rx
capture. The capture is read in order and nothing is lost before the
firewall, so the firewall sees the capture over and over: the first R
packets, R being what the reload counters add up to, were judged by the old
rules and the rest by the new ones, rule by rule, exactly.

Also with the ASan+UBSan build: the builder thread is not a DPDK lcore,
and rte_acl_create()/rte_acl_build() allocate from sluiced's hugepage heap
from it."""

from __future__ import annotations

import ipaddress
import json
import random
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
    wait_drained,
    wait_until,
)
from packets import write
from scapy.all import IP, TCP, UDP, Ether, Raw

N_RANDOM = 3000  # random rules in each file: a build of seconds here

# The flow the new file denies (rule 1), and one both files deny (last).
FLOW_X = ("udp", "172.16.0.66", 4000, "192.168.0.9", 5353)
TELNET = {"name": "no-telnet", "action": "deny", "proto": "tcp", "dport": 23}
BLOCK_X = {"name": "block-x", "action": "deny", "proto": "udp", "src": "172.16.0.66/32",
           "dport": 5353}


def _capture() -> list[bytes]:
    """60 frames from 172.16.0.0/24: TCP to 80, 443 and 23 (telnet), UDP to
    53 and flow X, sizes from 60 to 1400 bytes."""
    rnd = random.Random(7)
    out = []
    for i in range(60):
        if i % 6 == 1:
            proto, src, sport, dst, dport = FLOW_X
        else:
            proto, dport = rnd.choice([("tcp", 80), ("tcp", 443), ("tcp", 23), ("udp", 53)])
            src, sport = f"172.16.0.{rnd.randrange(1, 60)}", 2000 + rnd.randrange(100)
            dst = f"192.168.0.{rnd.randrange(1, 20)}"
        l4 = (TCP if proto == "tcp" else UDP)(sport=sport, dport=dport)
        pkt = (Ether(src="02:00:00:00:00:05", dst="02:00:00:00:00:06")
               / IP(src=src, dst=dst, id=i) / l4)
        pad = max(0, rnd.choice([60, 200, 700, 1400]) - len(pkt))
        out.append(bytes(pkt / Raw(bytes([i]) * pad)))
    return out


def _random_rules(n: int, seed: int) -> list[dict]:
    """n rules like bench/micro's: tcp or udp, source and destination
    prefixes of 8-28 bits inside 10.0.0.0/8, a destination port range."""
    rnd = random.Random(seed)
    rules = []
    for _ in range(n):
        src, dst = (ipaddress.ip_network(
            (0x0A000000 | rnd.getrandbits(24), 8 + rnd.randrange(21)), strict=False)
            for _ in range(2))
        lo = rnd.randrange(60000)
        rules.append({"action": rnd.choice(["allow", "deny"]),
                      "proto": rnd.choice(["tcp", "udp"]), "src": str(src), "dst": str(dst),
                      "dport": f"{lo}-{lo + rnd.randrange(1000)}"})
    return rules


def _tuple(frame: bytes) -> tuple[str, ipaddress.IPv4Address, ipaddress.IPv4Address, int]:
    p = Ether(frame)
    l4 = p[TCP] if TCP in p else p[UDP]
    return ("tcp" if TCP in p else "udp", ipaddress.ip_address(p[IP].src),
            ipaddress.ip_address(p[IP].dst), l4.dport)


def _matches(rule: dict, t: tuple) -> bool:
    """The test's own reading of a rule (README.md, "Rule file")."""
    proto, src, dst, dport = t
    if "proto" in rule and rule["proto"] != proto:
        return False
    for key, addr in (("src", src), ("dst", dst)):
        if key in rule and addr not in ipaddress.ip_network(rule[key]):
            return False
    if "dport" in rule:
        lo, _, hi = str(rule["dport"]).partition("-")
        if not int(lo) <= dport <= int(hi or lo):
            return False
    return True


def _judge(rules: list[dict], cap: list[bytes]) -> list[int | None]:
    """For each frame of cap, the index of the first rule matching it, or
    None (the default policy, allow)."""
    tuples = [_tuple(f) for f in cap]
    return [next((i for i, r in enumerate(rules) if _matches(r, t)), None) for t in tuples]


def _times(cap_len: int, a: int, b: int) -> list[int]:
    """How many times each frame of the capture is among packets a..b-1 of
    the endless replay."""
    return [(b - i + cap_len - 1) // cap_len - (a - i + cap_len - 1) // cap_len
            for i in range(cap_len)]


def _report(rules: list[dict], cap: list[bytes], hits: list[int | None], times: list[int],
            reason: str, path: str) -> list[str]:
    """The counter report the firewall must print (README.md, "Counters")
    for the replay packets counted by `times`."""
    pk = [0] * (len(rules) + 1)  # the last: default
    by = [0] * (len(rules) + 1)
    for f, h, t in zip(cap, hits, times, strict=True):
        k = len(rules) if h is None else h
        pk[k] += t
        by[k] += t * len(f)
    lines = [f"fw-counters: reason={reason} file={path} rules={len(rules)} matcher=acl"]
    for i, r in enumerate(rules):
        lines.append(f"fw-counter: rule={i + 1} name={r.get('name', '-')} "
                     f"action={r['action']} packets={pk[i]} bytes={by[i]}")
    lines += [f"fw-counter: rule=default name=- action=allow packets={pk[-1]} bytes={by[-1]}",
              "fw-counter: rule=non-ip name=- action=allow packets=0 bytes=0",
              "fw-counter: rule=malformed name=- action=allow packets=0 bytes=0"]
    denied = sum(p for p, r in zip(pk, rules, strict=False) if r["action"] == "deny")
    lines.append(f"fw-counters: end packets={sum(pk)} allowed={sum(pk) - denied} "
                 f"denied={denied}")
    return lines


def _printed(log: str, reason: str) -> list[str]:
    lines = log.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith(f"fw-counters: reason={reason} "))
    j = next(k for k in range(i, len(lines)) if lines[k].startswith("fw-counters: end "))
    return lines[i:j + 1]


def _fw(st: dict) -> dict:
    (fw,) = [n for n in st["nfs"] if n["service"] == "firewall"]
    return fw


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_reload_of_thousands_of_rules_under_traffic(launch, node, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    cap = _capture()
    old = [*_random_rules(N_RANDOM, seed=1), TELNET]
    new = [BLOCK_X, *_random_rules(N_RANDOM, seed=2), TELNET]
    old_hits, new_hits = _judge(old, cap), _judge(new, cap)
    # Only the named rules meet the traffic: telnet under both, flow X
    # under the new rules only.
    assert set(old_hits) == {None, len(old) - 1}
    assert set(new_hits) == {None, 0, len(new) - 1}
    assert [i for i, h in enumerate(new_hits) if h == 0] == list(range(1, 60, 6))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"default": "allow", "rules": old}))
    src = write(tmp_path / "in.pcap", cap)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fw", "program": prog("firewall", build), "service": "firewall",
              "args": ["--rules", str(rules)]}],
        chain=["firewall", "port:out"]), build)  # the default --nf-hang-ms: 1 s
    (fw,) = run.nfs
    wait_until(lambda: _fw(run.client.call("stats"))["tx_pkts"] > 10_000, 30,
               "traffic through the firewall")

    rules.write_text(json.dumps({"default": "allow", "rules": new}))
    run.kill(fw, signal.SIGHUP)
    started = (f"sluice-firewall: reloading {rules} in the background; packets go on "
               f"through the {len(old)} current rules until it is built")
    wait_until(lambda: started in fw.log.read_text(), 10, "the firewall to start the reload")
    reloaded = (f"sluice-firewall: reloaded {len(new)} rules from {rules}, default allow, "
                f"non-IP allow, matcher acl\n")
    # The firewall's counters in sluiced's stats while the new rules are
    # built: each sample is taken before the log is seen without the
    # "reloaded" line, so all of them are from during the build.
    during = []
    deadline = time.monotonic() + 120
    while True:
        f = _fw(run.client.call("stats"))
        if reloaded in fw.log.read_text():
            break
        during.append((f["rx_pkts"], f["tx_pkts"]))
        assert time.monotonic() < deadline, "timed out after 120 s waiting for the reload"
        time.sleep(0.05)
    print(f"{len(during)} samples during the build: rx {during[0][0]} -> {during[-1][0]}")
    assert len(during) >= 2, "the build ended before the firewall's counters were sampled twice"
    assert during[-1][0] > during[0][0], during  # rx went on: no stall
    assert during[-1][1] > during[0][1], during  # and tx
    wait_until(lambda: _fw(run.client.call("stats"))["tx_pkts"] > during[-1][1] + 10_000, 30,
               "traffic through the new rules")

    run.client.call("rx.pause")
    st = wait_drained(run)
    n = _fw(st)["rx_pkts"]
    assert port(st, "in")["rx_pkts"] == n  # nothing lost before the firewall
    run.stop()
    assert fw.exited() == 0
    log = fw.log.read_text()
    assert_no_sanitizer_report(log, fw.log.name)
    at_reload = _printed(log, "reload")
    r = int(re.fullmatch(r"fw-counters: end packets=(\d+) .*", at_reload[-1])[1])
    # The old rules judged every packet up to the swap, the build's too.
    assert during[0][0] < r <= n
    assert at_reload == _report(old, cap, old_hits, _times(len(cap), 0, r), "reload",
                                str(rules))
    assert _printed(log, "exit") == _report(new, cap, new_hits, _times(len(cap), r, n), "exit",
                                            str(rules))
    # In order: started, the old counters at the swap, then the new rules.
    i_start, i_counters, i_reloaded = (
        log.index(started), log.index("fw-counters: reason=reload"), log.index(reloaded))
    assert i_start < i_counters < i_reloaded
    assert log.count("fw-counters: reason=reload") == 1
    # sluiced's drops are the firewall's denies, exactly.
    denied = sum(t for h, t in zip(old_hits, _times(len(cap), 0, r), strict=True)
                 if h is not None) + sum(
        t for h, t in zip(new_hits, _times(len(cap), r, n), strict=True) if h is not None)
    assert service(st, "firewall")["drops"]["nf_verdict"] == denied
    assert st["drops_total"] == denied
    assert port(st, "out")["tx_pkts"] == n - denied
