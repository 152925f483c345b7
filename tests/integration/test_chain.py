"""Packets in -> chain of NFs -> out, compared byte by byte; counters exact."""

from __future__ import annotations

import os
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    deployment,
    needs_asan,
    port,
    prog,
    service,
    wait_drained,
    wait_until,
)
from packets import flow_of, mixed, read, write

N = 3000


def _run_chain(launch, node: str, tmp_path: Path, length: int, build: Path | None = None,
               handoff: str = "direct", mode: str = "shared",
               info: dict | None = None,
               **node_opts) -> tuple[list[bytes], list[bytes], dict]:
    frames = mixed(N, flows=120, seed=length)
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    nfs = [{"name": f"f{i}", "program": prog("forward", build), "service": f"f{i}"}
           for i in range(1, length + 1)]
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=nfs,
        chain=[n["service"] for n in nfs] + ["port:out"],
        handoff=handoff,
        mode=mode,
        **node_opts,
    ), build=build)
    st = wait_until(lambda: (s := run.client.call("stats")) and
                    port(s, "out")["tx_pkts"] == N and s, 30, f"{N} packets out")
    if info is not None:  # what sluiced says of itself and its NFs, for the caller
        info["status"], info["nf.list"] = run.client.call("status"), run.client.call("nf.list")
    run.stop()  # closes the pcap writer
    return frames, read(dst), st


def _edges_of_chain(st: dict, frames: list[bytes], length: int) -> None:
    """Every hop of the chain carried every packet once: port:in -> f1 ->
    ... -> fL -> port:out, nothing else (counted once also when an NF's
    resolved packet is transmitted by sluiced)."""
    hops = ["port:in"] + [f"f{i}" for i in range(1, length + 1)] + ["port:out"]
    nbytes = sum(map(len, frames))
    assert sorted((e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]) == sorted(
        (a, b, len(frames), nbytes) for a, b in zip(hops, hops[1:], strict=False))


def test_an_nf_started_later_leaves_the_output_capture_whole(launch, node, tmp_path):
    """Every NF (a DPDK secondary) probes the ports again when it starts; a
    net_pcap port's probe opens its tx_pcap for writing and used to
    truncate the capture sluiced was writing (its start became zeros).
    sluiced now opens it through a private path NFs cannot open."""
    frames = mixed(N, flows=120, seed=7)
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "f1", "program": prog("forward"), "service": "f1"}],
        chain=["f1", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] == N, 30,
               f"{N} packets out")
    late = run._spawn("late", [prog("forward"), "--", "--node", node, "--service", "late",
                               "--mode", "shared"])
    run.nfs.append(late)
    wait_until(lambda: any(n["service"] == "late" and n["state"] == "running"
                           for n in run.client.call("nf.list")), 20, "the late NF to register")
    pid = run.client.call("status")["pid"]
    assert not list(Path("/tmp").glob(f"sluiced-{pid}-*")), "its private folder is gone"
    run.stop()
    assert read(dst) == frames


@pytest.mark.parametrize("length,lookup,rx_burst", [
    (0, "cached", None), (1, "cached", None), (3, "cached", None), (6, "cached", None),
    (0, "off", None), (1, "off", None), (3, "off", None),
    (1, "cached", 1), (3, "off", 7), (0, "off", 5)])
def test_chain_is_byte_exact_and_in_order(launch, node, tmp_path, length, lookup, rx_burst):
    """Shared mode on 2 CPUs; 6 NFs + sluiced's threads must not starve.
    With the flow table off, sluiced's ingress resolves a burst once and
    writes each packet's metadata once (sl_dispatch_alike), or hands it
    to the port whole (no NF, chain port:out): the same bytes, order and
    counters. Ports are read 64 packets at a time (--rx-burst), twice
    --burst, and also one, five or seven at a time."""
    info: dict = {}
    extra = [] if rx_burst is None else ["--rx-burst", str(rx_burst)]
    frames, out, st = _run_chain(launch, node, tmp_path, length, info=info,
                                 sluiced_args=["--flow-lookup", lookup, *extra])
    assert st["flows"]["lookup"] == lookup
    assert (info["status"]["burst"], info["status"]["rx_burst"]) == (32, rx_burst or 64)
    assert len(out) == N
    assert out == frames  # one path, FIFO rings: even the global order holds
    assert port(st, "in")["rx_pkts"] == N
    assert port(st, "in")["rx_bytes"] == sum(len(f) for f in frames)
    assert port(st, "out")["tx_bytes"] == sum(len(f) for f in frames)
    assert st["drops_total"] == 0
    _edges_of_chain(st, frames, length)
    for i in range(1, length + 1):
        s = service(st, f"f{i}")
        assert (s["rx_pkts"], s["tx_pkts"]) == (N, N)
        assert all(v == 0 for v in s["drops"].values())


