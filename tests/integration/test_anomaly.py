"""SDNFV's anomaly detection end to end: examples/anomaly.yaml, run by
`sluice up` (its orchestrator and policy too) on the capture it was made
for (``sluice.runtime.traces.anomaly_mix``), with the ports replaced by a
TAP input and a capture output and the detector's window made longer than
the test (so that one pass alarms at a known packet).

The graph: firewall -> sampler (1 flow in 4, by flow hash) -> ddos-detect
-> ids -> out; the unsampled flows leave from the sampler. The IDS diverts
a flow that asks for /etc/passwd to the sandbox (a monitor whose only edge
is drop); the detector's alarm starts a scrubber, whose RequestMe takes the
flood's flows at the firewall (sampled or not) and drops them.

The capture is written into the TAP interface in two phases: phase 1 up to
the batch in which the detector alarms (each batch only once sluiced has
accounted for the one before, so the cut is known), then, once the
scrubber's RequestMe is applied, phase 2. Which flows the sampler took is
read from sluiced's flow table (the flows pinned to an ids instance: a
flow is pinned where its packets went).

It proves: every frame reaches the output byte for byte, each once, except
the frames of sampled exploit flows from the one that completes the
signature on (they reach the sandbox) and the flood's frames of phase 2
(the scrubber's); each alert names a sampled exploit flow and sid 1001,
and every sampled exploit flow is alerted; the IDS inspected exactly the
sampled flows' packets (its counters: flows, packets) and no other; the
alarm came at the THRESHOLD-th sampled flood packet; every drop is
counted by sluiced with its reason (graph_drop: the sandbox's edge,
nf_verdict: the scrubber's), and sluiced's per-service counters agree with
each NF's own counters line.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import (
    ASAN_BUILD,
    ROOT,
    assert_no_sanitizer_report,
    build_dir,
    needs_asan,
    port,
    service,
    wait_until,
)
from packets import read

from sluice.core.deploy import load_deployment, read_yaml
from sluice.runtime.client import Client
from sluice.runtime.traces import (
    ANOMALY_EXPLOIT_PREFIX,
    DDOS_ATTACK_PREFIX,
    anomaly_mix,
    ensure_trace,
    in_prefix,
)

EXAMPLE = ROOT / "examples" / "anomaly.yaml"
THRESHOLD = 100  # sampled flood packets in one window that raise the alarm
BATCH = 64  # frames written before waiting for sluiced to read them
FLOOD, EXPLOIT = DDOS_ATTACK_PREFIX, ANOMALY_EXPLOIT_PREFIX
SANDBOX_FROM = 4  # an exploit flow's frames from its 5th (the request's 2nd segment) on
_ifs = itertools.count()


def fkey(f: bytes) -> tuple[int, tuple[bytes, int], tuple[bytes, int]]:
    """A frame's flow, both directions alike (lower address first)."""
    a = (f[26:30], int.from_bytes(f[34:36], "big"))
    b = (f[30:34], int.from_bytes(f[36:38], "big"))
    return (f[23], *sorted((a, b)))  # type: ignore[return-value]


def key_of_text(text: str) -> tuple[int, tuple[bytes, int], tuple[bytes, int]]:
    """The same from sluiced's flow key or an alert's flow
    ('tcp 10.77.7.32:59475 > 192.168.0.20:80')."""
    proto, a, _, b = text.split()[:4]

    def end(s: str) -> tuple[bytes, int]:
        ip, p = s.rsplit(":", 1)
        return bytes(map(int, ip.split("."))), int(p)

    return ({"tcp": 6, "udp": 17}[proto], *sorted((end(a), end(b))))  # type: ignore[return-value]


def counters(log: str, prefix: str) -> dict[str, str]:
    """The last 'PREFIX: k=v ...' line of a log as a dict."""
    lines = [ln for ln in log.splitlines() if ln.startswith(prefix + ":")]
    assert lines, f"no '{prefix}:' line in:\n{log}"
    return dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)


