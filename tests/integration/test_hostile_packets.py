"""Hostile and malformed frames through every sample NF that passes traffic
on and through sluiced's flow director, all built with ASan+UBSan.

A few thousand frames (every truncation of a set of templates, bogus header
fields, mutated and random bytes with fixed seeds, runts, full-size and
jumbo frames) go from a finite net_pcap port through a chain firewall ->
monitor -> flowclass -> ddos-detect -> scrubber -> forward -> port:out.
What each frame should become is derived here from the documentation, not
from the code: include/sluice/pkt.h and the rules at the top of
src/common/sl_pkt.c say which frames have a 5-tuple (``expect_of``); the
NFs' READMEs say what each does with a frame (the firewall applies its
rules to frames with a 5-tuple and its --non-ip verdict, allow, to the
others; the scrubber drops frames whose source is in its prefix; the
others pass everything on untouched). The test then checks exactly: the
output capture byte for byte and in order, every NF's rx = tx + drops,
each NF's own counters, the flow table's ``non_ip``, no sanitizer report
and every process exiting 0.

What arrives and what leaves, as found: net_pcap passes every record,
empty ones included, and chains mbufs for a frame longer than one (the NFs
parse the first segment); its writer cuts a frame's capture at 16128 bytes.
Nothing the test sends was mishandled by the NFs, libsluice or sluiced; a
frame cut inside its Ethernet header or a VLAN tag is counted as malformed
(as the monitor's and the firewall's READMEs now say), not as non-IP.
"""

from __future__ import annotations

import ipaddress
import random
import re
import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    deployment,
    port,
    prog,
    service,
    wait_drained,
)
from packets import read, write
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether

# The mbufs' data room (RTE_MBUF_DEFAULT_BUF_SIZE less the headroom): a
# longer frame arrives from net_pcap as a chain of segments, and the NFs
# parse the first segment only.
DATA_ROOM = 2048
# DPDK's net_pcap writes at most RTE_ETH_PCAP_SNAPLEN (16128) bytes of a
# frame in several segments (the record keeps the frame's length as its
# wire length): a longer frame's capture is cut there.
PCAP_TX_SNAPLEN = 16128

FW_RULES = """\
default: allow
rules:
  - {name: web, action: allow, proto: tcp, dport: 80}
  - {name: dns, action: deny, proto: udp, dport: 53}
  - {name: bad4, action: deny, src: 10.9.9.0/24}
  - {name: bad6, action: deny, src: "2001:db8:bad::/48"}
"""
FW_DENY = {"dns", "bad4", "bad6"}
SCRUB = ipaddress.ip_network("10.66.6.0/24")

