"""Capture paths of any length. Every NF (a DPDK secondary) probes sluiced's
net_pcap devices again from a copy of their arguments that DPDK 22.11 keeps
in 64 bytes: cut right before the '=' of infinite_rx, it crashed every NF
(the demo in a clone whose path had the wrong length). sluiced now probes
pcap devices with their files renamed to short private links; once the port
has them open, a tx_pcap link leads to /dev/null, so the NFs' own probes
succeed without writing over sluiced's capture."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import deployment, port, prog, wait_until
from packets import mixed, read, write
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
        # port.list shows the device as given; the private link is there
        # while sluiced runs (for the NFs' probes), gone after it.
        dev = {p["name"]: p["device"] for p in run.client.call("port.list")}
        assert dev["in"] == f"net_pcap0,rx_pcap={src},infinite_rx=1"
        (folder,) = Path("/tmp").glob(f"sl-{run.sluiced.pid}-*")
        assert [(f.name, os.readlink(f)) for f in folder.iterdir()] == [("0.pcap", str(src))]
        run.stop()
        assert not folder.exists()
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


def test_nfs_probe_pcap_ports_quietly_and_leave_the_capture_whole(launch, node, tmp_path):
    """A tx_pcap port's private link leads to /dev/null once sluiced has
    the file open: NFs started after (all of them) probe the port without
    an error in their logs (they were three DPDK lines about a missing
    capture, above the NF's own) and without truncating the capture."""
    frames = mixed(400, flows=20, seed=5)
    src = write(tmp_path / "in.pcap", frames)
    out = tmp_path / "out.pcap"
    run = launch(deployment(
        node, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                     {"name": "out", "device": f"net_pcap1,tx_pcap={out}"}],
        nfs=[{"name": f"f{i}", "program": prog("forward"), "service": f"f{i}"}
             for i in (1, 2)],
        chain=["f1", "f2", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "out")["tx_pkts"] == len(frames), 20,
               "the capture through both NFs")
    links = {os.readlink(f) for d in Path("/tmp").glob(f"sl-{run.sluiced.pid}-*")
             for f in d.iterdir()}
    assert links == {str(src), "/dev/null"}, links
    logs = {p.label: p.log.read_text(errors="replace").splitlines() for p in run.nfs}
    # Each log: the command line, then nothing from DPDK's probes.
    assert all(lines[0].startswith("$ ") and not any(
        "pcap" in ln or "probe" in ln for ln in lines[1:]) for lines in logs.values()), logs
    pid = run.sluiced.pid
    run.stop()
    assert read(out) == frames
    assert not list(Path("/tmp").glob(f"sl-{pid}-*"))


def test_a_killed_sluiceds_private_folders_are_swept(node, tmp_path):
    """A sluiced killed before its exit leaves its folder; the next one
    removes it (only those of processes that are gone)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = Path(f"/tmp/sl-{dead.pid}-Ab12Cd")
    alive = Path(f"/tmp/sl-{os.getpid()}-Zz99Yy")
    for d in (gone, alive):
        d.mkdir()
        (d / "0.pcap").symlink_to("/dev/null")
    try:
        # It sweeps as it sets up its ports (here it stops at a bad one).
        r = _sluiced("--port", "bad=net_nosuch0", name=node)
        assert r.returncode == 1, r.stderr
        assert "port 'bad': no DPDK driver knows the device name 'net_nosuch0'" in r.stderr, \
            r.stderr
        assert not gone.exists()
        assert (alive / "0.pcap").is_symlink()
    finally:
        shutil.rmtree(alive, ignore_errors=True)
        shutil.rmtree(gone, ignore_errors=True)


def test_nfs_send_to_a_pcap_port_through_sluiced(launch, node, tmp_path):
    """A pcap port has one TX queue, sluiced's (its files are private to
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
