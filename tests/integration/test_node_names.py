"""A node name as long as sluiced takes (16 characters, SL_NODE_NAME_MAX):
every DPDK object sluiced names, and the NFs that attach to it, work.
rte_hash makes ring and memzone names of "RG_HT_EXT_<table name>", which
DPDK cuts at 31 characters: the flow tables once had the node's name in
theirs, and a name of 13 or more characters made the IPv4 and the IPv6
table clash ("cannot create a flow table ...: File exists")."""

from __future__ import annotations

from pathlib import Path

from conftest import deployment, port, prog, wait_drained
from packets import read, write
from scapy.all import IP, UDP, Ether, IPv6

from sluice.runtime.launch import hugetlbfs_mounts


def test_a_sixteen_character_node_runs_a_chain_with_its_flow_table(launch, node, tmp_path):
    name = (node + "-" * 16)[:16]
    assert len(name) == 16
    frames = [bytes(Ether() / IP(src=f"10.0.0.{i}", dst="10.0.1.1") / UDP(sport=i, dport=53)
                    / (b"x" * 20)) for i in range(1, 11)]
    frames += [bytes(Ether() / IPv6(src=f"2001:db8::{i}", dst="2001:db8:1::1")
                     / UDP(sport=i, dport=53) / (b"y" * 20)) for i in range(1, 6)]
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        name, ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
                     {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "f", "program": prog("forward"), "service": "f"}],
        chain=["f", "port:out"]))
    st = wait_drained(run)
    assert port(st, "out")["tx_pkts"] == len(frames) and st["drops_total"] == 0
    assert (st["flows"]["created"], st["flows"]["live"]) == (15, 15)
    assert run.client.call("status")["node"] == name
    run.stop()
    assert all(p.exited() == 0 for p in run.nfs)
    assert read(dst) == frames
    left = [p for d in hugetlbfs_mounts() for p in d.glob(f"sluice_{name}map_*")]
    assert left == [] and not Path(f"/var/run/dpdk/sluice_{name}").exists()
