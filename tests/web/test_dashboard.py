"""The web dashboard in headless chromium, against a real sluiced with traffic:
the running graph is drawn with the right names, its rates move, a drop
reason and an NF event appear, the token is taken from ?token= once, and a
screenshot is saved (SLUICE_DOCS_SCREENSHOT=1 also copies it to
docs/dashboard.png, the picture of docs/api.md)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dashboard_helpers import ROOT, free_port, it

from sluice.api import ApiServer, create_app
from sluice.runtime.traces import generate

TOKEN = "web-t0ken"
CHAIN = [("port:in", "firewall"), ("firewall", "monitor"), ("monitor", "forward"),
         ("forward", "port:out")]

NODES_JS = """[...document.querySelectorAll('#graph g.node')].map(g => ({
    node: g.dataset.node, role: g.dataset.role,
    instances: (g.querySelector('.instances') || {}).textContent || ''}))"""
EDGES_JS = """[...document.querySelectorAll('#graph g.edge')].map(g => {
    const t = g.querySelector('text.rate');
    return {from: g.dataset.from, to: g.dataset.to, label: t ? t.textContent : null,
            pps: t ? Number(t.dataset.pps) : null}; })"""
HEADS_JS = """Object.fromEntries(["ports", "nfs", "edges", "drops"].map(id => [id,
    [...document.querySelectorAll(`#${id} thead th`)].map(th => [th.textContent,
                                                                th.title])]))"""
# the numbers the test reads twice: per-edge packets/s on the graph, packets of
# each edge (edges table), packets/s into port in and out of port out
READ_JS = """(() => {
    const v = (sel) => { const e = document.querySelector(sel);
                         return e ? Number(e.dataset.value) : null; };
    const edges = {};
    for (const g of document.querySelectorAll('#graph g.edge')) {
        const t = g.querySelector('text.rate');
        edges[g.dataset.from + '>' + g.dataset.to] = t ? Number(t.dataset.pps) : null;
    }
    const pkts = {};
    for (const r of document.querySelectorAll('#edges tbody tr'))
        pkts[r.dataset.from + '>' + r.dataset.to] =
            Number(r.querySelector('td.pkts').dataset.value);
    return {samples: Number(document.body.dataset.samples || 0), edges, pkts,
            in_rx: v('#ports tr[data-port="in"] td.rx'),
            out_tx: v('#ports tr[data-port="out"] td.tx')};
})()"""


def _rules(tmp: Path) -> Path:
    # the trace's UDP is dropped by the firewall (drop reason nf_verdict)
    p = tmp / "fw.yaml"
    p.write_text("default: allow\nrules:\n  - {name: no-udp, action: deny, proto: udp}\n")
    return p


def test_dashboard_shows_the_running_node(launch, node, browser, tmp_path):
    src = tmp_path / "in.pcap"
    generate(src, packets=4096, flows=256)
    run = launch(it.deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fw", "program": it.prog("firewall"), "service": "firewall",
              "args": ["--rules", str(_rules(tmp_path))]},
             {"name": "mon", "program": it.prog("monitor"), "service": "monitor"},
             {"name": "fwd", "program": it.prog("forward"), "service": "forward"}],
        chain=["firewall", "monitor", "forward", "port:out"]))
    server = ApiServer(create_app(node, str(run.dep.socket_path()), TOKEN), "127.0.0.1",
                       free_port())
    server.start()
    try:
        r = browser("open", url=f"{server.url}/?token={TOKEN}&interval=0.5")
        assert r["status"] == 200
        assert browser.eval("location.search") == "?interval=0.5", \
            "the page should take the token out of the address bar"
        assert browser.eval("document.title") == f"Sluice · {node}"

        # the chain, drawn: ports as source and sink, the three services, four
        # edges, each with a packets/s label
        browser.wait("""(() => { const t = document.querySelector(
                '#graph g.edge[data-from="port:in"][data-to="firewall"] text.rate');
                return t && Number(t.dataset.pps) > 0; })()""", 60,
                     "a rate on the edge port:in -> firewall")
        # the tables' heads, from the stats schema: as they have always read, with
        # each field's help as a tooltip
        heads = browser.eval(HEADS_JS)
        assert {t: [h for h, _ in hs] for t, hs in heads.items()} == {
            "ports": ["port", "in/s", "out/s", "drop/s", "in/s, last minute",
                      "out/s, last minute"],
            "nfs": ["instance", "state", "in/s", "out/s", "drop/s", "ring", "cyc/pkt",
                    "in/s, last minute"],
            "edges": ["from", "to", "pkts/s", "bytes/s", "packets", "pkts/s, last minute"],
            "drops": ["reason", "per s", "total", "where"]}, heads
        assert heads["ports"][1][1] == "packets received from the port"
        assert heads["edges"][3][1] == "bytes handed on along the edge"
        nodes = browser.eval(NODES_JS)
        roles = {(n["node"], n["role"]) for n in nodes}
        assert roles == {("port:in", "source"), ("firewall", "service"),
                         ("monitor", "service"), ("forward", "service"),
                         ("port:out", "sink")}, nodes
        edges = {(e["from"], e["to"]): e for e in browser.eval(EDGES_JS)}
        assert set(edges) == set(CHAIN), edges
        for pair in CHAIN:
            assert edges[pair]["label"].endswith(" pps"), edges[pair]
        assert browser.eval("document.getElementById('graph-names').textContent") == \
            "graphs: default (chain)"

        # the numbers move while traffic flows: read them twice
        browser.wait(" && ".join(
            f"(() => {{ const t = document.querySelector('#graph g.edge[data-from=\"{a}\"]"
            f"[data-to=\"{b}\"] text.rate'); return t && Number(t.dataset.pps) > 0; }})()"
            for a, b in CHAIN), 60, "a rate on every edge of the chain")
        first = browser.eval(READ_JS)
        browser.wait(f"Number(document.body.dataset.samples) >= {first['samples'] + 2}", 30,
                     "two more samples")
        second = browser.eval(READ_JS)
        for snap in (first, second):
            assert snap["in_rx"] > 0 and snap["out_tx"] > 0, snap
            for a, b in CHAIN:
                assert snap["edges"][f"{a}>{b}"] > 0, (a, b, snap)
        for a, b in CHAIN:
            assert second["pkts"][f"{a}>{b}"] > first["pkts"][f"{a}>{b}"], (a, b, first, second)
        assert first["edges"] != second["edges"], (first, second)
        # the edges table's packets/s are the graph's (one rate, drawn twice)
        table_pps = browser.eval("""Object.fromEntries([...document.querySelectorAll(
            '#edges tbody tr')].map(r => [r.dataset.from + '>' + r.dataset.to,
                                           r.querySelector('td.pps').dataset.value]))""")
        graph_pps = browser.eval("""Object.fromEntries([...document.querySelectorAll(
            '#graph g.edge')].map(g => [g.dataset.from + '>' + g.dataset.to,
            (g.querySelector('text.rate') || {dataset: {}}).dataset.pps]))""")
        for a, b in CHAIN:
            assert table_pps[f"{a}>{b}"] == graph_pps[f"{a}>{b}"], (table_pps, graph_pps)

        # a drop reason, and where
        browser.wait("document.querySelector('#drops tr[data-reason=\"nf_verdict\"]')", 30,
                     "the drop reason nf_verdict")
        where = browser.eval("document.querySelector('#drops tr[data-reason=\"nf_verdict\"] "
                             "td.where').textContent")
        assert where.startswith("firewall#"), where
        assert browser.eval("document.getElementById('drops-none').hidden") is True

        # an NF event: a second forward instance comes up
        run.client.call("nf.scale", service="forward", replicas=2)
        browser.wait("""[...document.querySelectorAll('#events li[data-kind="nf.up"]')]
                        .some(li => li.textContent.includes('service=forward'))""", 60,
                     "the event nf.up of the new forward instance")
        assert browser.eval("!!document.querySelector('#events li[data-kind=\"nf.scale\"]')")
        browser.wait("(document.querySelector('#graph g.node[data-service=\"forward\"] "
                     ".instances') || {textContent: ''}).textContent.split('#').length == 3",
                     30, "two instances on the forward node")
        browser.wait("document.querySelectorAll('#nfs tr[data-service=\"forward\"]')"
                     ".length == 2", 30, "two forward rows in the NF table")

        docs = os.environ.get("SLUICE_DOCS_SCREENSHOT") == "1"
        if docs:  # sparklines with some history for the picture of the docs
            n = browser.eval("Number(document.body.dataset.samples)")
            browser.wait(f"Number(document.body.dataset.samples) >= {n + 30}", 60, "30 samples")
        shot = tmp_path / "dashboard.png"
        browser("screenshot", path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20000
        if docs:
            shutil.copyfile(shot, ROOT / "docs" / "dashboard.png")
        assert browser.console == [], "the page logged errors"

        # in a new tab without the token: the page loads and says what is missing
        browser("open", url=f"{server.url}/", fresh=True)
        browser.wait("!document.getElementById('banner').hidden", 30, "the token banner")
        assert "needs a token: open this page as /?token=TOKEN" in browser.eval(
            "document.getElementById('banner').textContent")
        assert browser.eval("document.querySelectorAll('#graph g.node').length") == 0
        assert browser.console and all("401" in c for c in browser.console), browser.console
    finally:
        browser.close()
        server.stop()


def test_dashboard_draws_every_graph(launch, node, browser, tmp_path):
    """A second graph (TLS flows skip the monitor, examples/graphs/demo.yaml):
    its edges join the chain's, the default ones solid, the others dashed,
    each with the packets/s that took it."""
    src = tmp_path / "in.pcap"
    generate(src, packets=4096, flows=256)
    run = launch(it.deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
               {"name": "out", "device": "net_null0,no-rx=1"}],
        nfs=[{"name": "fw", "program": it.prog("firewall"), "service": "firewall",
              "args": ["--rules", str(_rules(tmp_path))]},
             {"name": "mon", "program": it.prog("monitor"), "service": "monitor"},
             {"name": "fwd", "program": it.prog("forward"), "service": "forward"}],
        chain=["firewall", "monitor", "forward", "port:out"]))
    run.client.call("graph.apply", name="tls",
                    nodes={"firewall": ["forward", "drop"], "forward": ["port:out"]})
    run.client.call("rule.add", graph="tls", priority=10, proto="tcp", dport=443)
    run.client.call("flow.delete", all=True)
    server = ApiServer(create_app(node, str(run.dep.socket_path())), "127.0.0.1", free_port())
    server.start()
    try:
        browser("open", url=f"{server.url}/?interval=0.5")
        browser.wait("document.getElementById('graph-names').textContent == "
                     "'graphs: default (chain), tls'", 60, "both graphs named")
        browser.wait("""(() => { const t = document.querySelector(
                '#graph g.edge[data-from="firewall"][data-to="forward"] text.rate');
                return t && Number(t.dataset.pps) > 0; })()""", 60,
                     "a rate on the tls edge firewall -> forward")
        edges = {(e["from"], e["to"]): e for e in browser.eval(
            EDGES_JS.replace("return {", "return {cls: g.getAttribute('class'), "))}
        assert set(edges) == set(CHAIN) | {("firewall", "forward"), ("firewall", "drop")}, edges
        assert "allowed" in edges[("firewall", "drop")]["cls"].split(), edges
        assert edges[("firewall", "drop")]["label"] is None  # no packet took it
        for pair in set(edges) - {("firewall", "drop")}:
            assert "default" in edges[pair]["cls"].split(), (pair, edges[pair])
            assert edges[pair]["pps"] > 0, (pair, edges[pair])
        roles = {(n["node"], n["role"]) for n in browser.eval(NODES_JS)}
        assert ("drop", "drop") in roles
        assert browser.console == [], "the page logged errors"
    finally:
        browser.close()
        server.stop()
