"""The capture generator: content, checksums, determinism, pcap format."""

from __future__ import annotations

import hashlib
import ipaddress
import struct
from collections import Counter
from pathlib import Path

import pytest

from sluice.runtime import traces

REPO = Path(__file__).resolve().parents[2]


def ones_sum(data: bytes) -> int:
    """Independent of sluice.runtime.traces: plain RFC 1071 over big-endian words."""
    if len(data) % 2:
        data += b"\0"
    s = sum((data[i] << 8) | data[i + 1] for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksums_ok(frame: bytes) -> bool:
    assert frame[12:14] == b"\x08\x00"
    ip = frame[14:34]
    assert ip[0] == 0x45
    if ones_sum(ip) != 0xFFFF:
        return False
    total = struct.unpack("!H", ip[2:4])[0]
    l4 = frame[34:14 + total]
    pseudo = ip[12:20] + bytes([0, ip[9]]) + struct.pack("!H", len(l4))
    return ones_sum(pseudo + l4) == 0xFFFF


@pytest.fixture(scope="module")
def mix() -> list[bytes]:
    return traces.http_mix()


def sha(frames: list[bytes]) -> str:
    return hashlib.sha256(b"".join(struct.pack("!H", len(f)) + f for f in frames)).hexdigest()


def test_size_mix(mix: list[bytes]) -> None:
    assert len(mix) == traces.DEMO_PACKETS == 4096
    n = len(mix)
    small = sum(1 for f in mix if len(f) == 64)
    mid = sum(1 for f in mix if 300 <= len(f) <= 700)
    large = sum(1 for f in mix if 1024 <= len(f) <= 1514)
    assert small + mid + large == n
    assert abs(small / n - 0.4) < 0.02
    assert abs(mid / n - 0.3) < 0.02
    assert abs(large / n - 0.3) < 0.02


def test_checksums_are_valid(mix: list[bytes]) -> None:
    bad = [i for i, f in enumerate(mix) if not checksums_ok(f)]
    assert bad == []


def test_checksums_agree_with_scapy(mix: list[bytes]) -> None:
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether

    for f in mix[::97]:
        p = Ether(f)
        l4 = TCP if TCP in p else UDP
        q = Ether(f)
        del q[IP].chksum
        del q[l4].chksum
        q = Ether(bytes(q))
        assert (p[IP].chksum, p[l4].chksum) == (q[IP].chksum, q[l4].chksum)


def test_addresses_protocols_and_flows(mix: list[bytes]) -> None:
    clients = ipaddress.ip_network("10.0.0.0/16")
    servers = ipaddress.ip_network("192.168.0.0/24")
    protos: Counter[tuple[int, int]] = Counter()
    directions: dict[bytes, set[str]] = {}
    for f in mix:
        src = ipaddress.ip_address(f[26:30])
        dst = ipaddress.ip_address(f[30:34])
        sport, dport = struct.unpack("!HH", f[34:38])
        if src in clients:
            assert dst in servers
            d, svc = "c2s", dport
        else:
            assert src in servers and dst in clients
            d, svc = "s2c", sport
        protos[(f[23], svc)] += 1
        directions.setdefault(traces._flow_key(f), set()).add(d)
    assert set(protos) == {(6, 80), (6, 443), (17, 53)}
    tcp = protos[(6, 80)] + protos[(6, 443)]
    assert tcp > 0.7 * len(mix)  # mostly TCP
    assert protos[(17, 53)] > 0.05 * len(mix)  # some DNS
    assert len(directions) == traces.DEMO_FLOWS  # several hundred flows
    both = sum(1 for d in directions.values() if d == {"c2s", "s2c"})
    assert both > 0.5 * len(directions)  # both directions of connections


def test_tcp_flows_open_with_a_handshake(mix: list[bytes]) -> None:
    first: dict[bytes, bytes] = {}
    for f in mix:
        if f[23] == 6:
            first.setdefault(traces._flow_key(f), f)
    syn = [f for f in first.values() if f[47] == traces.TH_SYN]
    assert len(syn) > 0.5 * len(first)
    assert all(len(f) == 64 for f in syn)


def test_same_seed_same_bytes() -> None:
    a = traces.http_mix(300, 40, seed=7)
    assert a == traces.http_mix(300, 40, seed=7)
    assert a != traces.http_mix(300, 40, seed=8)
    assert sha(a) == "604d4282195c1a808b17b50e3e45360c3b595e8a0fa8fa84e4c3afc2818a8bb7"


def test_committed_demo_trace_matches_the_generator(mix: list[bytes], tmp_path: Path) -> None:
    # committed to git: missing means deleted, which this test must catch
    demo = REPO / "examples" / "traces" / "http-mix.pcap"
    assert demo.is_file(), f"{demo} is missing: it is committed; git checkout it"
    out = tmp_path / "m.pcap"
    traces.write_pcap(out, mix)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == \
        hashlib.sha256(demo.read_bytes()).hexdigest()
    assert sha(mix) == "a5eb28ae14de628444a112e88c73ecee950c292ec30b91986aff6baa804e489e"


def test_fixed_size_many_flows() -> None:
    frames = traces.fixed_size(100_000, 100_000, 64)
    assert len(frames) == 100_000
    assert {len(f) for f in frames} == {64}
    assert len({traces._flow_key(f) for f in frames}) == 100_000
    assert all(checksums_ok(f) for f in frames[::1009])
    assert all(checksums_ok(f) for f in frames[64990:65010])
    assert sha(frames[:1000]) == "a54f65574b8d04049c05effc0a351e4a69431a70acc941fecb52dcfe2d4a57c1"


def test_fixed_size_one_flow_round_robin() -> None:
    frames = traces.fixed_size(10, 1, 128)
    assert len(set(frames)) == 1 and len(frames[0]) == 128
    assert checksums_ok(frames[0])
    frames = traces.fixed_size(6, 3, 60)
    assert frames[0] == frames[3] != frames[1]


def test_pcap_roundtrip(tmp_path: Path) -> None:
    frames = traces.fixed_size(5, 5, 64)
    p = tmp_path / "x.pcap"
    assert traces.write_pcap(p, frames) == 5
    data = p.read_bytes()
    assert struct.unpack("<IHHiIII", data[:24]) == (0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    sec, usec, incl, orig = struct.unpack("<IIII", data[24:40])
    assert (sec, usec, incl, orig) == (1_700_000_000, 0, 64, 64)
    assert traces.read_pcap(p) == frames
    assert not list(tmp_path.glob(".*tmp"))


def test_generate_describes_what_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "b.pcap"
    assert traces.generate(out, packets=1000, flows=10, size=64) == (
        f"{out}: 1000 packets, 10 flows, 64-byte UDP, 64000 bytes of frames (seed 1)")
    assert len(traces.read_pcap(out)) == 1000


def test_generate_makes_the_folder_it_writes_in(tmp_path: Path) -> None:
    out = tmp_path / "new" / "traces" / "c.pcap"
    assert traces.generate(out, packets=10, flows=1, size=64).startswith(f"{out}: 10 packets")
    assert len(traces.read_pcap(out)) == 10
    (tmp_path / "file").write_text("")
    with pytest.raises(traces.TraceError) as e:
        traces.generate(tmp_path / "file" / "d.pcap", packets=10, flows=1, size=64)
    assert str(e.value) == (f"{tmp_path}/file/d.pcap: cannot make its folder {tmp_path}/file: "
                            f"File exists: give a path in a folder you can write")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: traces.fixed_size(10, 1, 59), "--size must be between 60 and 1514 bytes, got 59"),
    (lambda: traces.fixed_size(10, 0, 64), "--flows must be at least 1, got 0"),
    (lambda: traces.http_mix(10, 20), "--flows (20) cannot exceed --packets (10): each flow "
                                      "needs at least one packet"),
])
def test_bad_arguments(call: object, message: str) -> None:
    with pytest.raises(traces.TraceError) as e:
        call()  # type: ignore[operator]
    assert str(e.value) == message


def test_only_the_demo_trace_is_made_on_demand(tmp_path: Path) -> None:
    assert traces.generated_trace_params(REPO / "examples" / "traces" / "http-mix.pcap") == {
        "packets": 4096, "flows": 512, "seed": 1}
    assert traces.generated_trace_params(tmp_path / "http-mix.pcap") is None
    assert traces.ensure_trace(tmp_path / "http-mix.pcap") is False
    assert not (tmp_path / "http-mix.pcap").exists()
