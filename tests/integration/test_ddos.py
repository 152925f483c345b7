"""SDNFV's DDoS scenario end to end: a detector NF sends Message(alarm,
PREFIX), a scrubber NF is started for the prefix, and its one RequestMe
(which sluiced keeps for the flows that start later; no --at, so no
ChangeDefault) pulls the prefix's flows through it; it drops them.

The traffic is ``sluice.runtime.traces.ddos_mix``: normal traffic from 200 sources,
each alone in its /24, to servers in 192.168.0.0/24, and from 30 % of the
capture on an attack from 10.66.6.0/24. The test writes it into the host
side of sluiced's TAP port in two phases, paced so that no frame is lost in
the kernel: phase 1 ends with the attack packet that brings the prefix to
the detector's threshold (the detector's window is longer than the whole
test, so detection is at exactly that packet); phase 2 is sent once the
scrubber's requests are applied. The output port is a capture
(``net_pcap``, read after stop).

It proves: every phase-1 packet (normal and attack) and every normal packet
of phase 2 reaches the output byte for byte, and no phase-2 attack packet
does; sluiced counts exactly the phase-2 attack packets as the scrubber's
``nf_verdict`` drops and on the edge ddos-detect -> scrubber; the
``nf.message`` (alarm) and ``flow.request`` (request_me) events were
published, the request applied to exactly the attack flows live at the
time (and, kept by sluiced, to those that started later: no phase-2
attack packet gets out); the NFs' own counters agree.

``test_ddos_scrubber_by_hand`` plays the orchestrator itself (it starts the
scrubber when it sees the alarm event); ``test_ddos_orchestrated`` leaves
that to ``sluice up``'s orchestrator and a ``policies:`` entry.

The output capture is read as sluiced wrote it: NFs started later (the
scrubber) no longer truncate it (sluiced opens a ``tx_pcap`` through a
private path no NF can open, ``src/mgr/ports.c``).

Linux's own packets on the TAP interface are not IP to 192.168.0.0/24, so
they follow the chain, ``drop``; only the scenario's flows take graph
``ddos`` (a rule). The scrubber must be in a named graph: sluiced refuses
RequestMe on the chain.
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

import yaml
from conftest import build_dir, deployment, port, prog, service, wait_drained, wait_until
from packets import read

from sluice.core.deploy import load_deployment
from sluice.runtime.client import Client
from sluice.runtime.traces import DDOS_ATTACK_PREFIX, ddos_mix, in_prefix

_ifs = itertools.count()
PREFIX = DDOS_ATTACK_PREFIX  # 10.66.6.0/24
THRESHOLD = 200  # attack packets in one window that raise the alarm
BATCH = 64  # frames written before waiting for sluiced to read them

GRAPH = {"name": "ddos",
         "nodes": {"ddos-detect": ["forward", "scrubber"],
                   "scrubber": ["forward"],
                   "forward": ["port:out"]}}
RULE = {"dst": "192.168.0.0/24"}

DETECT_ARGS = ["--window-ms", "600000", "--threshold", str(THRESHOLD),
               "--protect", "192.168.0.0/24", "--stats-ms", "0"]
# No --at: the scrubber's wildcard RequestMe alone must also catch the
# prefix's flows that start after it (sluiced keeps it for new flows).
SCRUBBER_ARGS = ["--stats-ms", "0"]


def flow_key(f: bytes) -> tuple[bytes, bytes, bytes]:
    """proto, src ip:port, dst ip:port of an IPv4 frame (one direction)."""
    return f[23:24], f[26:30] + f[34:36], f[30:34] + f[36:38]


class Scenario:
    """The capture split at the detection point."""

    def __init__(self) -> None:
        frames = ddos_mix()
        attack = [i for i, f in enumerate(frames) if in_prefix(f, PREFIX)]
        assert len(attack) > 2 * THRESHOLD, len(attack)
        # No normal /24 comes near the threshold in what the detector
        # counts (packets to the servers, --protect): the alarm is the
        # attack's.
        per24 = Counter(f[26:29] for f in frames if not in_prefix(f, PREFIX)
                        and in_prefix(f, "192.168.0.0/24", src=False))
        assert max(per24.values()) < THRESHOLD // 4, per24.most_common(3)
        cut = attack[THRESHOLD - 1] + 1  # phase 1 ends with the alarm packet
        self.phase1 = frames[:cut]
        self.phase2 = frames[cut:]
        self.normal2 = [f for f in self.phase2 if not in_prefix(f, PREFIX)]
        self.attack2 = [f for f in self.phase2 if in_prefix(f, PREFIX)]
        # Attack flows live when the scrubber asks (seen in phase 1), and
        # those first seen in phase 2 (the kept wildcard RequestMe gets them).
        live = {flow_key(f) for f in self.phase1 if in_prefix(f, PREFIX)}
        self.live_attack_flows = len(live)
        self.new_attack_flows = len({flow_key(f) for f in self.attack2} - live)
        assert self.new_attack_flows > 0  # the capture exercises both
        self.expected_out = Counter(self.phase1 + self.normal2)


def scenario_nfs(scrubber: bool) -> list[dict[str, Any]]:
    nfs = [{"name": "detect", "program": prog("ddos-detect"), "service": "ddos-detect",
            "args": DETECT_ARGS},
           {"name": "fwd", "program": prog("forward"), "service": "forward"}]
    if scrubber:  # started by a policy, with --prefix VALUE appended
        nfs.append({"name": "scrubber", "program": prog("scrubber"), "service": "scrubber",
                    "replicas": 0, "args": SCRUBBER_ARGS})
    return nfs


class Rig:
    """A running node with a TAP port 'in' and a capture port 'out', an
    event subscription, and a paced writer into the TAP interface."""

    def __init__(self, node: str, ifname: str, out: Path, client: Client, socket_path: Path,
                 run_dir: Path) -> None:
        self.node, self.ifname, self.out, self.client = node, ifname, out, client
        self.run_dir = run_dir
        subprocess.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{ifname}.disable_ipv6=1"],
                       capture_output=True, check=False)
        subprocess.run(["ip", "link", "set", ifname, "up"], check=True, capture_output=True)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self.sock.bind((ifname, 0))
        self.events: list[dict[str, Any]] = []
        self._sub = Client(node, socket_path, timeout=5.0)
        threading.Thread(target=self._listen, daemon=True).start()

    @staticmethod
    def ports(tmp_path: Path) -> tuple[str, Path, list[dict[str, str]]]:
        ifname = f"sld{os.getpid() % 100000}{next(_ifs)}"[:15]
        out = tmp_path / "out.pcap"
        return ifname, out, [{"name": "in", "device": f"net_tap0,iface={ifname}"},
                             {"name": "out", "device": f"net_pcap1,tx_pcap={out}"}]

    def _listen(self) -> None:
        try:
            for ev in self._sub.events():
                self.events.append(ev)
        except Exception:  # noqa: BLE001 (sluiced stopped, or the test closed it)
            pass

    def call(self, method: str, **params: Any) -> Any:
        return self.client.call(method, **params)

    def wait_event(self, pred, timeout: float, what: str) -> dict[str, Any]:
        try:
            return wait_until(lambda: next((e for e in list(self.events) if pred(e)), None),
                              timeout, what, interval=0.02)
        except AssertionError as e:
            raise AssertionError(f"{e}; events: {self.events}; logs in "
                                 f"{self.run_dir}") from None

    def subscribed(self) -> None:
        """Applies graph ddos (again) until the subscription has seen it:
        then events are flowing."""
        for _ in range(40):
            res = self.call("graph.apply", **GRAPH)
            try:
                self.wait_event(lambda e, v=res["version"]: e["kind"] == "graph.applied"
                                and e["data"]["version"] == v, 0.5, "graph.applied")
                return
            except AssertionError:
                continue
        raise AssertionError(f"the event subscription never delivered; logs in {self.run_dir}")

    def send(self, frames: list[bytes]) -> None:
        """Writes frames into the TAP interface, BATCH at a time, each batch
        only once sluiced has read the ones before (a full TAP queue drops
        silently in the kernel)."""
        base = port(self.call("stats"), "in")["rx_pkts"]
        for i in range(0, len(frames), BATCH):
            for f in frames[i:i + BATCH]:
                self.sock.send(f)
            want = base + min(i + BATCH, len(frames))
            wait_until(lambda w=want: port(self.call("stats"), "in")["rx_pkts"] >= w, 20,
                       f"sluiced to read {want - base} of {len(frames)} frames", interval=0.005)

    def wait_out(self, n: int, timeout: float = 30.0) -> dict[str, Any]:
        def done() -> dict[str, Any] | None:
            st = self.call("stats")
            return st if port(st, "out")["tx_pkts"] >= n else None

        try:
            return wait_until(done, timeout, f"{n} packets out")
        except AssertionError as e:
            st = self.call("stats")
            raise AssertionError(f"{e}; out: {port(st, 'out')['tx_pkts']}; stats: {st}; "
                                 f"logs in {self.run_dir}") from None

    def close(self) -> None:
        self.sock.close()
        self._sub.close()

    def results(self) -> tuple[list[bytes], str, str]:
        """After the node stopped: the output capture and the logs of the
        detector and the scrubber."""
        logs = {p.name: p.read_text(errors="replace") for p in self.run_dir.glob("*.log")}
        det = "".join(v for k, v in logs.items() if k.startswith("detect"))
        scr = "".join(v for k, v in logs.items() if k.startswith("scrubber"))
        return read(self.out), det, scr


def counters(log: str, prefix: str) -> dict[str, str]:
    """The last 'PREFIX: k=v ...' line of a log as a dict."""
    lines = [ln for ln in log.splitlines() if ln.startswith(prefix + ":")]
    assert lines, f"no '{prefix}:' line in:\n{log}"
    return dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)


def run_scenario(rig: Rig, sc: Scenario, start_scrubber) -> dict[str, Any]:
    """Phase 1, detection, the scrubber (start_scrubber(prefix)), phase 2;
    returns the stats once every packet is out or dropped."""
    rig.send(sc.phase1)
    st = rig.wait_out(len(sc.phase1))
    # Before detection everything went through; nothing reached a scrubber.
    assert port(st, "out")["tx_pkts"] == len(sc.phase1), port(st, "out")
    alarm = rig.wait_event(lambda e: e["kind"] == "nf.message"
                           and e["data"].get("key") == "alarm", 20, "the alarm (nf.message)")
    assert alarm["data"]["nf"] == "ddos-detect" and alarm["data"]["value"] == PREFIX, alarm
    start_scrubber(alarm["data"]["value"])

    def req(kind: str) -> dict[str, Any]:
        return rig.wait_event(lambda e: e["kind"] == "flow.request"
                              and e["data"].get("nf") == "scrubber"
                              and e["data"].get("type") == kind, 30,
                              f"the scrubber's {kind} (flow.request)")["data"]

    me = req("request_me")
    # Applied to exactly the attack flows live then (each once), and kept
    # (the first wildcard request) for those to come.
    assert {k: v for k, v in me.items() if k != "instance"} == {
        "nf": "scrubber", "type": "request_me", "flow": f"src={PREFIX}",
        "service": "scrubber", "result": "applied", "applied": sc.live_attack_flows,
        "kept": 1}, (me, sc.live_attack_flows)
    assert not [e for e in rig.events if e["kind"] == "flow.request"
                and e["data"].get("type") == "change_default"], rig.events

    rig.send(sc.phase2)
    rig.wait_out(sum(sc.expected_out.values()))
    return wait_drained(rig, timeout=30)  # type: ignore[arg-type] (needs .client)


def check(sc: Scenario, st: dict[str, Any], out: list[bytes], det: str, scr: str) -> None:
    # The output: every phase-1 packet and every normal packet, byte for
    # byte, each once; no phase-2 attack packet.
    got = Counter(out)
    missing = sc.expected_out - got
    extra = got - sc.expected_out
    assert not missing and not extra, (
        f"{sum(missing.values())} expected packet(s) missing, {sum(extra.values())} "
        f"unexpected out (of which {sum(n for f, n in extra.items() if in_prefix(f, PREFIX))} "
        f"from {PREFIX})")

    # sluiced: the scrubber's drops are exactly the attack after detection.
    scrub = service(st, "scrubber")
    assert scrub["drops"]["nf_verdict"] == len(sc.attack2), scrub
    assert sum(scrub["drops"].values()) == len(sc.attack2), scrub
    assert scrub["rx_pkts"] == len(sc.attack2), scrub
    edges = {(e["from"], e["to"]): e["pkts"] for e in st["edges"]}
    assert edges.get(("ddos-detect", "scrubber"), 0) == len(sc.attack2), edges
    assert edges.get(("scrubber", "forward"), 0) == 0, edges
    assert edges.get(("forward", "port:out"), 0) == sum(sc.expected_out.values()), edges
    for name in ("ddos-detect", "forward"):
        assert sum(service(st, name)["drops"].values()) == 0, service(st, name)

    # The NFs' own counters.
    d = counters(det, "ddos-stats")
    n_all = len(sc.phase1) + len(sc.phase2)
    assert (d["packets"], d["alarms"], d["delivered"], d["rejected"], d["untracked"]) == (
        str(n_all), "1", "1", "0", "0"), d
    alarms = [ln for ln in det.splitlines() if ln.startswith("ddos-alarm:")]
    assert alarms == [f"ddos-alarm: prefix={PREFIX} packets={THRESHOLD} window_ms=600000 "
                      f"threshold={THRESHOLD} key=alarm"], alarms
    s = counters(scr, "scrubber-stats")
    assert (s["packets"], s["dropped_prefix"], s["passed"], s["requests"], s["applied"],
            s["rejected"]) == (str(len(sc.attack2)), str(len(sc.attack2)), "0", "1", "1",
                               "0"), s  # one RequestMe, no --at ChangeDefault
    assert re.search(rf"^scrubber-prefix: prefix={re.escape(PREFIX)} packets={len(sc.attack2)} "
                     rf"dropped={len(sc.attack2)} passed=0$", scr, re.M), scr


def test_ddos_scrubber_by_hand(launch, node, tmp_path):
    """The test is the orchestrator: on the alarm event it starts
    sluice-scrubber --prefix VALUE itself."""
    sc = Scenario()
    ifname, out, ports = Rig.ports(tmp_path)
    run = launch(deployment(node, ports=ports, nfs=scenario_nfs(False), chain=["drop"]))
    rig = Rig(node, ifname, out, run.client, run.dep.socket_path(), run.run_dir)
    rig.subscribed()  # also applies graph ddos
    rig.call("rule.add", graph="ddos", **RULE)

    def start(prefix: str) -> None:
        argv = [prog("scrubber"), "--", "--node", node, "--service", "scrubber",
                "--mode", "shared", "--prefix", prefix, *SCRUBBER_ARGS]
        run.nfs.append(run._spawn("scrubber", argv))

    st = run_scenario(rig, sc, start)
    rig.close()
    run.stop()
    check(sc, st, *rig.results())


def test_ddos_orchestrated(node, tmp_path):
    """`sluice up` runs it all: the deployment declares the scrubber with
    replicas: 0 and a message policy that starts it with --prefix {value}
    on the detector's alarm; the test only sends traffic and watches."""
    sc = Scenario()
    ifname, out, ports = Rig.ports(tmp_path)
    dep = deployment(node, ports=ports, chain=["drop"], nfs=scenario_nfs(True) + [
        # Only for the test's barrier below.
        {"name": "probe", "program": prog("forward"), "service": "probe", "replicas": 0}])
    dep["graphs"] = [{**GRAPH, "match": [RULE]}]
    dep["policies"] = [
        {"on": "message", "key": "alarm", "from": "ddos-detect", "action": "start",
         "nf": "scrubber", "replicas": 1, "args": ["--prefix", "{value}"], "once": True},
        {"on": "message", "key": "ready", "from": "control", "action": "start",
         "nf": "probe", "once": True}]
    f = tmp_path / "ddos.yaml"
    f.write_text(yaml.safe_dump(dep, sort_keys=False))
    run_dir = tmp_path / "run"
    console = tmp_path / "up.out"
    with open(console, "wb") as con:
        up = subprocess.Popen([sys.executable, "-m", "sluice.cli", "up", str(f), "--log-dir",
                               str(run_dir)], stdout=con, stderr=subprocess.STDOUT,
                              env={**os.environ, "SLUICE_BUILD_DIR": str(build_dir())})
    rig = None
    try:
        wait_until(lambda: up.poll() is not None or b"orchestrator: " in console.read_bytes(),
                   60, "sluice up to start the node and its orchestrator")
        assert up.poll() is None, console.read_text()
        client = Client(node, load_deployment(f).socket_path(), timeout=5.0)
        rig = Rig(node, ifname, out, client, load_deployment(f).socket_path(), run_dir)
        rig.subscribed()
        # Barrier: the orchestrator's own event subscription is live once a
        # message from control starts the probe NF.
        for _ in range(40):
            rig.call("flow.request", type="message", service="ddos-detect", key="ready",
                     value="1")
            try:
                wait_until(lambda: any(n["service"] == "probe" for n in rig.call("nf.list")),
                           0.5, "probe")
                break
            except AssertionError:
                continue
        else:
            raise AssertionError(f"the orchestrator never reacted to a message; "
                                 f"{console.read_text()}")
        assert not any(n["service"] == "scrubber" for n in rig.call("nf.list"))

        st = run_scenario(rig, sc, lambda prefix: None)  # the policy starts it
        rig.close()
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
        try:
            rc = up.wait(60)
        except subprocess.TimeoutExpired:
            up.kill()
            rc = up.wait(10)
    assert rc == 130, console.read_text()  # stopped by our SIGINT (docs/deployment.md)
    check(sc, st, *rig.results())
    actions = (run_dir / "orchestrator.log").read_text()
    assert f"start: 'scrubber' (args --prefix {PREFIX}): 0 -> 1 instance(s): message " \
           f"alarm={PREFIX} from ddos-detect (policies[0])" in actions, actions
    assert actions.count("start: 'scrubber'") == 1, actions
