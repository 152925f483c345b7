"""A net_ring port (a DPDK vdev made of rte_rings, no hardware, no
kernel): one net_ring device created without arguments transmits into the
ring it receives from, so what goes out of it comes back in. A chain that
sends the capture out of it and a bridge that sends what comes back in to
the output capture see every packet twice, once each way; the loop is
bounded by the capture."""

from __future__ import annotations

import pytest
from conftest import deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, read, write

N = 2000


def _nonzero_drops(st: dict) -> dict:
    return {(x["name"], k): v for x in st["ports"] + st["services"]
            for k, v in x["drops"].items() if v}


# With --nf-tx-queues 1 the ring port must still have one TX queue: a
# net_ring vdev sends TX queue q into ring q and reads RX queue q from it,
# and only RX queue 0 is read (1,023 packets were lost there before).
@pytest.mark.parametrize("nf_txq", [0, 1])
def test_net_ring_port_loops_back_every_packet_once(launch, node, tmp_path, nf_txq):
    """nf_txq 0 (the default): only sluiced transmits on ports. nf_txq 1:
    the NF has a TX queue of its own on the ring port too (sluiced
    --nf-tx-queues), and what it sends there must come back as well."""
    frames = mixed(N, flows=80, seed=21)
    nbytes = sum(map(len, frames))
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "loop", "device": "net_ring0"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        # From `in` no bridge side: NEXT, the chain's port:loop. Back from
        # `loop`: out of `out`.
        nfs=[{"name": "br", "program": prog("forward"), "service": "br",
              "args": ["--bridge", "loop,out"]}],
        chain=["br", "port:loop"],
        sluiced_args=["--nf-tx-queues", str(nf_txq)]))
    ports = {p["name"]: p for p in run.client.call("port.list")}
    assert set(ports) == {"in", "loop", "out"}
    loop = ports["loop"]
    assert (loop["device"], loop["started"], loop["link_up"], loop["rx_queues"]) == (
        "net_ring0", True, True, 1)
    assert loop["tx_queues"] == 1  # whatever --nf-tx-queues says
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == N, 30,
               "the capture to be read")
    st = wait_drained(run)
    run.stop()
    assert st["drops_total"] == 0, (_nonzero_drops(st), [
        (p["name"], p["rx_pkts"], p["tx_pkts"]) for p in st["ports"]])
    assert (port(st, "in")["rx_pkts"], port(st, "in")["rx_bytes"]) == (N, nbytes)
    assert (port(st, "in")["tx_pkts"], port(st, "in")["tx_bytes"]) == (0, 0)
    assert (port(st, "loop")["tx_pkts"], port(st, "loop")["tx_bytes"]) == (N, nbytes)
    assert (port(st, "loop")["rx_pkts"], port(st, "loop")["rx_bytes"]) == (N, nbytes)
    assert (port(st, "out")["tx_pkts"], port(st, "out")["tx_bytes"]) == (N, nbytes)
    assert (port(st, "out")["rx_pkts"], port(st, "out")["rx_bytes"]) == (0, 0)
    br = service(st, "br")
    assert (br["rx_pkts"], br["tx_pkts"]) == (2 * N, 2 * N)
    assert sorted((e["from"], e["to"], e["pkts"], e["bytes"]) for e in st["edges"]) == sorted([
        ("port:in", "br", N, nbytes), ("br", "port:loop", N, nbytes),
        ("port:loop", "br", N, nbytes), ("br", "port:out", N, nbytes)])
    assert read(dst) == frames  # one path through FIFO rings: same bytes, same order
