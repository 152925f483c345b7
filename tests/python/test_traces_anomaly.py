"""traces.anomaly_mix: the DDoS mix with exploit HTTP connections whose
signature is split across two segments (examples/anomaly.yaml)."""

from __future__ import annotations

import struct

import pytest

from sluice.runtime import traces

ETH, IP4 = 14, 20


def exploit_frames(frames: list[bytes]) -> dict[bytes, list[bytes]]:
    """Frames to or from 10.77.7.0/24, per client address, in capture order."""
    out: dict[bytes, list[bytes]] = {}
    for f in frames:
        src, dst = f[ETH + 12:ETH + 16], f[ETH + 16:ETH + 20]
        for a in (src, dst):
            if a[:3] == bytes([10, 77, 7]):
                out.setdefault(a, []).append(f)
    return out


def test_each_exploit_is_one_ordered_connection_with_a_split_signature() -> None:
    frames = traces.anomaly_mix()
    assert len(frames) == traces.ANOMALY_PACKETS
    flows = exploit_frames(frames)
    assert len(flows) == traces.ANOMALY_EXPLOITS
    for fr in flows.values():
        assert len(fr) == 8
        flags = [f[ETH + IP4 + 13] for f in fr]
        assert flags == [0x02, 0x12, 0x10, 0x18, 0x18, 0x18, 0x11, 0x11]
        payloads = [f[ETH + IP4 + 20:ETH + struct.unpack("!H", f[ETH + 2:ETH + 4])[0]]
                    for f in fr]
        assert payloads[3] + payloads[4] == traces.EXPLOIT_REQUEST
        assert b"/etc/passwd" not in payloads[3] and b"/etc/passwd" not in payloads[4]
        # sequence numbers follow the bytes sent
        seq = [struct.unpack("!I", f[ETH + IP4 + 4:ETH + IP4 + 8])[0] for f in fr]
        assert seq[4] == (seq[3] + len(payloads[3])) & 0xFFFFFFFF
    assert not any(b"/etc/passwd" in f for f in frames)
    # the flood of the DDoS mix is there too
    assert sum(traces.in_prefix(f, traces.DDOS_ATTACK_PREFIX) for f in frames) > 1000


def test_deterministic_and_errors() -> None:
    assert traces.anomaly_mix(500, 5) == traces.anomaly_mix(500, 5)
    assert traces.anomaly_mix(500, 5) != traces.anomaly_mix(500, 5, seed=2)
    assert len(exploit_frames(traces.anomaly_mix(500, 0))) == 0
    with pytest.raises(traces.TraceError, match="exploits must be from 0 to 250"):
        traces.anomaly_mix(exploits=251)
    with pytest.raises(traces.TraceError, match="longer than /24"):
        traces.anomaly_mix(exploit_prefix="10.77.7.0/25")


def test_ensure_trace_makes_the_anomaly_capture(tmp_path, monkeypatch) -> None:
    path = traces.demo_trace_path().parent / "anomaly.pcap"
    made: list[tuple[object, int]] = []
    monkeypatch.setattr(traces, "write_pcap", lambda p, fr: made.append((p, len(fr))))
    monkeypatch.setattr(traces.Path, "exists", lambda self: False)
    assert traces.ensure_trace(path)
    assert made == [(path, traces.ANOMALY_PACKETS)]