def example(node: str, tmp_path: Path, build: Path) -> tuple[Path, str, Path]:
    """examples/anomaly.yaml with a TAP input, a capture output, the
    detector's window longer than the test, counters only at exit and the
    relative paths made absolute; a probe NF for the orchestrator barrier."""
    dep = read_yaml(EXAMPLE)
    ifname = f"sla{os.getpid() % 100000}{next(_ifs)}"[:15]
    out = tmp_path / "out.pcap"
    dep["node"]["name"] = node
    dep["ports"] = [{"name": "in", "device": f"net_tap0,iface={ifname}"},
                    {"name": "out", "device": f"net_pcap1,tx_pcap={out}"}]
    for nf in dep["nfs"]:
        nf["program"] = str(build / "nfs" / nf["program"][len("sluice-"):]
                            / nf["program"])
        args = [str(EXAMPLE.parent / a) if a.endswith((".rules", ".yaml")) else a
                for a in nf.get("args", [])]
        if nf["service"] == "ddos-detect":
            assert args == ["--pps", "10000", "--protect", "192.168.0.0/24"], args
            args = ["--window-ms", "600000", "--threshold", str(THRESHOLD),
                    "--protect", "192.168.0.0/24", "--stats-ms", "0"]
        elif nf["service"] == "sandbox":
            args = ["--interval", "0", "--top", "100"]
        elif nf["service"] in ("sampler", "ids", "scrubber"):
            args += ["--stats-ms", "0"]
        nf["args"] = args
    dep["nfs"].append({"name": "probe", "program": str(build / "nfs/forward/sluice-forward"),
                       "service": "probe", "replicas": 0})
    dep["policies"].append({"on": "message", "key": "ready", "from": "control",
                            "action": "start", "nf": "probe", "once": True})
    f = tmp_path / "anomaly.yaml"
    f.write_text(yaml.safe_dump(dep, sort_keys=False))
    return f, ifname, out