MAC = dict(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")


# ---- what a frame is, by the documented parse rules ------------------------

L4_MIN = {6: 20, 17: 8, 132: 12, 1: 4, 58: 4}
PORTED = {6, 17, 132}
V6_EXT = {0, 43, 60}
V6_MAX_EXT = 8


@dataclass(frozen=True)
class Tuple5:
    family: int
    proto: int
    src: ipaddress.IPv4Address | ipaddress.IPv6Address
    dst: ipaddress.IPv4Address | ipaddress.IPv6Address
    sport: int
    dport: int
    tcp_flags: int | None = None  # None: no TCP header (not TCP, or a later fragment)
    # An IP fragment, the first too: the flow director (sl_pkt_flow_tuple)
    # keys it with ports 0, the NFs' sl_pkt_5tuple keeps a first one's ports.
    fragment: bool = field(default=False, compare=False)


def _rd16(b: bytes, o: int) -> int:
    return b[o] << 8 | b[o + 1]


def _l4(f: bytes, family: int, proto: int, ip: int, off: int, end: int,
        later: bool, fragment: bool = False) -> Tuple5 | str:
    addr, a = (ipaddress.IPv4Address, 12) if family == 4 else (ipaddress.IPv6Address, 8)
    w = 4 if family == 4 else 16
    src, dst = addr(f[ip + a:ip + a + w]), addr(f[ip + a + w:ip + a + 2 * w])
    if later:
        return Tuple5(family, proto, src, dst, 0, 0, fragment=True)
    if end - off < L4_MIN.get(proto, 0):
        return "malformed"
    sport, dport = (_rd16(f, off), _rd16(f, off + 2)) if proto in PORTED else (0, 0)
    return Tuple5(family, proto, src, dst, sport, dport, f[off + 13] if proto == 6 else None,
                  fragment=fragment)


def flow_key(t: Tuple5) -> Tuple5:
    """The tuple sluiced's flow director (and the NFs that key flows as it
    does, flowclass and monitor) key a packet by: a fragment's ports are 0,
    the first's too."""
    return replace(t, sport=0, dport=0, tcp_flags=None) if t.fragment else t


def expect_of(frame: bytes) -> Tuple5 | str:
    """The 5-tuple of a frame, "non_ip" or "malformed", as pkt.h and the
    rules at the top of sl_pkt.c describe sl_5tuple_get() (first segment
    only: callers pass at most DATA_ROOM bytes)."""
    f, n = frame, len(frame)
    if n < 14:
        return "malformed"  # not even an Ethernet header: sl_parse() refuses it
    off, typ = 14, _rd16(f, 12)
    for _ in range(2):
        if typ not in (0x8100, 0x88A8):
            break
        if n < off + 4:
            return "malformed"
        typ, off = _rd16(f, off + 2), off + 4
    if typ == 0x0800:
        avail = n - off
        if avail < 20 or f[off] >> 4 != 4:
            return "malformed"
        ihl = (f[off] & 0xF) * 4
        if ihl < 20 or ihl > avail:
            return "malformed"
        tot = _rd16(f, off + 2)
        if tot < ihl:
            return "malformed"
        frag = _rd16(f, off + 6)
        end = off + tot if tot < avail else n
        return _l4(f, 4, f[off + 9], off, off + ihl, end, bool(frag & 0x1FFF),
                   bool(frag & 0x3FFF))
    if typ == 0x86DD:
        avail = n - off
        if avail < 40 or f[off] >> 4 != 6:
            return "malformed"
        plen = _rd16(f, off + 4)
        end = off + 40 + plen if plen != 0 and plen < avail - 40 else n
        ip, nh, p, fragment = off, f[off + 6], off + 40, False
        for i in range(V6_MAX_EXT + 1):
            if nh not in V6_EXT and nh != 44:
                return _l4(f, 6, nh, ip, p, end, False, fragment)
            if i == V6_MAX_EXT:
                return "malformed"  # too long a chain
            if end - p < 8:
                return "malformed"
            if nh == 44:
                fo, nh, p = _rd16(f, p + 2), f[p], p + 8
                fragment = fragment or bool(fo & 0xFFF9)  # offset or M
                if fo & 0xFFF8:
                    return _l4(f, 6, nh, ip, p, end, True)
            else:
                hl = (f[p + 1] + 1) * 8
                if end - p < hl:
                    return "malformed"
                nh, p = f[p], p + hl
    return "non_ip"


def fw_rule(t: Tuple5 | str) -> str:
    """The firewall's counter for a frame (README: first match, then default)."""
    if isinstance(t, str):
        return "non-ip" if t == "non_ip" else "malformed"
    if t.proto == 6 and t.dport == 80:
        return "web"
    if t.proto == 17 and t.dport == 53:
        return "dns"
    if t.family == 4 and t.src in ipaddress.ip_network("10.9.9.0/24"):
        return "bad4"
    if t.family == 6 and t.src in ipaddress.ip_network("2001:db8:bad::/48"):
        return "bad6"
    return "default"


def scrubbed(t: Tuple5 | str) -> bool:
    return isinstance(t, Tuple5) and t.family == 4 and t.src in SCRUB


def mon_class(t: Tuple5 | str) -> str:
    if isinstance(t, str):
        return t
    return {6: "tcp", 17: "udp", 1: "icmp", 58: "icmp"}.get(
        t.proto, "other_ipv4" if t.family == 4 else "other_ipv6")


# ---- the frames --------------------------------------------------------------

def _templates() -> list[bytes]:
    pay = bytes(range(24))
    v4 = dict(src="10.0.0.1", dst="10.0.0.2")
    v6 = dict(src="2001:db8::1", dst="2001:db8::2")
    pkts = [
        Ether(**MAC) / IP(**v4) / TCP(sport=40000, dport=80, flags="S") / pay,
        Ether(**MAC) / IP(src="10.9.9.7", dst="10.0.0.2",
                          options=b"\x94\x04\x00\x00\x01\x01\x01\x00")
        / UDP(sport=5000, dport=5001) / pay,
        Ether(**MAC) / Dot1Q(vlan=7) / IP(**v4) / UDP(sport=4000, dport=53) / pay,
        Ether(**MAC) / Dot1AD(vlan=100) / Dot1Q(vlan=7) / IP(src="10.66.6.5", dst="10.0.0.2")
        / TCP(sport=1234, dport=443) / pay,
        Ether(**MAC) / IPv6(**v6) / UDP(sport=7000, dport=7001) / pay,
        Ether(**MAC) / IPv6(src="2001:db8:bad::9", dst="2001:db8::2") / IPv6ExtHdrHopByHop()
        / IPv6ExtHdrFragment(offset=0, m=1, id=9) / IPv6ExtHdrRouting(addresses=["2001:db8::3"])
        / TCP(sport=3333, dport=22) / pay,
        Ether(**MAC) / IP(**v4, flags="MF", frag=0, id=5) / UDP(sport=9, dport=53) / pay,
        Ether(**MAC) / IP(**v4, flags=0, frag=3, id=5, proto=17) / pay,
        Ether(**MAC) / IPv6(**v6) / IPv6ExtHdrFragment(offset=5, m=0, id=9, nh=17) / pay,
        Ether(**MAC) / IP(**v4) / ICMP(type=8) / pay,
        Ether(**MAC) / IPv6(**v6) / ICMPv6EchoRequest(data=pay),
        Ether(**MAC) / ARP(psrc="10.0.0.1", pdst="10.0.0.2"),
        Ether(**MAC) / IP(**v4, proto=132) / (b"\x00\x50\x00\x51" + bytes(12)),
        Ether(**MAC) / IP(src="10.0.0.3", dst="10.0.0.4", proto=47) / pay,
    ]
    return [bytes(p) for p in pkts]


def _bogus() -> list[bytes]:
    v4 = dict(src="10.0.0.1", dst="10.0.0.2")
    tcp4 = bytearray(bytes(Ether(**MAC) / IP(**v4) / TCP(sport=1, dport=2) / bytes(8)))
    udp6 = bytes(Ether(**MAC) / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=3, dport=4)
                 / bytes(8))
    out: list[bytes] = []

    def v4set(**fields) -> None:
        f = bytearray(tcp4)
        for k, v in fields.items():
            if k == "ihl":
                f[14] = 0x40 | v
            elif k == "ver":
                f[14] = v << 4 | 5
            elif k == "tot":
                f[16:18] = struct.pack("!H", v)
            elif k == "doff":
                f[46] = v << 4
        out.append(bytes(f))

    for ihl in range(16):  # IHL < 5, IHL past the end (15 > the 62-byte frame's room)
        v4set(ihl=ihl)
    for ver in (0, 6, 15):
        v4set(ver=ver)
    for tot in (0, 1, 19, 20, 21, 39, 40, 41, len(tcp4) - 14, 1000, 65535):
        v4set(tot=tot)  # smaller than the header, than IP+TCP, than the frame; larger
    for doff in range(16):
        v4set(doff=doff)  # TCP data offset < 5 or past the end: not the parser's business
    for plen in (0, 1, 7, 8, 15, 16, 17, 100, 65535):  # IPv6 payload length wrong
        f = bytearray(udp6)
        f[18:20] = struct.pack("!H", plen)
        out.append(bytes(f))
    f = bytearray(udp6)
    f[14] = 0x40
    out.append(bytes(f))  # version 4 in an IPv6 frame
    # Extension headers: one whose length runs past the end, chains of 7-10.
    base6 = Ether(**MAC) / IPv6(src="2001:db8::1", dst="2001:db8::2")
    out.append(bytes(base6 / IPv6ExtHdrHopByHop(len=255) / UDP() / bytes(8)))
    out.append(bytes(base6 / IPv6ExtHdrDestOpt(len=3) / UDP()))
    for n in (7, 8, 9, 10, 30):
        chain = base6
        for i in range(n):
            chain = chain / (IPv6ExtHdrDestOpt() if i % 2 else IPv6ExtHdrRouting())
        out.append(bytes(chain / UDP(sport=5, dport=6) / bytes(4)))
    # Two fragment headers, the second a later fragment.
    out.append(bytes(base6 / IPv6ExtHdrFragment(offset=0, m=1) / IPv6ExtHdrFragment(offset=8, nh=6)
                     / bytes(30)))
    # A third VLAN tag, a VLAN tag then ARP, LLDP, an ethertype < 1536.
    out.append(bytes(Ether(**MAC) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / IP(**v4)
                     / UDP()))
    out.append(bytes(Ether(**MAC) / Dot1Q(vlan=1) / ARP()))
    out.append(bytes(Ether(**MAC, type=0x88CC) / bytes(40)))
    out.append(bytes(Ether(**MAC, type=46) / bytes(46)))
    # Runts: 0 to 13 bytes, and an Ethernet header with nothing after it.
    for n in range(14):
        out.append(bytes(range(n)))
    out += [tcp4[:14], bytes(tcp4[:12]) + b"\x81\x00", bytes(tcp4[:12]) + b"\x86\xdd"]
    return out


