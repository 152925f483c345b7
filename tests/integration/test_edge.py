"""examples/edge.yaml, OpenPATH's edge gateway, on a real sluiced with real
TCP between two network namespaces (docs/edge.md).

The test runs the example's own file (its node name and TAP interface names
changed to the test's, its NFs from the build under test) and its own
namespace script, examples/edge-netns.sh (with the test's names through the
environment). Then:

- curl in the LAN downloads 4 MiB from the web server in the WAN, checked
  by sha256, through firewall -> ids -> shaper -> nat and back;
- dumpcap on the WAN interface: every IPv4 address on the WAN wire is the
  NAT's or a WAN host's, never a LAN address;
- iperf3 from the LAN stays within the shaper's upload rate (20 Mbit/s);
- a request for /etc/passwd, and a download of the EICAR test file, are
  diverted by the IDS to the sandbox service (a monitor whose edge is
  drop): the request never reaches the server, the download never
  completes; sluiced published both alerts (nf.message) and applied both
  ChangeDefaults to the sandbox (flow.request events);
- a connection from the WAN to the NAT's port forward is refused by the
  stateful firewall (its default deny counts it), and the same from the
  admin address the firewall allows works; one straight to the LAN's
  address is dropped by the NAT (no mapping);
- the counters of sluiced and of every NF agree.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
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
from netns import Bg

from sluice.core.deploy import Deployment
from sluice.runtime.client import Client

EXAMPLE = ROOT / "examples" / "edge.yaml"
SCRIPT = ROOT / "examples" / "edge-netns.sh"
LAN_NET = ipaddress.ip_network("10.69.1.0/24")
NAT_ADDR, WAN_ADDR, ADMIN = "10.69.9.1", "10.69.2.1", "10.69.2.100"
EICAR = rb"X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*"
UPLOAD = json.loads((ROOT / "examples" / "edge" / "shaper.json").read_text())["classes"][0]


def sh(*args: str, check: bool = True, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=timeout,
                          **kw)


def ns_run(ns: str, *args: str, **kw) -> subprocess.CompletedProcess:
    return sh("ip", "netns", "exec", ns, *args, **kw)


class Names:
    def __init__(self, tmp: Path) -> None:
        tag = f"{os.getpid() % 100000}"
        self.lan_ns, self.wan_ns = f"sle{tag}l", f"sle{tag}w"
        self.lan_if, self.wan_if = f"sle{tag}li", f"sle{tag}wi"
        self.www, self.run = tmp / "www", tmp / "netns"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLE_LAN_IF": self.lan_if, "SLE_WAN_IF": self.wan_if,
                "SLE_LAN_NS": self.lan_ns, "SLE_WAN_NS": self.wan_ns,
                "SLE_WWW": str(self.www), "SLE_RUN": str(self.run)}


@pytest.fixture
def names(tmp_path: Path) -> Iterator[Names]:
    n = Names(tmp_path)
    yield n
    sh("sh", str(SCRIPT), "down", check=False, env=n.env())


@pytest.fixture
def bg() -> Iterator[Bg]:
    b = Bg()
    yield b
    b.stop_all()


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

    def wait_count(self, pred: Any, n: int, what: str) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            got = [e for e in list(self.events) if pred(e)]
            return got if len(got) >= n else None

        try:
            return wait_until(found, 10, what)
        except AssertionError as e:
            raise AssertionError(f"{e}; events: {self.events}") from None


def example(node: str, n: Names, build: Path) -> Deployment:
    """The example's file, with the test's node and interface names."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["node"]["name"] = node
    ifs = {"lan": n.lan_if, "wan": n.wan_if}
    for p in data["ports"]:
        p["device"] = re.sub(r"iface=[^,]*", f"iface={ifs[p['name']]}", p["device"])
    return Deployment.from_dict(data, source=str(EXAMPLE), base_dir=EXAMPLE.parent,
                                build_dir=build)


def _listening(ns: str, addr: str) -> bool:
    return addr in ns_run(ns, "ss", "-Hltn", check=False).stdout


