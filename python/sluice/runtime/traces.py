"""Deterministic packet captures for the demo, the tests and the benchmarks.

Three kinds, all written as classic pcap files (Ethernet, microsecond stamps):

* ``http_mix`` — the demo traffic (examples/traces/http-mix.pcap): clients in
  10.0.0.0/16 talk to servers in 192.168.0.0/24 over many flows, mostly TCP
  to ports 80 (HTTP text) and 443 (TLS-like records), some UDP DNS (53). TCP
  flows open with a handshake; packets go both ways; flows overlap in time.
  Frame sizes: about 40 % 64 bytes, 30 % 300-700 bytes, 30 % 1024-1514 bytes
  (1518 on the wire with the FCS).
* ``fixed_size`` — benchmark traffic: UDP frames of one size over N flows
  (flow k is 10.0.0.0/16 address k, source port per 65,000 flows), packets
  round robin over the flows.
* ``ddos_mix`` — the DDoS scenario (examples/traces/ddos.pcap, docs/ddos.md):
  clients each in its own /24 talk to servers in 192.168.0.0/24, and from
  30 % of the packets on one prefix (10.66.6.0/24) floods a server. Made by
  ``sluice trace gen --ddos FILE``; `sluice trace gen` without --ddos makes
  the other two.

The same arguments always give the same bytes: randomness comes only from
``random.Random(seed)``. scapy builds one header template per protocol;
packets are made from the templates by writing fields and checksums
directly, which is what makes 100,000 flows take a second, not minutes.
"""

from __future__ import annotations

import os
import random
import struct
import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.tracenames import (  # the names of the known captures, re-exported
    ANOMALY_EXPLOIT_PREFIX,
    ANOMALY_EXPLOITS,
    ANOMALY_PACKETS,
    DDOS_ATTACK_PREFIX,
    DDOS_CLIENTS,
    DDOS_GEN_COMMAND,  # noqa: F401
    DDOS_PACKETS,
    DEMO_FLOWS,
    DEMO_PACKETS,
    DEMO_SEED,
    GENERATED,  # noqa: F401
    demo_trace_path,  # noqa: F401
    gen_command,  # noqa: F401
    generated_trace_params,
)

START_TS_US = 1_700_000_000 * 1_000_000
GAP_US = 10

CLIENT_MAC = bytes.fromhex("020000000001")
SERVER_MAC = bytes.fromhex("020000000002")
MIN_FRAME = 60  # Ethernet minimum without FCS
MAX_FRAME = 1514  # 1500-byte MTU

ETH, IP4 = 14, 20
TCP_HDR = ETH + IP4 + 20  # 54
UDP_HDR = ETH + IP4 + 8  # 42

TH_FIN, TH_SYN, TH_RST, TH_PSH, TH_ACK = 0x01, 0x02, 0x04, 0x08, 0x10


class TraceError(ValueError):
    """Bad generator arguments."""


# -- checksums ----------------------------------------------------------------

