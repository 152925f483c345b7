"""/metrics' node-wide drops and flow table against a real sluiced: after a
firewall replica that dropped packets has left, sluice_node_drops_total still
counts its drops (the NF families no longer can), its series add up to
sluice_drops_total and to in - out, and sluice_flows_* are stats.flows."""

from __future__ import annotations

from conftest import deployment, port, prog, service, wait_drained, wait_until
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from sluice.api import create_app
from sluice.runtime.traces import generate


def _firewalls(run) -> list[dict]:
    return [x for x in run.client.call("stats")["nfs"] if x["service"] == "firewall"]


def test_node_drops_keep_a_gone_instance_and_flows_are_stats(launch, node, tmp_path):
    src = tmp_path / "in.pcap"
    generate(src, packets=2048, flows=256)
    rules = tmp_path / "fw.yaml"
    rules.write_text("default: allow\nrules:\n  - {name: no-udp, action: deny, proto: udp}\n")
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fw", "program": prog("firewall"), "service": "firewall",
              "args": ["--rules", str(rules)], "replicas": 2},
             {"name": "fwd", "program": prog("forward"), "service": "forward"}],
        chain=["firewall", "forward", "port:out"]))
    wait_until(lambda: [x["state"] for x in _firewalls(run)] == ["running"] * 2, 60,
               "two running firewall instances")
    # both replicas have dropped UDP flows of their own
    wait_until(lambda: all(x["drops"]["nf_verdict"] > 0 for x in _firewalls(run)), 30,
               "drops at both firewall replicas")
    assert run.client.call("rx.pause") == {"rx_enabled": False}
    wait_drained(run)
    gone = max(x["instance"] for x in _firewalls(run))
    run.client.call("nf.scale", service="firewall", replicas=1)
    wait_until(lambda: len(ids := [x["instance"] for x in _firewalls(run)]) == 1
               and gone not in ids, 60, f"firewall instance {gone} gone")

    with TestClient(create_app(node, str(run.dep.socket_path()))) as api:
        text = api.get("/metrics").text
    st = run.client.call("stats")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}

    node_drops = {dict(lab)["reason"]: v for (name, lab), v in samples.items()
                  if name == "sluice_node_drops_total"}
    assert node_drops == st["drops"]  # every reason, zeros included
    rx, tx = port(st, "in")["rx_pkts"], port(st, "out")["tx_pkts"]
    assert sum(node_drops.values()) == samples[("sluice_drops_total", ())] \
        == st["drops_total"] == rx - tx > 0
    # The instance that left took its series along; the node's kept its drops.
    nf_verdict = sum(v for (name, lab), v in samples.items()
                     if name == "sluice_nf_drops_total" and ("reason", "nf_verdict") in lab)
    (left,) = _firewalls(run)
    assert nf_verdict == left["drops"]["nf_verdict"]
    assert node_drops["nf_verdict"] == service(st, "firewall")["drops"]["nf_verdict"] \
        > nf_verdict > 0
    assert not [lab for name, lab in samples
                if name == "sluice_nf_running" and ("instance", str(gone)) in lab]

    fl = st["flows"]
    assert fl["created"] > 0 and fl["live"] > 0
    assert {name: v for (name, _), v in samples.items() if name.startswith("sluice_flows_")} \
        == {"sluice_flows_live": fl["live"], "sluice_flows_capacity": fl["capacity"],
            "sluice_flows_created_total": fl["created"], "sluice_flows_aged_total": fl["aged"],
            "sluice_flows_deleted_total": fl["deleted"],
            "sluice_flows_table_full_total": fl["table_full"]}