def _curl(ns: str, url: str, out: Path, timeout: float, *extra: str) -> subprocess.CompletedProcess:
    return ns_run(ns, "curl", "-sS", "--max-time", str(timeout), "-o", str(out), *extra, url,
                  check=False)


def _counters(log: str, prefix: str) -> dict[str, str]:
    m = re.findall(rf"^{prefix}: reason=exit .*$", log, re.M)
    assert m, f"no {prefix} line at exit in:\n{log[-3000:]}"
    return dict(kv.split("=", 1) for kv in m[-1].split()[1:] if "=" in kv)


def _check_capture(pcap: Path) -> int:
    """Every IPv4 address on the WAN wire (IP headers and those an ICMP
    error carries) is the NAT's or a WAN host's; returns the frames from
    the NAT's address."""
    r = sh("tshark", "-r", str(pcap), "-T", "fields", "-E", "separator=;", "-e", "frame.number",
           "-e", "ip.src", "-e", "ip.dst")
    from_nat = 0
    for line in r.stdout.splitlines():
        num, srcs, dsts = line.split(";")
        if not srcs:
            continue  # not IPv4 (Linux's own before IPv6 was off): no address in it
        addrs = {ipaddress.ip_address(a) for a in (srcs + "," + dsts).split(",")}
        assert not [a for a in addrs if a in LAN_NET], f"frame {num}: {line}"
        assert {str(a) for a in addrs} <= {NAT_ADDR, WAN_ADDR, ADMIN}, f"frame {num}: {line}"
        from_nat += srcs.split(",")[0] == NAT_ADDR
    return from_nat


@pytest.mark.parametrize("asan", [False, pytest.param(True, marks=needs_asan)],
                         ids=["release", "asan"])
