"""sluice-ids against real TCP: curl in one network namespace downloads from
an HTTP server (python's http.server) in another, through sluiced's two TAP
ports and the chain ids -> bridge (sluice-forward --bridge). The client's
route advertises an MSS of 100 bytes, so the server sends its response in
segments of at most 100 bytes of payload: a 150-byte signature in the
response is always split over two or more segments, and only the IDS's
per-flow Hyperscan stream can find it.

- alert: a signature in the response, split over segments, is alerted
  (the alert line, the nf.message event with the rule's sid and the flow)
  and the download is whole (sha256);
- drop: a drop rule matching in the middle of a download stops it (curl
  gets part of the file, then nothing: the flow's later packets, the
  server's retransmissions, are dropped too, counted by the IDS and by
  sluiced as nf_verdict drops), while another download goes through;
- divert: a rule on the request diverts the flow (ChangeDefault at ids to
  the monitor service, the OpenPATH IDS -> sandbox path): the download is
  whole and its packets went through the monitor, which no other flow
  visits.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ASAN_BUILD,
    assert_no_sanitizer_report,
    build_dir,
    deployment,
    needs_asan,
    prog,
    service,
    wait_until,
)

from sluice.runtime.client import Client

ADDRS = ("10.65.0.1", "10.65.0.2")  # client, server: our part's subnet
HTTP_PORT = 8080
SIG = ("SLUICE-SPLIT-SIGNATURE:" + "".join(chr(ord("A") + i % 26) for i in range(127)))
DROP_SIG = "DROP-THIS-DOWNLOAD-NOW"
MSS = 100


def sh(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=timeout)


def body(n: int, seed: int, insert: str = "", at: int = 0) -> bytes:
    """n printable bytes (a fixed pseudo-random sequence), with insert at at."""
    x, out = seed, bytearray()
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(ord("a") + (x >> 16) % 26)
    out[at:at + len(insert)] = insert.encode()
    return bytes(out[:n])


RULES = f"""# sluice-ids integration test rules
alert tcp {ADDRS[1]} {HTTP_PORT} -> {ADDRS[0]} any (msg:"split signature"; \
content:"{SIG}"; sid:1001; rev:2;)
drop tcp any {HTTP_PORT} <> any any (msg:"stop download"; content:"{DROP_SIG}"; sid:2002;)
divert tcp {ADDRS[0]} any -> {ADDRS[1]} {HTTP_PORT} (msg:"to the sandbox"; \
content:"GET /sandbox/"; depth:13; divert:monitor; sid:3003;)
"""


@pytest.fixture
def namespaces():
    tag = f"{os.getpid() % 100000}"
    names = [f"sli{tag}a", f"sli{tag}b"]
    for ns in names:
        sh("ip", "netns", "add", ns)
    yield names
    for ns in names:
        sh("ip", "netns", "del", ns, check=False)


class Events:
    """sluiced's events, collected by a thread of their own."""

    def __init__(self, run: Any) -> None:
        self.events: list[dict[str, Any]] = []
        self._sub = Client(run.node, run.dep.socket_path(), timeout=5.0)
        ready = threading.Event()
        threading.Thread(target=self._listen, args=(ready,), daemon=True).start()
        assert ready.wait(10), "the event subscription did not start"

    def _listen(self, ready: threading.Event) -> None:
        try:
            for ev in self._sub.events(on_subscribed=ready.set):
                self.events.append(ev)
        except Exception:  # noqa: BLE001 (sluiced stopped)
            pass

    def wait(self, pred, timeout: float, what: str) -> dict[str, Any]:
        try:
            return wait_until(lambda: next((e for e in list(self.events) if pred(e)), None),
                              timeout, what)
        except AssertionError as e:
            raise AssertionError(f"{e}; events: {self.events}") from None