@pytest.mark.timeout(90)
def test_chain_of_one_in_poll_mode(launch, node, tmp_path):
    """Poll mode on this 2-CPU machine: sluiced's two I/O threads are pinned
    to CPUs 0 and 1 and busy-poll, and so does the NF (floating over both);
    the packets still all go through, byte-exact and in order, and the node
    stops promptly."""
    info: dict = {}
    t0 = time.monotonic()
    frames, out, st = _run_chain(launch, node, tmp_path, 1, mode="poll", info=info)
    elapsed = time.monotonic() - t0
    nbytes = sum(map(len, frames))
    assert info["status"]["mode"] == "poll"
    assert [(n["service"], n["mode"], n["state"]) for n in info["nf.list"]] == [
        ("f1", "poll", "running")]
    assert out == frames
    assert (port(st, "in")["rx_pkts"], port(st, "in")["rx_bytes"]) == (N, nbytes)
    assert (port(st, "out")["tx_pkts"], port(st, "out")["tx_bytes"]) == (N, nbytes)
    assert st["drops_total"] == 0
    _edges_of_chain(st, frames, 1)
    s = service(st, "f1")
    assert (s["rx_pkts"], s["tx_pkts"]) == (N, N)
    assert all(v == 0 for v in s["drops"].values())
    (nf,) = st["nfs"]
    assert (nf["rx_pkts"], nf["tx_pkts"]) == (N, N)
    assert elapsed < 45, f"start, {N} packets and stop took {elapsed:.1f} s"


def _stop_and_check_the_replay(run, dst: Path, frames: list[bytes]) -> tuple[dict, int]:
    """Pauses the port, waits until nothing is in flight and stops the
    node: nothing was dropped, and the output capture is the replay of
    frames, in order, none missing. Returns the last stats and the number
    of packets read."""
    run.client.call("rx.pause")
    st = wait_drained(run)
    run.stop()  # closes the pcap writer
    assert st["drops_total"] == 0, st["drops"]
    n = port(st, "in")["rx_pkts"]
    out = read(dst)
    assert len(out) == port(st, "out")["tx_pkts"] == n
    assert out == (frames * (n // N + 1))[:n]
    return st, n


@pytest.mark.parametrize("lookup", ["cached", "off"])
def test_ingress_backpressure_stalls_the_port_instead_of_dropping(launch, node, tmp_path, lookup):
    """NF rings of 64 entries (the least sluiced takes), a capture replayed
    forever through a chain of 3 NFs, and the first NF stopped (SIGSTOP) for
    a moment: its ring fills, and the I/O thread stops reading the port
    (counted in rx_stalls) rather than dropping. Once the NF runs again,
    every packet read comes out, in order, and nothing is lost. (The hang
    watchdog is off: a stopped NF with packets waiting would be killed.)
    With the flow table on and off (two ingress paths in sluiced)."""
    frames = mixed(N, flows=120, seed=3)
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    nfs = [{"name": f"f{i}", "program": prog("forward"), "service": f"f{i}"}
           for i in range(1, 4)]
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=nfs, chain=["f1", "f2", "f3", "port:out"], ring_size=64,
        sluiced_args=["--nf-hang-ms", "0", "--flow-lookup", lookup]))
    stats = lambda: run.client.call("stats")  # noqa: E731
    assert run.client.call("status")["ring_size"] == 64
    # A DPDK ring of 64 slots holds 63 packets.
    assert [(n["rx_ring"]["size"], n["tx_ring"]["size"])
            for n in run.client.call("nf.list")] == [(63, 63)] * 3
    wait_until(lambda: port(stats(), "out")["tx_pkts"] > N, 20, "traffic through the chain")

    f1 = run.nfs[0].pid
    os.kill(f1, signal.SIGSTOP)
    try:
        stalls = port(stats(), "in")["rx_stalls"]
        wait_until(lambda: port(stats(), "in")["rx_stalls"] > stalls + 100, 10,
                   "the port to stall behind the stopped NF")
        # Stalled: the port is not read, and nothing is dropped.
        read_before = port(stats(), "in")["rx_pkts"]
        time.sleep(0.2)
        st = stats()
        assert port(st, "in")["rx_pkts"] == read_before
        assert st["drops_total"] == 0, st["drops"]
    finally:
        os.kill(f1, signal.SIGCONT)
    wait_until(lambda: port(stats(), "in")["rx_pkts"] > read_before + N, 20,
               "the port read again")
    st, n = _stop_and_check_the_replay(run, dst, frames)
    for i in range(1, 4):
        s = service(st, f"f{i}")
        assert (s["rx_pkts"], s["tx_pkts"]) == (n, n)
        assert all(v == 0 for v in s["drops"].values()), s["drops"]


