"""Capture paths of any length. Every NF (a DPDK secondary) probes sluiced's
net_pcap devices again from a copy of their arguments that DPDK 22.11 keeps
in 64 bytes: cut right before the '=' of infinite_rx, it crashed every NF
(the demo in a clone whose path had the wrong length). sluiced now probes
pcap devices with their files renamed to short private links."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from conftest import deployment, port, prog, wait_until
from packets import mixed, write
from test_control import _sluiced


def _path_of_length(n: int) -> Path:
    """A fresh file path of exactly n characters under /tmp."""
    base = Path(f"/tmp/slp{os.getpid()}")
    pad = n - len(str(base)) - len("/in.pcap") - 1
    assert pad > 0
    return base / ("d" * pad) / "in.pcap"


def test_nfs_start_whatever_the_capture_path(launch, node, tmp_path):
    # 43 characters: "rx_pcap=" + path + ",infinite_rx=1" cut to 63 ends in
    # "infinite_rx" with no value, which crashed the NFs' probe.
    src = _path_of_length(43)
    assert len("rx_pcap=" + str(src) + ",infinite_rx") == 63
    src.parent.mkdir(parents=True)
    try:
        write(src, mixed(500, flows=20, seed=2))
        run = launch(deployment(
            node,
            ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
                   {"name": "out", "device": "net_null0,no-rx=1"}],
            nfs=[{"name": f"f{i}", "program": prog("forward"), "service": f"f{i}"}
                 for i in (1, 2)],
            chain=["f1", "f2", "port:out"]))
        wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] > 10_000, 20,
                   "traffic through both NFs")
        assert [n["state"] for n in run.client.call("nf.list")] == ["running", "running"]
        assert [p.exited() for p in run.nfs] == [None, None]
        # port.list shows the device as given; the private links are gone.
        dev = {p["name"]: p["device"] for p in run.client.call("port.list")}
        assert dev["in"] == f"net_pcap0,rx_pcap={src},infinite_rx=1"
        assert not list(Path("/tmp").glob(f"sl-{run.sluiced.pid}-*"))
    finally:
        shutil.rmtree(src.parent.parent, ignore_errors=True)


def test_pcap_arguments_too_long_for_the_nfs_are_refused(node, tmp_path):
    files = [tmp_path / f"{c}.pcap" for c in "abc"]
    for f in files:  # readable: sluiced checks that before the arguments' length
        f.write_bytes(b"")
    dev = "net_pcap0," + ",".join(f"rx_pcap={f}" for f in files)
    r = _sluiced("--port", f"in={dev}", name=node)
    assert r.returncode == 1
    # The files as sluiced renames them: links in its private folder
    # /tmp/sl-<its pid>-XXXXXX, which it removes again.
    said = [ln for ln in r.stderr.splitlines() if ln.startswith("sluiced: ")]
    assert len(said) == 1, r.stderr
    m = re.fullmatch(r"sluiced: port 'in': the arguments of 'net_pcap0,(?P<args>.*)' are "
                     r"(?P<n>\d+) characters \(capture files counted as sluiced renames "
                     r"them\); DPDK's net_pcap keeps 63 for the NFs' processes: use fewer "
                     r"files or arguments", said[0])
    assert m, said
    d = re.fullmatch(r"rx_pcap=(/tmp/sl-\d+-\w{6})/0\.pcap,.*", m["args"])
    assert d and m["args"] == ",".join(f"rx_pcap={d[1]}/{i}.pcap" for i in range(3)), m["args"]
    assert int(m["n"]) == len(m["args"]), said
    assert not Path(d[1]).exists()


def test_nfs_send_to_a_pcap_port_through_sluiced(launch, node, tmp_path):
    """An NF's probe of a pcap port fails (its files are private to
    sluiced), so what an NF sends there must go through sluiced, even with
    --nf-tx-queues (DPDK's driver gives a pcap port one TX queue per tx
    file, and one that discards when it has none). Here the capture's own
    port, with no tx file, is the chain's end: every packet is sent and
    counted, none dropped."""
    frames = mixed(1000, flows=20, seed=4)
    src = write(tmp_path / "in.pcap", frames)
    run = launch(deployment(
        node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"}],
        nfs=[{"name": "f1", "program": prog("forward"), "service": "f1"}],
        chain=["f1", "port:in"], sluiced_args=["--nf-tx-queues", "2"]))
    st = wait_until(lambda: (s := run.client.call("stats")) and
                    port(s, "in")["tx_pkts"] + s["drops_total"] >= len(frames) and s,
                    20, "the capture sent back out")
    assert st["drops_total"] == 0, st["drops"]
    assert port(st, "in")["rx_pkts"] == port(st, "in")["tx_pkts"] == len(frames)
    assert port(st, "in")["tx_bytes"] == sum(len(f) for f in frames)