def test_edge_gateway(launch, node, names, bg, tmp_path, asan):
    build = ASAN_BUILD if asan else build_dir()
    names.www.mkdir()
    blob = os.urandom(4 << 20)
    (names.www / "blob").write_bytes(blob)
    (names.www / "eicar.com").write_bytes(EICAR)
    (names.www / "etc").mkdir()
    (names.www / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")

    run = launch(example(node, names, build), build)
    nfs = {p.label: p for p in run.nfs}
    events = Events(run)
    r = sh("sh", str(SCRIPT), "up", env=names.env(), check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    lan, wan = names.lan_ns, names.wan_ns

    pcap, cap_log = tmp_path / "wan.pcap", tmp_path / "dumpcap.log"
    cap = bg.start(wan, "dumpcap", "-i", names.wan_if, "-s", "128", "-P", "-w", str(pcap),
                   log=cap_log)
    wait_until(lambda: "Capturing on" in cap_log.read_text(), 15, "dumpcap to start")
    lan_www = tmp_path / "lan-www"
    lan_www.mkdir()
    (lan_www / "hello").write_text("admin page\n")
    py = "/usr/bin/python3"
    bg.start(lan, py, "-m", "http.server", "8022", "--bind", "10.69.1.2", "--directory",
             str(lan_www), log=tmp_path / "http-lan.log")
    bg.start(wan, "iperf3", "-s", "-B", WAN_ADDR, "-p", "5201", "-1", log=tmp_path / "iperf.log")
    for ns, addr in ((lan, "10.69.1.2:8022"), (wan, f"{WAN_ADDR}:5201")):
        wait_until(lambda ns=ns, addr=addr: _listening(ns, addr), 15, f"a server on {addr}")

    # The download, whole.
    r = _curl(lan, f"http://{WAN_ADDR}/blob", tmp_path / "blob", 20, "-w", "%{speed_download}")
    assert r.returncode == 0, r.stderr
    figures = {"download_bytes_per_s": float(r.stdout)}
    assert hashlib.sha256((tmp_path / "blob").read_bytes()).digest() == \
        hashlib.sha256(blob).digest()

    # Upload through the shaper: within 20 Mbit/s (and some of it passes).
    r = ns_run(lan, "iperf3", "-c", WAN_ADDR, "-p", "5201", "-t", "3", "-J", check=False,
               timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    rx = json.loads(r.stdout)["end"]["sum_received"]
    # the meter's burst on top of the rate over the run
    assert UPLOAD["name"] == "upload"
    bound = UPLOAD["cir"] * 1.02 + UPLOAD["cbs"] * 8 / rx["seconds"]
    assert 1_000_000 < rx["bits_per_second"] <= bound, rx
    figures["iperf3_upload_bits_per_s"] = rx["bits_per_second"]

    # Diverted to the sandbox: the request never reaches the server ...
    r = _curl(lan, f"http://{WAN_ADDR}/etc/passwd", tmp_path / "passwd", 3)
    assert r.returncode == 28, (r.returncode, r.stderr)  # curl: timed out
    # ... and the EICAR file in the response never reaches the client.
    r = _curl(lan, f"http://{WAN_ADDR}/eicar.com", tmp_path / "eicar", 3)
    assert r.returncode == 28, (r.returncode, r.stderr)
    assert not (tmp_path / "eicar").exists() or EICAR not in (tmp_path / "eicar").read_bytes()

    # Each divert is an alert (nf.message) and a ChangeDefault to the
    # sandbox that sluiced applied (flow.request).
    alerts = events.wait_count(lambda e: e["kind"] == "nf.message"
                               and e["data"].get("key") == "alert", 2, "the IDS's 2 alerts")
    assert sorted(e["data"]["value"].split()[0] for e in alerts) == ["sid=1001", "sid=1002"]
    cds = events.wait_count(lambda e: e["kind"] == "flow.request"
                            and e["data"].get("type") == "change_default", 2,
                            "the IDS's 2 ChangeDefaults")
    assert [(e["data"]["result"], e["data"]["to"]) for e in cds] == [("applied", "sandbox")] * 2

    # From the WAN: the port forward is refused by the firewall, but for
    # the admin's address.
    r = _curl(wan, f"http://{NAT_ADDR}:8022/hello", tmp_path / "in", 3)
    assert r.returncode == 28, (r.returncode, r.stderr)
    r = _curl(wan, f"http://{NAT_ADDR}:8022/hello", tmp_path / "admin", 10, "--interface", ADMIN)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "admin").read_text() == "admin page\n"

    # dumpcap writes what it has read; its last frames (the admin's
    # connection) are waited for in the file before it is stopped.
    wait_until(lambda: _syns(pcap, ADMIN) == 1, 15, "the admin's SYN in the capture",
               interval=0.5)
    bg.stop(cap, signal.SIGINT)
    # Straight to the LAN's address (a WAN host that routes it to the
    # gateway; after the capture, whose frames the WAN host sent would
    # carry it): the NAT has no mapping for it and drops it.
    lan_mac = json.loads(sh("ip", "-n", lan, "-j", "link", "show", names.lan_if).stdout)[0][
        "address"]
    sh("ip", "-n", wan, "route", "add", str(LAN_NET), "dev", names.wan_if)
    sh("ip", "-n", wan, "neigh", "replace", "10.69.1.2", "lladdr", lan_mac, "dev",
       names.wan_if, "nud", "permanent")
    r = _curl(wan, "http://10.69.1.2:8022/hello", tmp_path / "direct", 2)
    assert r.returncode == 28, (r.returncode, r.stderr)
    http_log = (names.run / "http.log").read_text()
    assert "GET /blob" in http_log and "GET /eicar.com" in http_log, http_log
    assert "passwd" not in http_log, http_log
    st = run.stop()
    assert st is not None
    (tmp_path / "stats.json").write_text(json.dumps(st, indent=1))
    assert _check_capture(pcap) > 1000
    refused_syns = _syns(pcap, WAN_ADDR)  # the WAN's SYN to the forward, retransmissions too
    assert refused_syns >= 2 and _syns(pcap, ADMIN) == 1, refused_syns

    logs = {k: p.log.read_text() for k, p in nfs.items()}
    assert_no_sanitizer_report("\n".join(logs.values()) + run.sluiced.log.read_text())
    _check_counters(st, logs, refused_syns)
    print("edge figures:", json.dumps(figures))


def _syns(pcap: Path, src: str) -> int:
    """SYNs from src to the port forward on the WAN wire."""
    r = sh("tshark", "-r", str(pcap), "-Y", f"ip.src == {src} && tcp.dstport == 8022 && "
           "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields", "-e", "frame.number",
           check=False)  # a file dumpcap still writes may end in a cut frame
    return len(r.stdout.split())


def _check_counters(st: dict, logs: dict[str, str], refused_syns: int) -> None:
    ids = _counters(logs["ids"], "ids-stats")
    assert (ids["alerts"], ids["diverted"], ids["divert_failed"]) == ("2", "2", "0"), ids
    assert ids["requests_failed"] == "0", ids
    assert "sid=1001 rev=1 action=divert" in logs["ids"], logs["ids"]
    assert "sid=1002 rev=1 action=divert" in logs["ids"], logs["ids"]
    assert service(st, "ids")["drops"].get("nf_verdict", 0) == 0

    # The sandbox saw what the IDS sent it, and sluiced dropped all of it on
    # its edge (graph_drop), none elsewhere.
    mon = _counters(logs["sandbox"], "mon-stats")
    sandbox = service(st, "sandbox")
    edges = {(e["from"], e["to"]): e["pkts"] for e in st["edges"]}
    assert int(mon["packets"]) == sandbox["rx_pkts"] == edges[("ids", "sandbox")] > 2, \
        (mon, sandbox, edges)
    assert sandbox["drops"].get("graph_drop", 0) == sandbox["rx_pkts"], sandbox
    assert int(mon["flows"]) >= 2, mon  # both directions of each diverted connection

    # The firewall refused the WAN's connection (its default deny), SYN
    # retransmissions included, and sluiced counts those as its drops.
    fw_log = logs["fw"]
    default = re.findall(r"^fw-counter: rule=default name=- action=deny packets=(\d+)", fw_log,
                         re.M)
    assert default and int(default[-1]) >= refused_syns, (refused_syns, fw_log[-2000:])
    end = re.findall(r"^fw-counters: end packets=(\d+) allowed=(\d+) denied=(\d+)", fw_log, re.M)
    assert end, fw_log[-2000:]
    fw_pkts, _, fw_denied = map(int, end[-1])
    fw = service(st, "firewall")
    assert fw["drops"].get("nf_verdict", 0) == fw_denied >= int(default[-1]), (fw, end)
    assert fw["rx_pkts"] == fw_pkts, (fw, end)
    admin = re.findall(r"^fw-counter: rule=2 name=admin-in action=allow packets=(\d+)", fw_log,
                       re.M)
    assert admin and int(admin[-1]) >= 1, fw_log[-2000:]

    # The shaper policed the upload (red drops) and said so as sluiced did.
    sh_ = _counters(logs["shaper"], "shaper-stats")
    shaper = service(st, "shaper")
    assert int(sh_["dropped"]) > 0, sh_
    assert shaper["drops"].get("nf_verdict", 0) == int(sh_["dropped"]), (shaper, sh_)
    assert shaper["rx_pkts"] == int(sh_["packets"]), (shaper, sh_)

    # The NAT translated both ways and its drops are sluiced's.
    nat = _counters(logs["nat"], "nat-stats")
    nat_svc = service(st, "nat")
    assert int(nat["out"]) > 1000 and int(nat["in"]) > 1000, nat
    assert int(nat["drop_no_mapping"]) >= 1, nat  # the WAN's SYN straight to 10.69.1.2
    assert nat_svc["drops"].get("nf_verdict", 0) == int(nat["dropped"]), (nat_svc, nat)
    assert nat_svc["rx_pkts"] == int(nat["packets"]), (nat_svc, nat)
    # Every packet read from a port left by a port or was dropped with a reason.
    rx = sum(p["rx_pkts"] for p in st["ports"])
    assert rx == sum(p["tx_pkts"] for p in st["ports"]) + st["drops_total"], st["ports"]
    # What left by the ports is what the graphs' last hops sent there.
    assert port(st, "wan")["tx_pkts"] == edges[("nat", "port:wan")], (port(st, "wan"), edges)
    assert port(st, "lan")["tx_pkts"] == edges[("firewall", "port:lan")], (port(st, "lan"), edges)
    for s in st["services"]:
        assert s["drops"].get("policy_violation", 0) == 0, s
