"""Per-service byte counters of `stats`: a service's rx_bytes and tx_bytes
are exactly the lengths of the frames that went into and out of it, and
they keep the share of an instance that has left."""

from __future__ import annotations

import pytest
from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, read, write
from scapy.all import UDP, Ether

REPLAY = 1000  # frames in the replayed capture


def _replayed_bytes(lens: list[int], n: int) -> int:
    """Bytes of the first n frames of a capture replayed in a loop."""
    return n // len(lens) * sum(lens) + sum(lens[:n % len(lens)])


def _bytes(st: dict, name: str) -> tuple[int, int, int, int]:
    s = service(st, name)
    return s["rx_pkts"], s["rx_bytes"], s["tx_pkts"], s["tx_bytes"]


@pytest.mark.parametrize("handoff", ["direct", "mgr"])
def test_service_bytes_are_the_frames_in_and_out(launch, node, tmp_path, handoff):
    """firewall (denies UDP) -> forward -> port:out: the firewall received
    every frame and handed on the TCP ones; forward received and handed on
    exactly those, the bytes the out capture holds. Also when every hop
    goes through sluiced's I/O thread (--handoff mgr), where the NFs' own
    tx counts their whole tx ring and sluiced resolves the hops."""
    frames = mixed(3000, flows=120, seed=21)
    allowed = [f for f in frames if UDP not in Ether(f)]
    assert 0 < len(allowed) < len(frames)
    (tmp_path / "rules.yaml").write_text("default: allow\nrules:\n"
                                         "  - {action: deny, proto: udp}\n")
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(tmp_path / "rules.yaml")]},
             {"name": "fwd", "program": prog("forward"), "service": "forward"}],
        chain=["firewall", "forward", "port:out"], handoff=handoff))
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 30,
               "the capture to be read")
    st = wait_drained(run)
    run.stop()
    assert read(dst) == allowed
    all_b, ok_b = sum(map(len, frames)), sum(map(len, allowed))
    assert _bytes(st, "firewall") == (len(frames), all_b, len(allowed), ok_b)
    assert _bytes(st, "forward") == (len(allowed), ok_b, len(allowed), ok_b)
    assert service(st, "firewall")["drops"]["nf_verdict"] == len(frames) - len(allowed)
    # What a service handed on is the sum of its edges to a service or a port.
    for name in ("firewall", "forward"):
        out = [e for e in st["edges"] if e["from"] == name and e["to"] != "drop"]
        assert _bytes(st, name)[2:] == (sum(e["pkts"] for e in out),
                                        sum(e["bytes"] for e in out))
    # A service of one instance received what that instance received.
    for n in st["nfs"]:
        assert n["rx_bytes"] == service(st, n["service"])["rx_bytes"]
    fw = next(n for n in st["nfs"] if n["service"] == "firewall")
    # The NF's own tx is what it passed on, in either hand-off (in mgr
    # hand-off its denied frames go through its tx ring too, for sluiced to
    # drop and count as its nf_verdict drops): in = out + drops.
    assert fw["tx_bytes"] == ok_b
    assert fw["rx_pkts"] == fw["tx_pkts"] + fw["drops"]["nf_verdict"]
    assert fw["drops"]["nf_verdict"] == len(frames) - len(allowed)


@pytest.mark.parametrize(("nf_txq", "handoff"), [(0, "direct"), (4, "direct"), (0, "mgr")],
                         ids=["tx-via-sluiced", "tx-by-nf", "handoff-mgr"])
def test_service_bytes_keep_a_stopped_replicas_share(launch, node, tmp_path, nf_txq,
                                                     handoff):
    """head -> fwd (2 replicas) -> port:out on a replayed capture, in three
    phases (traffic, one fwd replica stopped, traffic again): each service's
    bytes are exactly those of the frames read so far, the stopped replica's
    included, and they do not move when it leaves."""
    frames = mixed(REPLAY, flows=64, seed=23)
    lens = [len(f) for f in frames]
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "head", "program": prog("forward"), "service": "head"},
             {"name": "fwd", "program": prog("forward"), "service": "fwd", "replicas": 2}],
        chain=["head", "fwd", "port:out"],
        sluiced_args=["--nf-tx-queues", str(nf_txq)], handoff=handoff,
    ))

    def out() -> int:
        return port(run.client.call("stats"), "out")["tx_pkts"]

    def check(st: dict) -> int:
        n = port(st, "in")["rx_pkts"]
        b = _replayed_bytes(lens, n)
        assert port(st, "in")["rx_bytes"] == b  # the capture is replayed in order
        assert st["drops_total"] == 0
        for name in ("head", "fwd"):
            assert _bytes(st, name) == (n, b, n, b), name
        return b

    wait_until(lambda: out() > 20_000, 20, "traffic")
    run.client.call("rx.pause")
    st1 = wait_drained(run)
    b1 = check(st1)
    reps = {n["instance"]: n for n in st1["nfs"] if n["service"] == "fwd"}
    # How the flows spread over the two is the hash's business: each got
    # some, and passed on exactly what it got.
    assert len(reps) == 2 and all(n["rx_bytes"] > 0 for n in reps.values()), reps
    assert all((n["rx_pkts"], n["rx_bytes"]) == (n["tx_pkts"], n["tx_bytes"])
               for n in reps.values()), reps
    assert sum(n["rx_pkts"] for n in reps.values()) == port(st1, "in")["rx_pkts"]
    assert sum(n["rx_bytes"] for n in reps.values()) == b1
    assert sum(n["tx_bytes"] for n in reps.values()) == b1

    victim, survivor = sorted(reps)
    run.client.call("nf.stop", instance=victim)
    wait_until(lambda: [n["instance"] for n in run.client.call("nf.list")
                        if n["service"] == "fwd"] == [survivor], 5, "the replica to leave")
    st2 = run.client.call("stats")
    assert victim not in service(st2, "fwd")["instances"]
    # The stopped replica's bytes stay with its service.
    assert _bytes(st2, "fwd") == _bytes(st1, "fwd")
    assert _bytes(st2, "head") == _bytes(st1, "head")

    run.client.call("rx.resume")
    wait_until(lambda: out() > port(st1, "out")["tx_pkts"] + 20_000, 20,
               "traffic through the survivor")
    run.client.call("rx.pause")
    st3 = wait_drained(run)
    b3 = check(st3)
    assert b3 > b1
    last = next(n for n in st3["nfs"] if n["instance"] == survivor)
    assert service(st3, "fwd")["rx_bytes"] == reps[victim]["rx_bytes"] + last["rx_bytes"]
    assert service(st3, "fwd")["tx_bytes"] == reps[victim]["tx_bytes"] + last["tx_bytes"]
