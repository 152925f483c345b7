"""sluice-sampler in a graph on a real sluiced: a capture goes through the
sampler, which sends its sample to one service (out of port a) and the
rest along its default edge to another (out of port b). By packet, the
sample is exactly the one splitmix64 with the seed draws (the test draws
the same numbers), within a binomial bound of 1 in N; by flow, every flow
is wholly in one capture or the other, both directions alike, and the
sampled flows are within a binomial bound of 1 in N."""

from __future__ import annotations

import math
import re
from collections import Counter

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
from packets import flow_of, mixed, read, write

N_FRAMES, N_FLOWS, ONE_IN, SEED = 4000, 400, 4, 3
M64 = (1 << 64) - 1


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _packet_sample(n: int, one_in: int, seed: int) -> list[bool]:
    """What sampler.c draws: splitmix64 from the seed, a draw below
    2^64 / N is sampled."""
    state, limit, out = seed, (1 << 64) // one_in, []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & M64
        out.append(one_in == 1 or _mix(state) < limit)
    return out


def _is_subsequence(part: list[bytes], whole: list[bytes]) -> bool:
    it = iter(whole)
    return all(any(x == y for y in it) for x in part)


def _within(k: int, n: int, one_in: int) -> None:
    mean, sd = n / one_in, math.sqrt(n * (1 / one_in) * (1 - 1 / one_in))
    assert abs(k - mean) <= 5 * sd, f"{k} of {n}: expected {mean:.0f} +- {5 * sd:.0f}"


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
@pytest.mark.parametrize("by", ["packet", "flow"])
def test_sampler_splits_a_capture(launch, node, tmp_path, by, asan):
    build = ASAN_BUILD if asan else build_dir()
    frames = mixed(N_FRAMES, flows=N_FLOWS, seed=5)
    src = write(tmp_path / "in.pcap", frames)
    out_a, out_b = tmp_path / "sampled.pcap", tmp_path / "rest.pcap"
    dep = deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "a", "device": f"net_pcap1,tx_pcap={out_a}"},
               {"name": "b", "device": f"net_pcap2,tx_pcap={out_b}"}],
        nfs=[{"name": "smp", "program": prog("sampler", build), "service": "sampler",
              "args": ["--to", "sample", "--one-in", str(ONE_IN), "--by", by,
                       "--seed", str(SEED), "--stats-ms", "0"]},
             {"name": "sample", "program": prog("forward", build), "service": "sample"},
             {"name": "rest", "program": prog("forward", build), "service": "rest"}],
        chain=["drop"])
    dep["graphs"] = [{"name": "sampling",
                      "nodes": {"sampler": ["rest", "sample"], "rest": ["port:b"],
                                "sample": ["port:a"]},
                      "match": [{}]}]
    run = launch(dep, build)
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == N_FRAMES, 30,
               "the capture to be read")
    st = wait_drained(run)
    assert st["drops_total"] == 0, st
    run.stop()
    sampled, rest = read(out_a), read(out_b)
    assert Counter(sampled) + Counter(rest) == Counter(frames)  # every frame, once
    assert _is_subsequence(sampled, frames) and _is_subsequence(rest, frames)  # in order
    assert service(st, "sample")["rx_pkts"] == len(sampled)
    assert service(st, "rest")["rx_pkts"] == len(rest)
    if by == "packet":
        pick = _packet_sample(N_FRAMES, ONE_IN, SEED)
        assert sampled == [f for f, p in zip(frames, pick, strict=True) if p]
        _within(len(sampled), N_FRAMES, ONE_IN)
    else:
        flows_a, flows_b = {flow_of(f) for f in sampled}, {flow_of(f) for f in rest}
        assert not flows_a & flows_b  # a flow is wholly sampled or not
        assert len(flows_a | flows_b) == N_FLOWS
        _within(len(flows_a), N_FLOWS, ONE_IN)
    smp = next(p for p in run.nfs if p.label.startswith("smp"))
    log = smp.log.read_text()
    assert smp.exited() == 0, log
    assert_no_sanitizer_report(log, smp.log.name)
    m = re.search(r"sampler-stats: reason=exit uptime=[\d.]+ packets=(\d+) bytes=(\d+) "
                  r"pps=\d+ by=(\w+) one_in=(\d+) sampled=(\d+) sampled_bytes=(\d+) "
                  r"passed=(\d+) no_hash=(\d+)\n", log)
    assert m, log
    assert m.groups() == (str(N_FRAMES), str(sum(map(len, frames))), by, str(ONE_IN),
                          str(len(sampled)), str(sum(map(len, sampled))), str(len(rest)),
                          "0")