def _sized() -> list[bytes]:
    """UDP frames of minimum, full and jumbo size (pcap frames have no FCS)."""
    out = []
    for n in (60, 64, 1500, 1514, 1518, DATA_ROOM - 1, DATA_ROOM, DATA_ROOM + 1, 4000, 9018,
              PCAP_TX_SNAPLEN, PCAP_TX_SNAPLEN + 1, 65535):
        hdr = Ether(**MAC) / IP(src="10.0.0.7", dst="10.0.0.8") / UDP(sport=1000, dport=2000)
        out.append(bytes(hdr / bytes((i * 7) & 0xFF for i in range(n - len(hdr)))))
    # Jumbo frames the firewall and the scrubber drop: their headers are in
    # the first segment.
    out.append(bytes(Ether(**MAC) / IP(src="10.66.6.1", dst="10.0.0.8") / UDP(sport=1, dport=2)
                     / bytes(3000)))
    out.append(bytes(Ether(**MAC) / IP(src="10.0.0.1", dst="10.0.0.8") / UDP(sport=1, dport=53)
                     / bytes(5000)))
    return out


def hostile_frames() -> list[bytes]:
    rng = random.Random(20261122)
    tpl = _templates()
    frames = [t[:n] for t in tpl for n in range(len(t) + 1)]
    frames += _bogus()
    frames += _sized()
    for _ in range(1500):  # templates with 1-4 bytes changed among their first 80
        f = bytearray(rng.choice(tpl))
        for _ in range(rng.randint(1, 4)):
            f[rng.randrange(min(80, len(f)))] = rng.randrange(256)
        frames.append(bytes(f[:rng.choice([len(f), rng.randrange(len(f) + 1)])]))
    heads = [b"", bytes(tpl[0][:12]) + b"\x08\x00", bytes(tpl[0][:12]) + b"\x86\xdd",
             bytes(tpl[0][:12]) + b"\x81\x00", bytes(tpl[0][:12]) + b"\x88\xa8\x00\x01\x81\x00"]
    for _ in range(600):  # random bytes, alone or after an Ethernet header
        frames.append(rng.choice(heads) + rng.randbytes(rng.randrange(120)))
    return frames