@pytest.fixture(params=["release", pytest.param("asan", marks=needs_asan)])
def rig(request, launch, node, namespaces, tmp_path):
    """The node (ids -> bridge, a graph that lets ids divert to monitor),
    the namespaces wired to its TAP ports and the HTTP server; every test
    runs on the release build and on the ASan+UBSan one."""
    build = ASAN_BUILD if request.param == "asan" else build_dir()
    ifs = [f"{ns}i" for ns in namespaces]
    rules = tmp_path / "ids.rules"
    rules.write_text(RULES)
    dep = deployment(
        node,
        ports=[{"name": "left", "device": f"net_tap0,iface={ifs[0]}"},
               {"name": "right", "device": f"net_tap1,iface={ifs[1]}"}],
        nfs=[{"name": "ids", "program": prog("ids", build), "service": "ids",
              "args": ["--rules", str(rules), "--timeout", "30"]},
             {"name": "mon", "program": prog("monitor", build), "service": "monitor",
              "args": ["--interval", "0"]},
             {"name": "br", "program": prog("forward", build), "service": "bridge",
              "args": ["--bridge", "left,right"]}],
        chain=["ids", "bridge", "drop"])
    dep["graphs"] = [{"name": "edge", "match": [{}],
                      "nodes": {"ids": ["bridge", "monitor"], "monitor": ["bridge"],
                                "bridge": ["port:left", "port:right"]}}]
    run = launch(dep, build)
    macs = []
    for ns, ifname, addr in zip(namespaces, ifs, ADDRS, strict=True):
        for conf in ("all", "default"):
            sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
               f"net.ipv6.conf.{conf}.disable_ipv6=1")
        sh("ip", "link", "set", ifname, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", ifname)
        sh("ip", "-n", ns, "link", "set", ifname, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        macs.append(json.loads(sh("ip", "-n", ns, "-j", "link", "show", ifname).stdout)[0]
                    ["address"])
    for ns, ifname, addr, mac in zip(namespaces, ifs, reversed(ADDRS), reversed(macs),
                                     strict=True):
        sh("ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", ifname,
           "nud", "permanent")
    # The client advertises a 100-byte MSS: the server's segments are small.
    sh("ip", "-n", namespaces[0], "route", "replace", "10.65.0.0/24", "dev", ifs[0],
       "src", ADDRS[0], "advmss", str(MSS))
    www = tmp_path / "www"
    (www / "sandbox").mkdir(parents=True)
    files = {
        "split.bin": body(20_000, 1, SIG, 5_003),
        "drop.bin": body(400_000, 2, DROP_SIG, 60_000),
        "clean.bin": body(30_000, 3),
        "sandbox/s.bin": body(30_000, 4),
    }
    for name, data in files.items():
        (www / name).write_bytes(data)
    log = (tmp_path / "http.log").open("w")
    server = subprocess.Popen(
        ["ip", "netns", "exec", namespaces[1], sys.executable, "-m", "http.server",
         str(HTTP_PORT), "--bind", ADDRS[1], "--directory", str(www)],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: sh("ip", "netns", "exec", namespaces[1], "ss", "-Hltn",
                              f"sport = :{HTTP_PORT}").stdout.strip(), 10,
                   "the HTTP server to listen")
        yield {"run": run, "ns": namespaces, "files": files, "tmp": tmp_path,
               "events": Events(run)}
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    run.stop()
    for p in [run.sluiced, *run.nfs]:
        assert_no_sanitizer_report(Path(p.log).read_text(), p.label)


def curl(rig: dict[str, Any], path: str, max_time: float = 20) -> tuple[int, bytes]:
    out = rig["tmp"] / ("got-" + path.replace("/", "_"))
    r = sh("ip", "netns", "exec", rig["ns"][0], "curl", "-sS", "--max-time", str(max_time),
           "-o", str(out), f"http://{ADDRS[1]}:{HTTP_PORT}/{path}", check=False,
           timeout=max_time + 10)
    return r.returncode, out.read_bytes() if out.exists() else b""


def ids_log(rig: dict[str, Any]) -> str:
    (ids,) = [p for p in rig["run"].nfs if p.label == "ids"]
    return Path(ids.log).read_text()


def ids_stats(rig: dict[str, Any]) -> dict[str, str]:
    """The IDS's counters, from the line a 'stats' message makes it print."""
    before = ids_log(rig).count("ids-stats: reason=message")
    rig["run"].client.call("flow.request", type="message", service="ids", key="stats",
                           value="")
    wait_until(lambda: ids_log(rig).count("ids-stats: reason=message") > before, 10,
               "the IDS's counters line")
    line = [x for x in ids_log(rig).splitlines() if x.startswith("ids-stats: reason=message")][-1]
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_split_signature_in_a_response_is_alerted(rig):
    rc, got = curl(rig, "split.bin")
    assert rc == 0, rc
    assert sha(got) == sha(rig["files"]["split.bin"])
    flow = f"flow=tcp {ADDRS[1]}:{HTTP_PORT} > {ADDRS[0]}:"
    ev = rig["events"].wait(lambda e: e["kind"] == "nf.message"
                            and e["data"].get("key") == "alert", 10, "the alert (nf.message)")
    value = ev["data"]["value"]
    assert value.startswith(f"sid=1001 rev=2 action=alert {flow}"), value
    assert value.endswith(" msg=split signature"), value
    log = ids_log(rig)
    assert f"ids-alert: sid=1001 rev=2 action=alert {flow}" in log, log
    st = ids_stats(rig)
    assert st["alerts"] == "1" and st["dropped_rule"] == "0" and st["hs_errors"] == "0", st
    # The client's MSS held: the 20,000 bytes came in at least 200
    # segments (with 1,448-byte segments the whole exchange is under 40
    # packets), so the 150-byte signature was split over two or more.
    assert int(st["packets"]) >= len(rig["files"]["split.bin"]) // MSS, st
    assert int(st["scanned_bytes"]) >= len(rig["files"]["split.bin"]), st
    # The clean download raises nothing more.
    rc, got = curl(rig, "clean.bin")
    assert rc == 0 and sha(got) == sha(rig["files"]["clean.bin"])
    assert ids_stats(rig)["alerts"] == "1"


def test_drop_rule_stops_a_download(rig):
    rc, got = curl(rig, "drop.bin", max_time=6)
    assert rc != 0, "the download should have been stopped"
    size = len(rig["files"]["drop.bin"])
    # curl got the bytes before the signature's segment (and perhaps a few
    # segments the server had sent before it), never the whole file.
    assert 30_000 < len(got) < 60_000 + len(DROP_SIG), len(got)
    assert got == rig["files"]["drop.bin"][:len(got)]
    assert len(got) < size
    log = ids_log(rig)
    assert "ids-alert: sid=2002 rev=0 action=drop flow=tcp " in log, log
    st = ids_stats(rig)
    assert st["dropped_rule"] == "1", st
    assert int(st["dropped_flow"]) > 0, st  # the retransmissions, the FIN
    stats = rig["run"].client.call("stats")
    assert service(stats, "ids")["drops"]["nf_verdict"] == 1 + int(st["dropped_flow"]), stats
    # Another flow is not affected.
    rc, got = curl(rig, "clean.bin")
    assert rc == 0 and sha(got) == sha(rig["files"]["clean.bin"])


def test_divert_sends_the_flow_to_the_monitor(rig):
    rc, got = curl(rig, "clean.bin")
    assert rc == 0 and sha(got) == sha(rig["files"]["clean.bin"])
    stats = rig["run"].client.call("stats")
    assert service(stats, "monitor")["rx_pkts"] == 0, stats
    rc, got = curl(rig, "sandbox/s.bin")
    assert rc == 0, rc
    assert sha(got) == sha(rig["files"]["sandbox/s.bin"])
    ev = rig["events"].wait(lambda e: e["kind"] == "flow.request"
                            and e["data"].get("type") == "change_default", 10,
                            "the ChangeDefault (flow.request)")
    assert ev["data"]["result"] == "applied" and ev["data"]["to"] == "monitor", ev
    st = ids_stats(rig)
    assert st["diverted"] == "1" and st["divert_failed"] == "0", st
    assert "ids-alert: sid=3003 rev=0 action=divert flow=tcp " in ids_log(rig)
    stats = rig["run"].client.call("stats")
    mon = service(stats, "monitor")
    # At least the 30,000 bytes of the response went through the monitor
    # (in 100-byte segments), and all it got it passed on.
    assert mon["rx_pkts"] >= 300 and mon["rx_pkts"] == mon["tx_pkts"], mon
    assert sum(service(stats, "ids")["drops"].values()) == 0, stats


def test_reload_and_bad_rule_files(rig):
    """SIGHUP with a bad file keeps the rules (saying which line is wrong);
    with a good one the new rules take over. A bad file at start is
    refused: exit status 1 and the line."""
    run, rules = rig["run"], rig["tmp"] / "ids.rules"
    (ids,) = [p for p in run.nfs if p.label == "ids"]
    rules.write_text(RULES + 'alert tcp any any -> any any (content:"x"; depth:0; sid:9;)\n')
    run.kill(ids, signal.SIGHUP)
    line = len(RULES.splitlines()) + 1
    failed = (f"sluice-ids: reload failed, keeping the 3 current rules: {rules}:{line}: "
              f"option 'depth': 0 is shorter than the content (1 bytes)\n")
    wait_until(lambda: failed in ids_log(rig), 10, "the failed reload")
    rc, got = curl(rig, "split.bin")  # the old rules still alert
    assert rc == 0 and sha(got) == sha(rig["files"]["split.bin"])
    wait_until(lambda: "ids-alert: sid=1001 " in ids_log(rig), 10, "the alert of the old rules")

    clean = rig["files"]["clean.bin"]
    sig = clean[10_000:10_150].decode()  # split over segments too
    rules.write_text(f'alert tcp any {HTTP_PORT} -> any any (msg:"new"; content:"{sig}"; '
                     f"sid:4004;)\n")
    run.kill(ids, signal.SIGHUP)
    wait_until(lambda: f"sluice-ids: reloaded 1 rules from {rules} " in ids_log(rig), 10,
               "the reload")
    rc, got = curl(rig, "clean.bin")
    assert rc == 0 and sha(got) == sha(clean)
    wait_until(lambda: "ids-alert: sid=4004 rev=0 action=alert " in ids_log(rig), 10,
               "the alert of the new rules")
    st = ids_stats(rig)
    assert (st["rules"], st["reloads"], st["reloads_failed"]) == ("1", "1", "1"), st

    bad = rig["tmp"] / "bad.rules"
    bad.write_text("# one good rule, then a typo\n" + RULES.splitlines()[1] + "\n"
                   'alrt tcp any any -> any any (content:"x"; sid:5;)\n')
    r = sh(prog("ids", Path(run.build_dir)), "--", "--node", run.node, "-s", "ids2",
           "--rules", str(bad), check=False)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert (f"sluice-ids: {bad}:3: unknown action 'alrt' (alert, drop or divert)\n"
            in r.stderr), r.stderr