@pytest.mark.parametrize("lookup,rx_burst", [("off", None), ("off", 5), ("cached", 7)])
def test_a_port_read_takes_rx_burst_packets(launch, node, tmp_path, lookup, rx_burst):
    """sluiced reads a port --rx-burst packets at a time (64 by default).
    The first NF is stopped (SIGSTOP) with its ring (64 slots: 63
    packets) empty and the port paused; once the port is read again, the
    I/O thread reads whole bursts until one does not fit, keeps the rest
    waiting and stops reading: B * ceil(64 / B) packets read, 63 of them
    in the ring, nothing dropped. Then every one of them comes out, in
    order."""
    b = rx_burst or 64
    frames = mixed(N, flows=120, seed=5)
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    extra = [] if rx_burst is None else ["--rx-burst", str(rx_burst)]
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "f1", "program": prog("forward"), "service": "f1"}],
        chain=["f1", "port:out"], ring_size=64,
        sluiced_args=["--nf-hang-ms", "0", "--flow-lookup", lookup, *extra]))
    stats = lambda: run.client.call("stats")  # noqa: E731
    assert run.client.call("status")["rx_burst"] == b
    wait_until(lambda: port(stats(), "out")["tx_pkts"] > N, 20, "traffic through the chain")
    run.client.call("rx.pause")
    wait_drained(run)
    f1 = run.nfs[0].pid
    os.kill(f1, signal.SIGSTOP)
    try:
        before = port(stats(), "in")["rx_pkts"]
        run.client.call("rx.resume")
        wait_until(lambda: port(stats(), "in")["rx_stalls"] > 0 and
                   port(stats(), "in")["rx_pkts"] > before, 10,
                   "the port to stall behind the stopped NF")
        time.sleep(0.2)
        st = stats()
        assert port(st, "in")["rx_pkts"] - before == b * -(-64 // b)
        (nf,) = st["nfs"]
        assert nf["rx_ring"]["count"] == 63
        assert st["drops_total"] == 0, st["drops"]
    finally:
        os.kill(f1, signal.SIGCONT)
    _stop_and_check_the_replay(run, dst, frames)


def test_chain_through_the_io_thread_handoff(launch, node, tmp_path):
    """--handoff mgr: NF -> sluiced I/O thread -> next NF; same bytes, same order."""
    frames, out, st = _run_chain(launch, node, tmp_path, 3, handoff="mgr")
    assert out == frames
    assert st["drops_total"] == 0
    _edges_of_chain(st, frames, 3)


@needs_asan
def test_chain_under_asan(launch, node, tmp_path):
    """The same chain of 3 with sluiced and NFs built with ASan+UBSan."""
    build = ASAN_BUILD
    runs = []

    def keep(dep, build=None):
        runs.append(launch(dep, build))
        return runs[-1]

    # The flow table off: sluiced's own ingress path (sl_dispatch_alike)
    # under the sanitizers too; the NFs' paths are the same either way.
    frames, out, st = _run_chain(keep, node, tmp_path, 3, build=build,
                                 sluiced_args=["--flow-lookup", "off"])
    assert out == frames
    assert st["drops_total"] == 0
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("run*/*.log"))
    assert_no_sanitizer_report(logs)
    # A sanitizer that reports at exit (LeakSanitizer) shows in the exit
    # status: every process ended cleanly.
    (run,) = runs
    codes = {p.label: p.exited() for p in run.processes()}
    assert len(codes) == 4 and set(codes.values()) == {0}, codes


def test_per_flow_order_with_mixed_paths(launch, node, tmp_path):
    """Two replicas: flows spread, a flow never splits, per-flow order kept."""
    frames = mixed(N, flows=200, seed=7)
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd", "replicas": 2,
              "args": ["--tag-src-mac"]}],
        chain=["fwd", "port:out"],
    ))
    st = wait_until(lambda: (s := run.client.call("stats")) and
                    port(s, "out")["tx_pkts"] == N and s, 30, f"{N} packets out")
    run.stop()
    out = read(dst)
    assert len(out) == N
    # Byte 11 is the last byte of the source MAC: the instance that handled it.
    tags: dict[tuple, set[int]] = defaultdict(set)
    seq_in: dict[tuple, list[bytes]] = defaultdict(list)
    seq_out: dict[tuple, list[bytes]] = defaultdict(list)
    for f in frames:
        seq_in[flow_of(f)].append(f[:11] + f[12:])
    for f in out:
        k = flow_of(f)
        tags[k].add(f[11])
        seq_out[k].append(f[:11] + f[12:])
    assert all(len(t) == 1 for t in tags.values()), "a flow was split between replicas"
    instances = {n["instance"] for n in st["nfs"]}
    assert set().union(*tags.values()) == instances  # both replicas got flows
    assert seq_out == seq_in  # same bytes, same order within every flow
    # Each replica handled exactly the packets that carry its tag, and each
    # got a real share (more than a tenth) of the 200 flows' packets.
    tagged = {i: sum(1 for f in out if f[11] == i) for i in instances}
    assert {n["instance"]: (n["rx_pkts"], n["tx_pkts"]) for n in st["nfs"]} == {
        i: (c, c) for i, c in tagged.items()}
    assert sum(tagged.values()) == N and min(tagged.values()) > N // 10, tagged