# ---- the run -------------------------------------------------------------

def _logs(run_dir: Path) -> dict[str, str]:
    return {p.stem: p.read_text(errors="replace") for p in run_dir.glob("*.log")}


def _kv(line: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S+)", line))


def _last(log: str, prefix: str) -> str:
    lines = [ln for ln in log.splitlines() if ln.startswith(prefix)]
    assert lines, f"no line starting {prefix!r} in the log"
    return lines[-1]


def fw_deny(rule: str, non_ip: str) -> bool:
    return rule in FW_DENY or (rule in ("non-ip", "malformed") and non_ip == "deny")


def syn_counts(t: Tuple5, protect: ipaddress.IPv4Network) -> bool:
    """ddos-detect --count syn --protect P: a SYN without ACK to P."""
    return (t.family == 4 and t.dst in protect and t.tcp_flags is not None
            and t.tcp_flags & 0x12 == 0x02)


def table_fill(keys: list, capacity: int) -> tuple[int, int]:
    """(entries, packets left untracked) of a table that keeps the first
    `capacity` distinct keys and never forgets one (READMEs: exactly that
    many fit)."""
    table: set = set()
    untracked = 0
    for k in keys:
        if k in table:
            continue
        if len(table) < capacity:
            table.add(k)
        else:
            untracked += 1
    return len(table), untracked


