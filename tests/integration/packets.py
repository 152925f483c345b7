"""Packets for the integration tests: built with scapy, compared as bytes."""

from __future__ import annotations

import functools
import logging
import random
import struct
from pathlib import Path

from scapy.all import IP, TCP, UDP, Ether, IPv6, Raw, RawPcapReader

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)  # DNS-looking padding


def mixed(n: int, flows: int, seed: int = 1) -> list[bytes]:
    """n frames over `flows` flows: TCP and UDP, IPv4 and IPv6, both
    directions, sizes from 60 to 1514 bytes. Deterministic for a seed."""
    rnd = random.Random(seed)
    keys = []
    for f in range(flows):
        v6 = f % 5 == 4
        proto = TCP if f % 3 else UDP
        a = f"10.0.{f // 250}.{f % 250 + 1}" if not v6 else f"2001:db8::{f + 1:x}"
        b = f"192.168.{f % 7}.{f % 200 + 1}" if not v6 else f"2001:db8:1::{f % 200 + 1:x}"
        keys.append((v6, proto, a, b, 1024 + f, 80 if proto is TCP else 53))
    out = []
    for i in range(n):
        v6, proto, a, b, sp, dp = keys[rnd.randrange(flows)]
        if rnd.random() < 0.4:  # reply direction
            a, b, sp, dp = b, a, dp, sp
        size = rnd.choice([60, 60, 60, 300, 576, 700, 1024, 1400, 1514])
        l3 = IPv6(src=a, dst=b) if v6 else IP(src=a, dst=b, id=i & 0xFFFF)
        pkt = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / l3 / proto(
            sport=sp, dport=dp)
        pad = max(0, size - len(pkt))
        out.append(bytes(pkt / Raw(bytes([i & 0xFF]) * pad)))
    return out


@functools.lru_cache(maxsize=1 << 16)
def flow_of(frame: bytes) -> tuple:
    """Symmetric flow key of a frame (both directions give the same key).
    Cached: a test asks for the same frame's key several times, and a
    scapy parse costs about a millisecond (3000 frames took 25 s)."""
    p = Ether(frame)
    l3 = p.getlayer(IP) or p.getlayer(IPv6)
    if l3 is None:
        return ("non-ip",)
    l4 = p.getlayer(TCP) or p.getlayer(UDP)
    ends = sorted([(l3.src, l4.sport if l4 else 0), (l3.dst, l4.dport if l4 else 0)])
    return (l3.name, type(l4).__name__, *ends)


def write(path: Path, frames: list[bytes]) -> Path:
    """A pcap of the frames exactly as given (even ones too short to be
    Ethernet, which scapy would not write)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", i // 1000, i % 1000, len(frame), len(frame)))
            f.write(frame)
    return path


def read(path: Path) -> list[bytes]:
    return [bytes(data) for data, _meta in RawPcapReader(str(path))]