def _sum16(data: bytes) -> int:
    """Ones' complement sum of big-endian 16-bit words (not yet inverted)."""
    if len(data) & 1:
        data += b"\0"
    s = sum(array("H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    if sys.byteorder == "little":
        s = ((s & 0xFF) << 8) | (s >> 8)
    return s


def _fold(s: int) -> int:
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of data."""
    return ~_sum16(data) & 0xFFFF


# -- templates (scapy) ------------------------------------------------------------

_templates: dict[str, bytes] = {}


def _template(kind: str) -> bytes:
    """Ethernet/IPv4/TCP or UDP header bytes built by scapy, fields filled later."""
    if kind not in _templates:
        from scapy.layers.inet import IP, TCP, UDP
        from scapy.layers.l2 import Ether

        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        if kind == "tcp":
            pkt = eth / IP(flags="DF", ttl=64, id=0) / TCP(sport=1, dport=1, window=64240,
                                                           flags="A", seq=0, ack=0)
        else:
            pkt = eth / IP(ttl=64, id=0) / UDP(sport=1, dport=1)
        _templates[kind] = bytes(pkt)
    return _templates[kind]


@dataclass(frozen=True)
class _Ends:
    smac: bytes
    dmac: bytes
    sip: bytes
    dip: bytes
    sport: int
    dport: int
    ttl: int


def _ip_header(tmpl: bytes, e: _Ends, total_len: int, ip_id: int) -> bytearray:
    ip = bytearray(tmpl[ETH:ETH + IP4])
    struct.pack_into("!HH", ip, 2, total_len, ip_id)
    ip[8] = e.ttl
    ip[10:12] = b"\0\0"
    ip[12:16] = e.sip
    ip[16:20] = e.dip
    struct.pack_into("!H", ip, 10, checksum(bytes(ip)))
    return ip


def _frame(l4: bytes, tmpl: bytes, e: _Ends, ip_id: int, frame_len: int) -> bytes:
    ip = _ip_header(tmpl, e, IP4 + len(l4), ip_id)
    frame = e.dmac + e.smac + tmpl[12:14] + bytes(ip) + l4
    if len(frame) < frame_len:
        frame += b"\0" * (frame_len - len(frame))  # Ethernet padding after the IP packet
    return frame


def _l4_checksum(l4: bytearray, e: _Ends, proto: int, off: int) -> None:
    pseudo = e.sip + e.dip + struct.pack("!BBH", 0, proto, len(l4))
    l4[off:off + 2] = b"\0\0"
    c = ~_fold(_sum16(pseudo) + _sum16(bytes(l4))) & 0xFFFF
    if proto == 17 and c == 0:
        c = 0xFFFF
    struct.pack_into("!H", l4, off, c)


def tcp_frame(e: _Ends, seq: int, ack: int, flags: int, ip_id: int, payload: bytes,
              frame_len: int = 0) -> bytes:
    tmpl = _template("tcp")
    tcp = bytearray(tmpl[ETH + IP4:TCP_HDR]) + payload
    struct.pack_into("!HHII", tcp, 0, e.sport, e.dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF)
    tcp[13] = flags
    _l4_checksum(tcp, e, 6, 16)
    return _frame(bytes(tcp), tmpl, e, ip_id, frame_len)


def udp_frame(e: _Ends, ip_id: int, payload: bytes, frame_len: int = 0) -> bytes:
    tmpl = _template("udp")
    udp = bytearray(tmpl[ETH + IP4:UDP_HDR]) + payload
    struct.pack_into("!HHH", udp, 0, e.sport, e.dport, len(udp))
    _l4_checksum(udp, e, 17, 6)
    return _frame(bytes(udp), tmpl, e, ip_id, frame_len)


# -- the HTTP-like mix ------------------------------------------------------------

@dataclass
class _Flow:
    index: int
    kind: str  # "http", "https", "dns"
    client: _Ends
    server: _Ends
    count: int
    roles: list[tuple[str, str]]  # (direction "c2s"/"s2c", role)
    seq_c: int = 0
    seq_s: int = 0
    id_c: int = 0
    id_s: int = 0
    sent_c: int = 0
    sent_s: int = 0


def _size_pool(rng: random.Random, n: int, n_control: int) -> list[int]:
    """Frame sizes for the n - n_control data packets, so that the whole
    trace is ~40 % 64-byte, ~30 % 300-700, ~30 % 1024-1514."""
    n_small = max(0, round(0.4 * n) - n_control)
    n_mid = round(0.3 * n)
    n_data = n - n_control
    n_small = min(n_small, n_data)
    n_mid = min(n_mid, n_data - n_small)
    n_large = n_data - n_small - n_mid
    pool = ([64] * n_small + [rng.randint(300, 700) for _ in range(n_mid)]
            + [rng.randint(1024, MAX_FRAME) for _ in range(n_large)])
    rng.shuffle(pool)
    return pool


def _flow_counts(rng: random.Random, packets: int, flows: int) -> list[int]:
    """Packets per flow: at least one each, heavy-tailed (a few large flows)."""
    weights = [rng.paretovariate(1.2) for _ in range(flows)]
    total = sum(weights)
    extra = packets - flows
    counts = [1 + int(extra * w / total) for w in weights]
    short = packets - sum(counts)
    order = sorted(range(flows), key=lambda i: -weights[i])
    for i in range(short):
        counts[order[i % flows]] += 1
    return counts


def _http_payload(rng: random.Random, f: _Flow, direction: str, n: int, first: bool) -> bytes:
    if n <= 0:
        return b""
    host = f"srv{f.server.dip[3]}.example.com"
    if direction == "c2s":
        head = (f"GET /item/{f.index}/{rng.randrange(10**6)} HTTP/1.1\r\nHost: {host}\r\n"
                f"User-Agent: sluice-trace\r\nAccept: */*\r\nX-Pad: ").encode()
        pad = max(0, n - len(head) - 4)
        return (head + b"a" * pad + b"\r\n\r\n")[:n]
    if first:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 65536\r\n\r\n"
    else:
        head = b""
    text = f"<p>sluice demo flow {f.index}, served by {host}.</p>\n".encode()
    data = head + text * (n // len(text) + 1)
    return data[:n]


def _tls_payload(rng: random.Random, n: int) -> bytes:
    if n <= 0:
        return b""
    body = rng.randbytes(max(0, n - 5))
    return (bytes([0x17, 0x03, 0x03]) + struct.pack("!H", max(0, n - 5)) + body)[:n]


def _dns_payload(rng: random.Random, f: _Flow, direction: str, n: int) -> bytes:
    qname = b"".join(bytes([len(p)]) + p for p in
                     (f"host{rng.randrange(1000)}".encode(), b"example", b"com")) + b"\0"
    flags = 0x0100 if direction == "c2s" else 0x8180
    msg = struct.pack("!HHHHHH", f.index & 0xFFFF, flags, 1, int(direction == "s2c"), 0, 0)
    msg += qname + struct.pack("!HH", 1, 1)
    if direction == "s2c":
        msg += b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + f.server.dip
    return (msg + b"\0" * n)[:n]


def _make_flows(rng: random.Random, packets: int, flows: int) -> list[_Flow]:
    counts = _flow_counts(rng, packets, flows)
    used: set[tuple[bytes, int]] = set()
    out = []
    for i in range(flows):
        r = rng.random()
        kind = "dns" if r < 0.15 else ("https" if r < 0.5 else "http")
        while True:
            host = rng.randint(1, 0xFFFE)
            cip = bytes([10, 0, host >> 8, host & 0xFF])
            cport = rng.randint(32768, 60999)
            if (cip, cport) not in used:
                used.add((cip, cport))
                break
        sip = bytes([192, 168, 0, rng.randint(1, 254)])
        sport = {"http": 80, "https": 443, "dns": 53}[kind]
        client = _Ends(CLIENT_MAC, SERVER_MAC, cip, sip, cport, sport, 64)
        server = _Ends(SERVER_MAC, CLIENT_MAC, sip, cip, sport, cport, 58)
        n = counts[i]
        roles: list[tuple[str, str]] = []
        if kind == "dns":
            roles = [("c2s" if k % 2 == 0 else "s2c", "data") for k in range(n)]
        else:
            if n >= 4:
                roles = [("c2s", "syn"), ("s2c", "synack"), ("c2s", "ack")]
            for k in range(n - len(roles)):
                # a request, then responses, with the client acknowledging now and then
                roles.append(("c2s" if k % 3 == 0 else "s2c", "data"))
        f = _Flow(i, kind, client, server, n, roles,
                  seq_c=rng.getrandbits(32), seq_s=rng.getrandbits(32),
                  id_c=rng.getrandbits(16), id_s=rng.getrandbits(16))
        if not roles or roles[0][1] != "syn":
            f.seq_c += 1  # a connection already open: SYN consumed one number
            f.seq_s += 1
        out.append(f)
    return out


def http_mix(packets: int = DEMO_PACKETS, flows: int = DEMO_FLOWS,
             seed: int = DEMO_SEED) -> list[bytes]:
    """The demo traffic as a list of Ethernet frames (see the module doc)."""
    if packets < 1:
        raise TraceError(f"--packets must be at least 1, got {packets}")
    if flows < 1:
        raise TraceError(f"--flows must be at least 1, got {flows}")
    if flows > packets:
        raise TraceError(f"--flows ({flows}) cannot exceed --packets ({packets}): "
                         f"each flow needs at least one packet")
    if flows > 60000:
        raise TraceError(f"--flows {flows} is too many for the HTTP mix (at most 60000); "
                         f"use --size for benchmark traces with more flows")
    rng = random.Random(seed)
    fl = _make_flows(rng, packets, flows)
    n_control = sum(1 for f in fl for _, role in f.roles if role != "data")
    sizes = iter(_size_pool(rng, packets, n_control))
    order = [f.index for f in fl for _ in range(f.count)]
    rng.shuffle(order)
    pos = [0] * flows
    frames = []
    for idx in order:
        f = fl[idx]
        direction, role = f.roles[pos[idx]]
        pos[idx] += 1
        frames.append(_packet(rng, f, direction, role, sizes))
    return frames


def _packet(rng: random.Random, f: _Flow, direction: str, role: str,
            sizes: Iterator[int]) -> bytes:
    c2s = direction == "c2s"
    ends = f.client if c2s else f.server
    if c2s:
        f.id_c = (f.id_c + 1) & 0xFFFF
        ip_id = f.id_c
    else:
        f.id_s = (f.id_s + 1) & 0xFFFF
        ip_id = f.id_s
    if role != "data":
        flags = {"syn": TH_SYN, "synack": TH_SYN | TH_ACK, "ack": TH_ACK}[role]
        if role == "syn":
            frame = tcp_frame(ends, f.seq_c, 0, flags, ip_id, b"", 64)
            f.seq_c += 1
        elif role == "synack":
            frame = tcp_frame(ends, f.seq_s, f.seq_c, flags, ip_id, b"", 64)
            f.seq_s += 1
        else:
            frame = tcp_frame(ends, f.seq_c, f.seq_s, flags, ip_id, b"", 64)
        return frame
    size = next(sizes)
    if f.kind == "dns":
        return udp_frame(ends, ip_id, _dns_payload(rng, f, direction, size - UDP_HDR), size)
    n = size - TCP_HDR
    if f.kind == "http":
        payload = _http_payload(rng, f, direction, n, first=not c2s and f.sent_s == 0)
    else:
        payload = _tls_payload(rng, n)
    if c2s:
        frame = tcp_frame(ends, f.seq_c, f.seq_s, TH_PSH | TH_ACK, ip_id, payload, size)
        f.seq_c += len(payload)
        f.sent_c += 1
    else:
        frame = tcp_frame(ends, f.seq_s, f.seq_c, TH_PSH | TH_ACK, ip_id, payload, size)
        f.seq_s += len(payload)
        f.sent_s += 1
    return frame


# -- fixed-size benchmark traffic ---------------------------------------------------

def fixed_size(packets: int, flows: int = 1, size: int = 64, seed: int = DEMO_SEED) -> list[bytes]:
    """UDP frames of ``size`` bytes over ``flows`` flows, round robin.

    Flow k: source 10.0.0.0/16 host 1 + k % 65000, source port 1024 + k // 65000,
    destination 192.168.0.1:9. One scapy template; per flow only the source
    address, the port and the two checksums are written.
    """
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise TraceError(f"--size must be between {MIN_FRAME} and {MAX_FRAME} bytes, got {size}")
    if flows < 1:
        raise TraceError(f"--flows must be at least 1, got {flows}")
    if packets < 1:
        raise TraceError(f"--packets must be at least 1, got {packets}")
    if flows > 65000 * 64000:
        raise TraceError(f"--flows {flows} is too many (at most {65000 * 64000})")
    rng = random.Random(seed)
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    payload = rng.randbytes(size - UDP_HDR)
    tmpl = bytearray(bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                           / IP(src="10.0.0.1", dst="192.168.0.1", ttl=64, id=0)
                           / UDP(sport=1024, dport=9) / Raw(payload)))
    assert len(tmpl) == size
    # Partial sums with the varying fields (source address, source port) zeroed.
    ip0 = bytearray(tmpl[ETH:ETH + IP4])
    ip0[10:12] = b"\0\0"
    ip0[12:16] = b"\0\0\0\0"
    ip_sum = _sum16(bytes(ip0))
    udp0 = bytearray(tmpl[ETH + IP4:])
    udp0[0:2] = b"\0\0"
    udp0[6:8] = b"\0\0"
    pseudo = b"\0\0\0\0" + tmpl[ETH + 16:ETH + 20] + struct.pack("!BBH", 0, 17, len(udp0))
    udp_sum = _fold(_sum16(pseudo) + _sum16(bytes(udp0)))
    n = min(flows, packets)
    per_flow = []
    for k in range(n):
        host = 1 + k % 65000
        sport = 1024 + k // 65000
        src = bytes([10, 0, host >> 8, host & 0xFF])
        var = 0x0A00 + host  # the source address as 16-bit words: 10.0 and host
        ipc = ~_fold(ip_sum + var) & 0xFFFF
        uc = ~_fold(udp_sum + var + sport) & 0xFFFF or 0xFFFF
        f = bytearray(tmpl)
        f[ETH + 12:ETH + 16] = src
        struct.pack_into("!H", f, ETH + 10, ipc)
        struct.pack_into("!HH", f, ETH + IP4, sport, 9)
        struct.pack_into("!H", f, ETH + IP4 + 6, uc)
        per_flow.append(bytes(f))
    return [per_flow[i % n] for i in range(packets)]


# -- the DDoS scenario ---------------------------------------------------------------------

DDOS_SERVERS = "192.168.0.0/24"
DDOS_VICTIM = "192.168.0.10"


def _prefix(text: str, what: str) -> tuple[int, int]:
    """An IPv4 prefix as (network as an integer, length); TraceError if it is not one."""
    import ipaddress

    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as e:
        raise TraceError(f"{what}: {e}: give an IPv4 prefix such as 10.66.6.0/24") from None
    if net.version != 4:
        raise TraceError(f"{what}: {text} is IPv6; the DDoS capture is IPv4 only")
    return int(net.network_address), net.prefixlen


def ddos_mix(packets: int = DDOS_PACKETS, clients: int = DDOS_CLIENTS,
             attack_prefix: str = DDOS_ATTACK_PREFIX, attack_start: float = 0.3,
             attack_share: float = 0.5, attack_hosts: int = 64, syn: bool = False,
             seed: int = DEMO_SEED) -> list[bytes]:
    """Normal traffic from many sources, and from ``attack_start`` (a fraction
    of the packets) on, an attack from one prefix; Ethernet frames.

    * Normal: ``clients`` clients, each alone in its own /24 of 10.0.0.0/8
      (never in ``attack_prefix``), talk to servers in 192.168.0.0/24 over
      one flow each: DNS over UDP to port 53 and answers, or HTTP-like TCP
      data (an open connection) both ways; 64 to 600-byte frames.
    * Attack: after ``attack_start`` each packet is an attack packet with
      probability ``attack_share``: 70-byte UDP DNS queries (ANY) to
      192.168.0.10:53 (or TCP SYNs to port 80 with ``syn``) from
      ``attack_hosts`` hosts of ``attack_prefix``, each from 4 source
      ports (so the attack is several flows per host, some first seen late).

    Every frame is distinct (IP ids count per flow). The same arguments
    give the same bytes.
    """
    if packets < 1:
        raise TraceError(f"packets must be at least 1, got {packets}")
    if not 1 <= clients <= 60000:
        raise TraceError(f"clients must be between 1 and 60000, got {clients}")
    if not 0.0 <= attack_start <= 1.0 or not 0.0 <= attack_share <= 1.0:
        raise TraceError("attack_start and attack_share are fractions from 0 to 1")
    net, plen = _prefix(attack_prefix, "attack_prefix")
    size = 1 << (32 - plen)
    hosts = min(attack_hosts, max(1, size - 2))
    if hosts < 1:
        raise TraceError(f"attack_hosts must be at least 1, got {attack_hosts}")
    rng = random.Random(seed)

    # Normal clients: distinct /24s of 10.0.0.0/8 outside the attack prefix.
    nets: set[int] = set()
    while len(nets) < clients:
        n24 = (10 << 24) | (rng.randrange(1, 1 << 16) << 8)
        if n24 >> (32 - min(plen, 24)) != net >> (32 - min(plen, 24)):  # no overlap
            nets.add(n24)
    flows: list[_Flow] = []
    for i, n24 in enumerate(sorted(nets)):
        cip = struct.pack("!I", n24 | rng.randint(1, 254))
        sip = bytes([192, 168, 0, rng.randint(1, 254)])
        kind = "dns" if rng.random() < 0.3 else "http"
        cport = rng.randint(32768, 60999)
        sport = 53 if kind == "dns" else 80
        f = _Flow(i, kind, _Ends(CLIENT_MAC, SERVER_MAC, cip, sip, cport, sport, 64),
                  _Ends(SERVER_MAC, CLIENT_MAC, sip, cip, sport, cport, 58), 0, [],
                  seq_c=rng.getrandbits(32), seq_s=rng.getrandbits(32),
                  id_c=rng.getrandbits(16), id_s=rng.getrandbits(16))
        flows.append(f)

    victim = bytes(map(int, DDOS_VICTIM.split(".")))
    attackers: list[_Ends] = []
    ids: list[int] = []
    for h in rng.sample(range(1, size - 1) if size > 2 else range(size), hosts):
        aip = struct.pack("!I", net + h)
        for _ in range(4):
            attackers.append(_Ends(CLIENT_MAC, SERVER_MAC, aip, victim,
                                   rng.randint(1024, 65535), 80 if syn else 53, 64))
            ids.append(rng.getrandbits(16))

    first_attack = round(packets * attack_start)
    frames = []
    for k in range(packets):
        if k >= first_attack and rng.random() < attack_share:
            a = rng.randrange(len(attackers))
            ids[a] = (ids[a] + 1) & 0xFFFF
            e = attackers[a]
            if syn:
                frames.append(tcp_frame(e, rng.getrandbits(32), 0, TH_SYN, ids[a], b"", 64))
            else:
                q = struct.pack("!HHHHHH", ids[a], 0x0100, 1, 0, 0, 0) + b"\3www\6victim\0"
                frames.append(udp_frame(e, ids[a], q + struct.pack("!HH", 255, 1), 64))
            continue
        f = flows[rng.randrange(len(flows))]
        c2s = rng.random() < 0.5
        ends = f.client if c2s else f.server
        if c2s:
            f.id_c = (f.id_c + 1) & 0xFFFF
            ip_id = f.id_c
        else:
            f.id_s = (f.id_s + 1) & 0xFFFF
            ip_id = f.id_s
        n = rng.choice([64, 64, 128, 300, 600])
        if f.kind == "dns":
            frames.append(udp_frame(ends, ip_id,
                                    _dns_payload(rng, f, "c2s" if c2s else "s2c", n - UDP_HDR), n))
            continue
        payload = _http_payload(rng, f, "c2s" if c2s else "s2c", n - TCP_HDR, first=False)
        if c2s:
            frames.append(tcp_frame(ends, f.seq_c, f.seq_s, TH_PSH | TH_ACK, ip_id, payload, n))
            f.seq_c += len(payload)
        else:
            frames.append(tcp_frame(ends, f.seq_s, f.seq_c, TH_PSH | TH_ACK, ip_id, payload, n))
            f.seq_s += len(payload)
    return frames


# The request line an anomaly_mix exploit flow sends, split across two TCP
# segments at EXPLOIT_SPLIT (a signature IDS must match it in stream mode).
EXPLOIT_REQUEST = (b"GET /cgi-bin/view?file=../../../../etc/passwd HTTP/1.1\r\n"
                   b"Host: 192.168.0.20\r\nUser-Agent: scan/1.0\r\n\r\n")
EXPLOIT_SPLIT = EXPLOIT_REQUEST.index(b"/etc/passwd") + 4  # "...../etc" | "/passwd ..."


def anomaly_mix(packets: int = ANOMALY_PACKETS, exploits: int = ANOMALY_EXPLOITS,
                exploit_prefix: str = ANOMALY_EXPLOIT_PREFIX, seed: int = DEMO_SEED
                ) -> list[bytes]:
    """SDNFV's anomaly-detection capture (examples/anomaly.yaml): ``ddos_mix``
    (normal clients and, from 30 % on, a DNS flood from 10.66.6.0/24), and
    ``exploits`` HTTP connections from hosts of ``exploit_prefix`` to
    192.168.0.20:80, spread over the capture. Each is a handshake, the
    request EXPLOIT_REQUEST split in two segments at EXPLOIT_SPLIT (so the
    signature "/etc/passwd" is in neither alone), a 404 answer and FIN/ACKs:
    8 frames a connection, all in order. The same arguments give the same
    bytes."""
    if not 0 <= exploits <= 250:
        raise TraceError(f"exploits must be from 0 to 250, got {exploits}")
    net, plen = _prefix(exploit_prefix, "exploit_prefix")
    if plen > 24:
        raise TraceError(f"exploit_prefix: {exploit_prefix} is longer than /24: give room "
                         f"for {exploits} hosts")
    base = ddos_mix(max(1, packets - 8 * exploits), seed=seed)
    rng = random.Random(seed + 1)
    server = bytes([192, 168, 0, 20])
    flows: list[list[bytes]] = []
    for i in range(exploits):
        cip = struct.pack("!I", net + 1 + i)
        c = _Ends(CLIENT_MAC, SERVER_MAC, cip, server, rng.randint(32768, 60999), 80, 64)
        sv = _Ends(SERVER_MAC, CLIENT_MAC, server, cip, 80, c.sport, 58)
        sc, ss = rng.getrandbits(32), rng.getrandbits(32)
        ic, is_ = rng.getrandbits(16), rng.getrandbits(16)
        req1, req2 = EXPLOIT_REQUEST[:EXPLOIT_SPLIT], EXPLOIT_REQUEST[EXPLOIT_SPLIT:]
        resp = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
        flows.append([
            tcp_frame(c, sc, 0, TH_SYN, ic, b""),
            tcp_frame(sv, ss, sc + 1, TH_SYN | TH_ACK, is_, b""),
            tcp_frame(c, sc + 1, ss + 1, TH_ACK, ic + 1, b""),
            tcp_frame(c, sc + 1, ss + 1, TH_PSH | TH_ACK, ic + 2, req1),
            tcp_frame(c, sc + 1 + len(req1), ss + 1, TH_PSH | TH_ACK, ic + 3, req2),
            tcp_frame(sv, ss + 1, sc + 1 + len(EXPLOIT_REQUEST), TH_PSH | TH_ACK, is_ + 1,
                      resp),
            tcp_frame(c, sc + 1 + len(EXPLOIT_REQUEST), ss + 1 + len(resp), TH_FIN | TH_ACK,
                      ic + 4, b""),
            tcp_frame(sv, ss + 1 + len(resp), sc + 2 + len(EXPLOIT_REQUEST), TH_FIN | TH_ACK,
                      is_ + 2, b""),
        ])
    # Each connection's frames at increasing random positions of the base.
    inserts: list[tuple[int, int, bytes]] = []
    for fr in flows:
        at = sorted(rng.randrange(len(base) + 1) for _ in fr)
        inserts += [(pos, k, f) for k, (pos, f) in enumerate(zip(at, fr, strict=True))]
    inserts.sort(key=lambda t: (t[0], t[1]))
    out: list[bytes] = []
    j = 0
    for pos, frame in enumerate(base):
        while j < len(inserts) and inserts[j][0] == pos:
            out.append(inserts[j][2])
            j += 1
        out.append(frame)
    out += [t[2] for t in inserts[j:]]
    return out


def in_prefix(frame: bytes, prefix: str, src: bool = True) -> bool:
    """Whether an IPv4 frame's source (or destination) address is in ``prefix``."""
    if len(frame) < ETH + IP4 or frame[12:14] != b"\x08\x00":
        return False
    net, plen = _prefix(prefix, "prefix")
    off = ETH + (12 if src else 16)
    addr = struct.unpack("!I", frame[off:off + 4])[0]
    return plen == 0 or addr >> (32 - plen) == net >> (32 - plen)


# -- pcap files ------------------------------------------------------------------------

_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def write_pcap(path: str | Path, frames: Iterable[bytes], start_us: int = START_TS_US,
               gap_us: int = GAP_US) -> int:
    """Writes frames to a pcap file atomically; returns the number written."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    n = 0
    try:
        with open(tmp, "wb") as f:
            f.write(_PCAP_HEADER)
            t = start_us
            for frame in frames:
                f.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame),
                                    len(frame)))
                f.write(frame)
                t += gap_us
                n += 1
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return n


def read_pcap(path: str | Path) -> list[bytes]:
    """The frames of a classic pcap file (either byte order, us or ns stamps)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise TraceError(f"{path}: not a pcap file (too short)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        e = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        e = ">"
    else:
        raise TraceError(f"{path}: not a pcap file (magic {magic:#x}; pcapng is not supported)")
    frames = []
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        frames.append(data[off:off + incl])
        off += incl
    return frames


# -- the demo trace ---------------------------------------------------------------------

_GENERATORS = {"http-mix.pcap": http_mix, "ddos.pcap": ddos_mix, "anomaly.pcap": anomaly_mix}


def ensure_trace(path: Path) -> bool:
    """Makes a known examples/traces/ capture if it is missing; True if made."""
    path = Path(path)
    params = generated_trace_params(path)
    if params is None or path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_pcap(path, _GENERATORS[path.name](**params))  # type: ignore[operator]
    return True


def generate(out: str | Path, packets: int | None = None, flows: int | None = None,
             seed: int = DEMO_SEED, size: int | None = None, ddos: bool = False,
             clients: int | None = None, attack_prefix: str | None = None,
             syn: bool = False) -> str:
    """`sluice trace gen`: writes a
    trace; returns a one-line description. ``ddos``: the DDoS scenario's
    capture (``ddos_mix``: normal clients, and an attack from
    ``attack_prefix``), with the defaults of examples/traces/ddos.pcap."""
    if ddos:
        if size is not None or flows is not None:
            raise TraceError("--ddos makes the DDoS mix, which takes --packets, --clients, "
                             "--attack-prefix, --syn and --seed: drop --size and --flows")
        prefix = attack_prefix or DDOS_ATTACK_PREFIX
        n_clients = clients or DDOS_CLIENTS
        _prefix(prefix, "--attack-prefix")  # said as the option, before ddos_mix says it
        if not 1 <= n_clients <= 60000:
            raise TraceError(f"--clients: give 1 to 60000 clients, got {n_clients}")
        frames = ddos_mix(packets or DDOS_PACKETS, n_clients, prefix, syn=syn, seed=seed)
        n_attack = sum(in_prefix(f, prefix) for f in frames)
        kind = (f"DDoS mix ({n_clients} clients; {n_attack} attack packets, "
                f"{'TCP SYNs to port 80' if syn else 'DNS queries'}, from {prefix})")
    elif clients is not None or attack_prefix is not None or syn:
        raise TraceError("--clients, --attack-prefix and --syn are options of the DDoS mix: "
                         "add --ddos")
    elif size is None:
        frames = http_mix(packets or DEMO_PACKETS, flows or DEMO_FLOWS, seed)
        kind = "HTTP-like mix"
    else:
        nflows = flows or 1
        frames = fixed_size(packets or max(nflows, 4096), nflows, size, seed)
        kind = f"{size}-byte UDP"
    out = Path(out)
    try:  # its folder, as examples/traces/ is made for a missing capture
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TraceError(f"{out}: cannot make its folder {out.parent}: "
                         f"{e.strerror or e}: give a path in a folder you can write") from None
    n = write_pcap(out, frames)
    nbytes = sum(len(f) for f in frames)
    n_flows = len({_flow_key(f) for f in frames})
    return f"{out}: {n} packets, {n_flows} flows, {kind}, {nbytes} bytes of frames (seed {seed})"


def _flow_key(frame: bytes) -> bytes:
    """Direction-independent 5-tuple bytes of an IPv4 TCP/UDP frame."""
    a = frame[ETH + 12:ETH + 16] + frame[ETH + IP4:ETH + IP4 + 2]
    b = frame[ETH + 16:ETH + 20] + frame[ETH + IP4 + 2:ETH + IP4 + 4]
    return bytes([frame[ETH + 9]]) + min(a, b) + max(a, b)