def _sym(t: Tuple5) -> tuple:
    a, b = sorted([(int(t.src), t.sport), (int(t.dst), t.dport)])
    return (t.family, t.proto, a, b)


def _dir(t: Tuple5) -> tuple:
    return (t.family, t.proto, int(t.src), int(t.dst), t.sport, t.dport)


def _prefix(t: Tuple5) -> tuple:
    n = ipaddress.ip_network(f"{t.src}/{24 if t.family == 4 else 64}", strict=False)
    return (t.family, int(n.network_address))


# Two runs: sluiced's default cached flow lookup with every NF's defaults,
# and the naive lookup (the NFs read the flow table themselves) with the
# other code paths: the linear matcher denying non-IP and malformed frames,
# small full tables, SYN counting, and forward writing into every frame.
VARIANTS = {
    "cached": dict(non_ip="allow", matcher="acl", mon_flows=65536, fc_flows=65536,
                   prefixes=65536, syn=False, tag=None, handoff="direct"),
    "naive": dict(non_ip="deny", matcher="linear", mon_flows=16, fc_flows=8,
                  prefixes=4, syn=True, tag=9, handoff="mgr"),
}
PROTECT = ipaddress.ip_network("10.0.0.0/8")


CHAIN = ["firewall", "monitor", "flowclass", "ddos-detect", "scrubber", "forward"]


def _nf_args(v: dict, rules: Path) -> dict[str, list[str]]:
    """Each NF's arguments for variant v, the firewall's rules file at rules."""
    return {
        "firewall": ["--rules", str(rules), "--non-ip", v["non_ip"], "--matcher", v["matcher"]],
        "monitor": ["--interval", "0", "--flows", str(v["mon_flows"])],
        "flowclass": ["--stats-ms", "0", "--flows", str(v["fc_flows"])],
        "ddos-detect": ["--threshold", "1000000", "--stats-ms", "0",
                        "--prefixes", str(v["prefixes"])]
        + (["--count", "syn", "--protect", str(PROTECT)] if v["syn"] else []),
        "scrubber": ["--prefix", str(SCRUB), "--stats-ms", "0"],
        "forward": ["--instance", str(v["tag"]), "--tag-src-mac"] if v["tag"] is not None else [],
    }