class Rig:
    """The TAP writer, the event subscription and the control client."""

    def __init__(self, node: str, ifname: str, sock_path: Path, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.client = Client(node, sock_path, timeout=5.0)
        subprocess.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1"],
                       capture_output=True, check=False)
        subprocess.run(["ip", "link", "set", ifname, "up"], check=True, capture_output=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((ifname, 0))
        self.events: list[dict[str, Any]] = []
        self._sub = Client(node, sock_path, timeout=5.0)
        threading.Thread(target=self._listen, daemon=True).start()
        self.flows: dict[str, set[Any]] = {"ids": set(), "ddos-detect": set()}

    def _listen(self) -> None:
        try:
            for ev in self._sub.events():
                self.events.append(ev)
        except Exception:  # noqa: BLE001 (sluiced stopped, or the test closed it)
            pass

    def call(self, method: str, **params: Any) -> Any:
        return self.client.call(method, **params)

    def find(self, pred) -> dict[str, Any] | None:
        return next((e for e in list(self.events) if pred(e)), None)

    def wait_event(self, pred, timeout: float, what: str) -> dict[str, Any]:
        try:
            return wait_until(lambda: self.find(pred), timeout, what, interval=0.02)
        except AssertionError as e:
            raise AssertionError(f"{e}; events: {self.events}; logs in {self.run_dir}") from None

    def barrier(self, graph: dict[str, Any]) -> None:
        """Our subscription delivers (graph.applied of a graph applied again),
        and so does the orchestrator's (a control message starts the probe)."""
        for _ in range(40):
            v = self.call("graph.apply", **graph)["version"]
            try:
                self.wait_event(lambda e, v=v: e["kind"] == "graph.applied"
                                and e["data"]["version"] == v, 0.5, "graph.applied")
                break
            except AssertionError:
                continue
        else:
            raise AssertionError(f"the event subscription never delivered; {self.run_dir}")
        for _ in range(40):
            self.call("flow.request", type="message", service="ddos-detect", key="ready",
                      value="1")
            try:
                wait_until(lambda: any(n["service"] == "probe" for n in self.call("nf.list")),
                           0.5, "probe")
                return
            except AssertionError:
                continue
        raise AssertionError(f"the orchestrator never reacted to a message; {self.run_dir}")

    def accounted(self) -> dict[str, Any]:
        """Waits until every frame read is out or dropped."""

        def done() -> dict[str, Any] | None:
            st = self.call("stats")
            rx = sum(p["rx_pkts"] for p in st["ports"])
            tx = sum(p["tx_pkts"] for p in st["ports"])
            return st if rx == tx + st["drops_total"] else None

        return wait_until(done, 20, "every frame read to be out or dropped", interval=0.005)

    def send(self, frames: list[bytes], then=None) -> int:
        """Writes frames BATCH at a time, each batch once sluiced has read
        the one before (a full TAP queue drops in the kernel); with
        ``then``, after each batch also waits until it is accounted for and
        stops, returning the frames sent, once then() is true."""
        base = port(self.call("stats"), "in")["rx_pkts"]
        for i in range(0, len(frames), BATCH):
            for f in frames[i:i + BATCH]:
                self.sock.send(f)
            want = base + min(i + BATCH, len(frames))
            wait_until(lambda w=want: port(self.call("stats"), "in")["rx_pkts"] >= w, 20,
                       f"sluiced to read {want - base} of {len(frames)} frames", interval=0.005)
            if then is not None:
                self.accounted()
                # One more round trip through sluiced's control thread, which
                # publishes the NFs' messages: an alarm raised in this batch
                # is on the event socket by its answer (check() asserts the
                # alarm's packet is in the last batch, so a late one fails).
                self.call("status")
                if then():
                    return min(i + BATCH, len(frames))
        return len(frames)

    def note_flows(self) -> None:
        """Adds the flows pinned to ids and to ddos-detect (the sampled ones)."""
        for svc, seen in self.flows.items():
            res = self.call("flow.list", service=svc, limit=100000)
            assert not res["truncated"], res["matched"]
            seen |= {key_of_text(f["key"]) for f in res["flows"]}

    def close(self) -> None:
        self.sock.close()
        self._sub.close()


def run(rig: Rig, frames: list[bytes]) -> tuple[int, dict[str, Any]]:
    """Phase 1 up to the alarm, the scrubber's RequestMe, phase 2; returns
    the cut and the stats once every frame is accounted for."""
    first_flood = next(i for i, f in enumerate(frames) if in_prefix(f, FLOOD))
    rig.send(frames[:first_flood])  # no alarm can come before the flood

    def alarmed() -> bool:
        return rig.find(lambda e: e["kind"] == "nf.message"
                        and e["data"].get("key") == "alarm") is not None

    cut = first_flood + rig.send(frames[first_flood:], then=alarmed)
    assert cut < len(frames), "no alarm in the whole capture"
    rig.note_flows()
    alarm = rig.wait_event(lambda e: e["kind"] == "nf.message"
                           and e["data"].get("key") == "alarm", 1, "the alarm")["data"]
    assert (alarm["nf"], alarm["value"]) == ("ddos-detect", FLOOD), alarm
    me = rig.wait_event(lambda e: e["kind"] == "flow.request"
                        and e["data"].get("nf") == "scrubber", 30,
                        "the scrubber's RequestMe (flow.request)")["data"]
    live = {fkey(f) for f in frames[:cut] if in_prefix(f, FLOOD)}
    assert {k: v for k, v in me.items() if k != "instance"} == {
        "nf": "scrubber", "type": "request_me", "flow": f"src={FLOOD}", "service": "scrubber",
        "result": "applied", "applied": len(live), "kept": 1}, (me, len(live))
    rig.send(frames[cut:])
    st = rig.accounted()
    rig.note_flows()
    return cut, st


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_anomaly_example(node, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    frames = anomaly_mix()
    assert len(set(frames)) == len(frames)  # every frame distinct: a Counter compares them
    f, ifname, out = example(node, tmp_path, build)
    dep = load_deployment(f)
    run_dir = tmp_path / "run"
    console = tmp_path / "up.out"
    with open(console, "wb") as con:
        up = subprocess.Popen([sys.executable, "-m", "sluice.cli", "up", str(f), "--log-dir",
                               str(run_dir)], stdout=con, stderr=subprocess.STDOUT,
                              env={**os.environ, "SLUICE_BUILD_DIR": str(build)})
    rig = None
    try:
        wait_until(lambda: up.poll() is not None or b"orchestrator: " in console.read_bytes(),
                   60, "sluice up to start the node and its orchestrator")
        assert up.poll() is None, console.read_text()
        rig = Rig(node, ifname, dep.socket_path(), run_dir)
        graph = read_yaml(EXAMPLE)["graphs"][0]
        rig.barrier({k: graph[k] for k in ("name", "entry", "nodes")})
        assert not any(n["service"] == "scrubber" for n in rig.call("nf.list"))
        cut, st = run(rig, frames)
        rig.close()
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
        try:
            rc = up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            rc = up.wait(10)
    assert rc == 130, console.read_text()
    logs = {p.name: p.read_text(errors="replace") for p in run_dir.glob("*.log")}
    assert_no_sanitizer_report("".join(logs.values()))
    check(frames, cut, st, rig, read(out), logs)


def check(frames: list[bytes], cut: int, st: dict[str, Any], rig: Rig, got: list[bytes],
          logs: dict[str, str]) -> None:
    def log(name: str) -> str:
        return "".join(v for k, v in logs.items() if k.startswith(name))

    sampled = rig.flows["ids"]
    assert sampled == rig.flows["ddos-detect"], "a flow reached one of the two and not the other"
    exploit_flows = {fkey(f) for f in frames if in_prefix(f, EXPLOIT)}
    assert len(exploit_flows) == 40
    hit = exploit_flows & sampled
    assert 0 < len(hit) < len(exploit_flows), len(hit)  # the sampler took some, not all

    # The alarm came in the last batch of phase 1, at the THRESHOLD-th
    # sampled flood packet to the servers.
    sampled_flood = [i for i, f in enumerate(frames) if in_prefix(f, FLOOD)
                     and fkey(f) in sampled]
    assert cut - BATCH < sampled_flood[THRESHOLD - 1] + 1 <= cut, (cut, sampled_flood[:THRESHOLD])

    # Which frames go where.
    to_sandbox, scrubbed, expected = [], [], []
    pos: Counter = Counter()
    for i, f in enumerate(frames):
        k = fkey(f)
        if k in hit:
            pos[k] += 1
            if pos[k] > SANDBOX_FROM:
                to_sandbox.append(f)
                continue
        if i >= cut and in_prefix(f, FLOOD):
            scrubbed.append(f)
            continue
        expected.append(f)
    assert len(to_sandbox) == 4 * len(hit)
    missing = Counter(expected) - Counter(got)
    extra = Counter(got) - Counter(expected)
    assert not missing and not extra, (
        f"{sum(missing.values())} expected frame(s) missing, {sum(extra.values())} unexpected "
        f"(of which {sum(n for f, n in extra.items() if in_prefix(f, FLOOD))} from the flood, "
        f"{sum(n for f, n in extra.items() if in_prefix(f, EXPLOIT))} exploits)")

    # Alerts: one per sampled exploit flow, each naming it and sid 1001.
    alerts = [e["data"] for e in rig.events if e["kind"] == "nf.message"
              and e["data"].get("key") == "alert"]
    assert sorted(key_of_text(a["value"].split("flow=", 1)[1]) for a in alerts) == sorted(hit)
    for a in alerts:
        assert a["nf"] == "ids" and re.match(
            r"sid=1001 rev=1 action=divert flow=tcp 10\.77\.7\.\d+:\d+ > 192\.168\.0\.20:80 ",
            a["value"]), a
    diverts = [e["data"] for e in rig.events if e["kind"] == "flow.request"
               and e["data"].get("nf") == "ids"]
    assert len(diverts) == len(hit) and all(
        d["type"] == "change_default" and d["result"] == "applied" and d["applied"] == 1
        for d in diverts), diverts
    ids_log = log("ids")
    assert len(re.findall(r"^ids-alert: sid=1001 rev=1 action=divert flow=tcp ", ids_log,
                          re.M)) == len(hit), ids_log

    # The IDS inspected the sampled flows' packets and nothing else.
    n_ids = sum(1 for i, f in enumerate(frames) if fkey(f) in sampled
                and not (i >= cut and in_prefix(f, FLOOD)))
    c = counters(ids_log, "ids-stats")
    assert (c["packets"], c["flows_new"], c["alerts"], c["diverted"], c["dropped_rule"],
            c["dropped_flow"], c["flows_full"], c["requests_ok"], c["requests_failed"]) == (
        str(n_ids), str(len(sampled)), str(len(hit)), str(len(hit)), "0", "0", "0",
        str(2 * len(hit)), "0"), c
    assert re.search(rf"^ids-rule: sid=1001 rev=1 action=divert hits={len(hit)}$", ids_log, re.M)
    assert not re.search(r"^ids-(alert|rule): sid=100[23] ", ids_log, re.M), ids_log
    s = counters(log("sampler"), "sampler-stats")
    n_fw = len(frames) - len(scrubbed)
    assert (s["packets"], s["sampled"], s["passed"]) == (
        str(n_fw), str(n_ids), str(n_fw - n_ids)), s
    d = counters(log("detect"), "ddos-stats")
    assert (d["packets"], d["alarms"], d["delivered"]) == (str(n_ids), "1", "1"), d
    scr = counters(log("scrubber"), "scrubber-stats")
    assert (scr["packets"], scr["dropped_prefix"], scr["passed"], scr["requests"],
            scr["applied"]) == (str(len(scrubbed)), str(len(scrubbed)), "0", "1", "1"), scr
    # The firewall lets the whole capture by, and denies what Linux itself
    # sent on the TAP interface before its IPv6 was off (not to the servers).
    stray = port(st, "in")["rx_pkts"] - len(frames)
    assert re.search(rf"^fw-counters: end packets={len(frames) + stray} allowed={len(frames)} "
                     rf"denied={stray}$", log("fw"), re.M), log("fw")
    m = counters(log("sandbox"), "mon-stats")
    assert (m["packets"], m["ipv4"]) == (str(len(to_sandbox)), str(len(to_sandbox))), m
    # ... and they are the alerted flows' packets: 4 of each (the monitor
    # lists each direction, 2 packets each: request and FIN, answer and FIN).
    top = re.findall(r"^mon-top: rank=\d+ packets=(\d+) bytes=\d+ flow=(.*)$", log("sandbox"),
                     re.M)
    per_flow: Counter = Counter()
    for n, flow in top:
        assert n == "2", (n, flow)
        per_flow[key_of_text(flow)] += int(n)
    assert per_flow == dict.fromkeys(hit, 4), (per_flow, hit)

    # sluiced: every drop with its reason, and its counters agree.
    assert st["drops_total"] == len(to_sandbox) + len(scrubbed) + stray, st["drops"]
    assert {k: v for k, v in st["drops"].items() if v} == {
        "graph_drop": len(to_sandbox), "nf_verdict": len(scrubbed) + stray}, st["drops"]
    assert port(st, "out")["tx_pkts"] == len(expected)
    want = {"firewall": (len(frames) + stray, stray), "sampler": (n_fw, 0),
            "ddos-detect": (n_ids, 0), "ids": (n_ids, 0),
            "sandbox": (len(to_sandbox), len(to_sandbox)),
            "scrubber": (len(scrubbed), len(scrubbed))}
    for name, (rx, drops) in want.items():
        sv = service(st, name)
        assert (sv["rx_pkts"], sum(sv["drops"].values())) == (rx, drops), (name, sv)
    edges = {(e["from"], e["to"]): e["pkts"] for e in st["edges"]}
    assert edges.get(("ids", "sandbox"), 0) == len(to_sandbox), edges
    assert edges.get(("firewall", "scrubber"), 0) == len(scrubbed), edges
    assert edges.get(("ddos-detect", "scrubber"), 0) == 0, edges
    assert edges.get(("sampler", "ddos-detect"), 0) == n_ids, edges


def test_anomaly_example_as_is(node, tmp_path):
    """The example file as `sluice up` runs it (the capture made on first
    use and replayed in a loop, the example's own thresholds), only its node
    name and its relative paths changed: the flood alarms once, one scrubber
    is started and drops it, the IDS diverts exploit flows to the sandbox and
    alerts on nothing else, the firewall denies nothing."""
    ensure_trace(EXAMPLE.parent / "traces" / "anomaly.pcap")
    text = EXAMPLE.read_text().replace("name: anomaly,", f"name: {node},")
    for rel in ("traces/anomaly.pcap", "anomaly.rules", "anomaly-fw.yaml"):
        text = text.replace(rel, str(EXAMPLE.parent / rel))
    f = tmp_path / "anomaly.yaml"
    f.write_text(text)
    run_dir = tmp_path / "run"
    console = tmp_path / "up.out"
    with open(console, "wb") as con:
        up = subprocess.Popen([sys.executable, "-m", "sluice.cli", "up", str(f), "--log-dir",
                               str(run_dir)], stdout=con, stderr=subprocess.STDOUT,
                              env={**os.environ, "SLUICE_BUILD_DIR": str(build_dir())})
    try:
        wait_until(lambda: up.poll() is not None or b"orchestrator: " in console.read_bytes(),
                   60, "sluice up to start the node and its orchestrator")
        client = Client(node, load_deployment(f).socket_path(), timeout=5.0)

        def working() -> dict[str, Any] | None:
            st = client.call("stats")
            names = {s["name"] for s in st["services"]}
            if "scrubber" not in names:
                return None
            ok = (service(st, "scrubber")["drops"].get("nf_verdict", 0) > 10000
                  and service(st, "sandbox")["rx_pkts"] > 0)
            return st if ok else None

        st = wait_until(working, 30, "the scrubber and the sandbox at work")
        client.close()
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
        try:
            rc = up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            rc = up.wait(10)
    assert rc == 130, console.read_text()
    assert port(st, "out")["tx_pkts"] > 0
    logs = {p.name: p.read_text(errors="replace") for p in run_dir.glob("*.log")}
    assert_no_sanitizer_report("".join(logs.values()))
    det = "".join(v for k, v in logs.items() if k.startswith("detect"))
    assert re.findall(r"^ddos-alarm: prefix=(\S+) ", det, re.M) == [FLOOD], det
    actions = logs["orchestrator.log"]
    assert actions.count("start: 'scrubber'") == 1, actions
    assert f"start: 'scrubber' (args --prefix {FLOOD}): 0 -> 1 instance(s)" in actions, actions
    ids_log = logs["ids.log"]
    alerts = re.findall(r"^ids-alert: (.*)$", ids_log, re.M)
    assert alerts and all(re.match(r"sid=1001 rev=1 action=divert flow=tcp 10\.77\.7\.\d+:\d+ "
                                   r"> 192\.168\.0\.20:80 ", a) for a in alerts), alerts
    assert counters(ids_log, "ids-stats")["diverted"] == str(len(alerts))
    assert re.search(r"^fw-counters: end packets=\d+ allowed=\d+ denied=0$", logs["fw.log"],
                     re.M), logs["fw.log"]
    scr = counters("".join(v for k, v in logs.items() if k.startswith("scrubber")),
                   "scrubber-stats")
    assert (scr["passed"], scr["requests"], scr["applied"]) == ("0", "1", "1"), scr
