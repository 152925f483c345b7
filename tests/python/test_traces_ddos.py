"""The DDoS scenario capture (sluice.runtime.traces.ddos_mix): who sends what, when."""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from sluice.runtime import traces


def ones_sum(data: bytes) -> int:
    """Plain RFC 1071 over big-endian words (independent of sluice.runtime.traces)."""
    if len(data) % 2:
        data += b"\0"
    s = sum((data[i] << 8) | data[i + 1] for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksums_ok(f: bytes) -> bool:
    ip = f[14:34]
    total = struct.unpack("!H", ip[2:4])[0]
    l4 = f[34:14 + total]
    pseudo = ip[12:20] + bytes([0, ip[9]]) + struct.pack("!H", len(l4))
    return ones_sum(ip) == 0xFFFF and ones_sum(pseudo + l4) == 0xFFFF


@pytest.fixture(scope="module")
def mix() -> list[bytes]:
    return traces.ddos_mix()


def test_attack_and_normal(mix: list[bytes]) -> None:
    assert len(mix) == traces.DDOS_PACKETS == 6000
    assert len(set(mix)) == len(mix)  # every frame distinct
    assert all(checksums_ok(f) for f in mix)
    attack = [i for i, f in enumerate(mix) if traces.in_prefix(f, "10.66.6.0/24")]
    # Nothing from the prefix before 30 % of the capture; about half after.
    assert attack[0] >= 1800
    assert 0.45 < len(attack) / (6000 - 1800) < 0.55
    for i in attack:
        f = mix[i]
        assert len(f) == 70 and f[23] == 17 and f[30:34] == bytes([192, 168, 0, 10])
        assert f[36:38] == b"\x00\x35"
    assert len({mix[i][26:30] for i in attack}) == 64  # attack hosts
    assert len({(mix[i][26:30], mix[i][34:36]) for i in attack}) == 256  # 4 ports each
    # Normal: 200 clients, each alone in its /24, both directions, with
    # servers in 192.168.0.0/24.
    normal = [f for f in mix if not traces.in_prefix(f, "10.66.6.0/24")]
    to_servers = [f for f in normal if traces.in_prefix(f, traces.DDOS_SERVERS, src=False)]
    from_servers = [f for f in normal if traces.in_prefix(f, traces.DDOS_SERVERS)]
    assert len(to_servers) + len(from_servers) == len(normal)
    assert len({f[26:30] for f in to_servers}) == 200
    assert len({f[26:29] for f in to_servers}) == 200
    assert max(Counter(f[26:29] for f in to_servers).values()) < 40


def test_deterministic_and_options() -> None:
    a = traces.ddos_mix(500, 20, "10.9.0.0/16", attack_start=0.5, seed=3)
    assert a == traces.ddos_mix(500, 20, "10.9.0.0/16", attack_start=0.5, seed=3)
    assert a != traces.ddos_mix(500, 20, "10.9.0.0/16", attack_start=0.5, seed=4)
    atk = [i for i, f in enumerate(a) if traces.in_prefix(f, "10.9.0.0/16")]
    assert atk and atk[0] >= 250
    assert not any(traces.in_prefix(f, "10.9.0.0/16", src=False) for f in a)
    syn = traces.ddos_mix(300, 10, syn=True, attack_share=1.0, attack_start=0.0)
    assert all(f[23] == 6 and f[47] == traces.TH_SYN and f[36:38] == b"\x00\x50"
               for f in syn)


@pytest.mark.parametrize("kw, msg", [
    ({"attack_prefix": "10.66.6.1/24"}, "attack_prefix: 10.66.6.1/24 has host bits set: "
                                        "give an IPv4 prefix such as 10.66.6.0/24"),
    ({"attack_prefix": "2001:db8::/48"}, "attack_prefix: 2001:db8::/48 is IPv6; the DDoS "
                                         "capture is IPv4 only"),
    ({"clients": 0}, "clients must be between 1 and 60000, got 0"),
    ({"attack_start": 1.5}, "attack_start and attack_share are fractions from 0 to 1"),
])
def test_errors(kw: dict, msg: str) -> None:
    with pytest.raises(traces.TraceError) as e:
        traces.ddos_mix(100, **kw)
    assert str(e.value) == msg


def test_ensure_trace_knows_ddos(tmp_path, monkeypatch) -> None:
    assert traces.generated_trace_params(traces.demo_trace_path().parent / "ddos.pcap") == \
        traces.GENERATED["ddos.pcap"]
    path = traces.demo_trace_path().parent / "ddos.pcap"
    existed = path.exists()
    try:
        traces.ensure_trace(path)
        assert traces.read_pcap(path) == traces.ddos_mix()
    finally:
        if not existed:
            path.unlink(missing_ok=True)