@pytest.mark.parametrize("lookup", list(VARIANTS))
def test_hostile_frames_through_every_nf(launch, node, tmp_path, lookup):
    v = VARIANTS[lookup]
    frames = hostile_frames()
    assert len(frames) > 3000
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    rules = tmp_path / "fw.yaml"
    rules.write_text(FW_RULES)
    chain = CHAIN
    args = _nf_args(v, rules)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": s, "program": prog(s, ASAN_BUILD), "service": s, "args": args[s]}
             for s in chain],
        chain=[*chain, "port:out"],
        handoff=v["handoff"],
        sluiced_args=["--flow-lookup", lookup],
    ), build=ASAN_BUILD)
    st = wait_drained(run)
    procs = run.processes()
    run.stop()

    # What arrives: the pcap PMD reads every record, even empty ones, and
    # chains mbufs for a frame longer than one.
    rx = port(st, "in")["rx_pkts"]
    assert rx == len(frames), (rx, len(frames))
    assert port(st, "in")["rx_bytes"] == sum(map(len, frames))

    # The expectation, frame by frame, from the documentation.
    kinds = [expect_of(f[:DATA_ROOM]) for f in frames]
    fw = [fw_rule(k) for k in kinds]
    after_fw = [i for i, r in enumerate(fw) if not fw_deny(r, v["non_ip"])]
    passed = [i for i in after_fw if not scrubbed(kinds[i])]

    _check_output(read(dst), frames, passed, v["tag"])
    _check_counters(st, frames, after_fw, passed)

    # sluiced's flow director: non_ip counts the frames with no 5-tuple.
    no_tuple = sum(isinstance(k, str) for k in kinds)
    assert st["flows"]["lookup"] == lookup
    assert st["flows"]["non_ip"] == no_tuple

    # Each NF's own counters, printed at exit.
    logs = _logs(tmp_path / "run0")
    _check_nf_logs(logs, v, fw, [kinds[i] for i in after_fw], len(passed),
                   len(after_fw) - len(passed))

    # No sanitizer report, and every process ended cleanly.
    by_label = {p.label: p for p in procs}
    text = "".join(logs.values())
    assert_no_sanitizer_report(text)
    codes = {lbl: p.exited() for lbl, p in by_label.items()}
    assert len(codes) == 1 + len(chain) and set(codes.values()) == {0}, codes


def _check_output(out: list[bytes], frames: list[bytes], passed: list[int],
                  tag: int | None) -> None:
    """The output pcap holds exactly the passed frames, in order, cut to the
    pcap PMD's snap length and tagged by forward when tag is set."""
    def tagged(f: bytes) -> bytes:
        f = f[:PCAP_TX_SNAPLEN]
        if tag is None or len(f) < 14:
            return f  # README: shorter than an Ethernet header: left alone
        return f[:11] + bytes([tag]) + f[12:]

    want = [tagged(frames[i]) for i in passed]
    assert len(out) == len(want)
    for j, (a, b) in enumerate(zip(out, want, strict=True)):
        if a != b:
            at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                      min(len(a), len(b)))
            pytest.fail(f"output frame {j} (input frame {passed[j]}, {len(b)} bytes expected) "
                        f"has {len(a)} bytes, first difference at byte {at}; "
                        f"expected frame starts {b[:64].hex()}")


def _check_counters(st: dict, frames: list[bytes], after_fw: list[int],
                    passed: list[int]) -> None:
    """sluiced's drop, service, NF and port counters agree with what the
    firewall and the scrubber were expected to drop."""
    fw_dropped = len(frames) - len(after_fw)
    sc_dropped = len(after_fw) - len(passed)
    assert st["drops"] == {**{k: 0 for k in st["drops"]}, "nf_verdict": fw_dropped + sc_dropped}
    assert st["drops_total"] == fw_dropped + sc_dropped
    seen = {"firewall": len(frames), "monitor": len(after_fw), "flowclass": len(after_fw),
            "ddos-detect": len(after_fw), "scrubber": len(after_fw), "forward": len(passed)}
    dropped = {"firewall": fw_dropped, "scrubber": sc_dropped}
    for s in CHAIN:
        sv = service(st, s)
        assert (sv["rx_pkts"], sv["tx_pkts"], sum(sv["drops"].values())) == (
            seen[s], seen[s] - dropped.get(s, 0), dropped.get(s, 0)), s
    for n in st["nfs"]:
        assert n["rx_pkts"] == n["tx_pkts"] + sum(n["drops"].values()), n
    assert port(st, "out")["tx_pkts"] == len(passed)
    assert port(st, "out")["tx_bytes"] == sum(len(frames[i]) for i in passed)


def _check_nf_logs(logs: dict[str, str], v: dict, fw: list, seen_kinds: list,
                   n_passed: int, sc_dropped: int) -> None:
    """The counters each NF prints at exit match the expectation: fw the
    firewall rule of every input frame, seen_kinds the kind of every frame
    past the firewall."""
    fwlog = logs[next(lbl for lbl in logs if lbl.startswith("firewall"))]
    got = {}
    for ln in fwlog.splitlines():
        if ln.startswith("fw-counter: "):
            kv = _kv(ln)
            key = kv["name"] if kv["rule"].isdigit() else kv["rule"]
            got[key] = int(kv["packets"])
    names = ["web", "dns", "bad4", "bad6", "default", "non-ip", "malformed"]
    assert got == {k: fw.count(k) for k in names}
    seen_tuples = [k for k in seen_kinds if isinstance(k, Tuple5)]
    mon = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith("monitor"))],
                    "mon-proto: packets"))
    classes = ["tcp", "udp", "icmp", "other_ipv4", "other_ipv6", "non_ip", "malformed"]
    assert {c: int(mon[c]) for c in classes} == {
        c: sum(mon_class(k) == c for k in seen_kinds) for c in classes}
    ms = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith("monitor"))], "mon-stats:"))
    flows, untracked = table_fill([_dir(flow_key(t)) for t in seen_tuples], v["mon_flows"])
    assert {k: int(ms[k]) for k in ("ipv4", "ipv6", "flows", "flows_untracked")} == {
        "ipv4": sum(t.family == 4 for t in seen_tuples),
        "ipv6": sum(t.family == 6 for t in seen_tuples),
        "flows": flows, "flows_untracked": untracked}
    fc = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith("flowclass"))],
                   "flowclass-stats:"))
    flows, untracked = table_fill([_sym(flow_key(t)) for t in seen_tuples], v["fc_flows"])
    assert (int(fc["flows"]), int(fc["flows_untracked"])) == (flows, untracked)
    dd = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith("ddos-detect"))],
                   "ddos-stats:"))
    counted = [t for t in seen_tuples if not v["syn"] or syn_counts(t, PROTECT)]
    prefixes, untracked = table_fill([_prefix(t) for t in counted], v["prefixes"])
    assert {k: int(dd[k]) for k in ("counted", "ignored", "prefixes", "untracked")} == {
        "counted": len(counted) - untracked, "ignored": len(seen_tuples) - len(counted),
        "prefixes": prefixes, "untracked": untracked}
    seen_no_tuple = sum(isinstance(k, str) for k in seen_kinds)
    for label, prefix in (("flowclass", "flowclass-stats:"), ("ddos-detect", "ddos-stats:"),
                          ("scrubber", "scrubber-stats:")):
        kv = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith(label))], prefix))
        assert (int(kv["packets"]), int(kv["non_ip"])) == (len(seen_kinds), seen_no_tuple), label
    sc = _kv(_last(logs[next(lbl for lbl in logs if lbl.startswith("scrubber"))],
                   "scrubber-stats:"))
    assert (int(sc["passed"]), int(sc["dropped_prefix"])) == (n_passed, sc_dropped)
