"""The `sluice` command line, and `sluice up` against a fake sluiced.

The fake sluiced and fake NFs below are small Python scripts placed where
the launcher looks for the real ones (SLUICE_BUILD_DIR). They speak the
control-socket protocol; a fake NF "registers" by calling fake.register, so
these tests need neither DPDK nor root nor hugepages.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_client import FakeSluiced, default_handler
from typer.testing import CliRunner

from sluice.cli import app
from sluice.core.deploy import Deployment
from sluice.runtime.launch import Launcher, LaunchError, summary_text, totals

runner = CliRunner()

FAKE_SLUICED = r'''
import json, os, signal, socket, sys, threading, time
argv = sys.argv[1:]
opts = argv[argv.index("--") + 1:]
def opt(name, default=None):
    return opts[opts.index(name) + 1] if name in opts else default
name, path = opt("--name"), opt("--socket")
with open(os.environ["FAKE_DIR"] + "/sluiced.argv", "w") as f:
    json.dump({"argv": argv, "cwd": os.getcwd()}, f)
if os.environ.get("FAKE_SLUICED_FAIL"):
    print("sluiced: no free hugepages (HugePages_Free is 0): reserve some", file=sys.stderr)
    sys.exit(1)
if os.environ.get("FAKE_SLUICED_DIE_AFTER"):
    signal.alarm(int(os.environ["FAKE_SLUICED_DIE_AFTER"]))
print(f"sluiced[{name}]: ready", flush=True)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(16)
nfs, chain, rx = [], None, 0
def stats():
    ports = [{"id": 0, "name": "in", "rx_pkts": rx, "rx_bytes": rx * 64, "tx_pkts": 0,
              "tx_bytes": 0, "rx_stalls": 0, "drops": {"ring_full": 0}},
             {"id": 1, "name": "out", "rx_pkts": 0, "rx_bytes": 0, "tx_pkts": rx - 10,
              "tx_bytes": 0, "rx_stalls": 0, "drops": {}}]
    nfl = [{"instance": i, "service": n["service"], "state": "running", "rx_pkts": rx,
            "rx_bytes": 0, "tx_pkts": rx, "tx_bytes": 0, "drops": {"nf_verdict": 0},
            "rx_ring": {"count": 3, "size": 4096}, "cycles": 0, "cycles_per_pkt": 51.5}
           for i, n in enumerate(nfs)]
    svc = [{"id": 0, "name": "forward", "instances": [0], "rx_pkts": rx, "tx_pkts": rx,
            "drops": {"nf_verdict": 10}}]
    return {"tsc_hz": 1, "ports": ports, "nfs": nfl, "services": svc, "drops_total": 10}
def handle(req):
    global chain, rx
    m, p = req.get("method"), req.get("params") or {}
    if m == "status":
        return {"node": name, "pid": os.getpid(), "rx_enabled": chain is not None}
    if m == "fake.register":
        nfs.append(p)
        return {"instance": len(nfs) - 1}
    if m == "nf.list":
        return [{"instance": i, "service": n["service"], "pid": n["pid"], "state": "running"}
                for i, n in enumerate(nfs)]
    if m in ("chain.set", "graph.apply", "rule.add", "flow.delete"):
        with open(os.environ["FAKE_DIR"] + "/calls.jsonl", "a") as cf:
            cf.write(json.dumps([m, p]) + "\n")
    if m in ("rx.pause", "rx.resume"):
        return {"rx_enabled": m == "rx.resume"}
    if m == "chain.set":
        if "nosuch" in p["hops"]:
            raise ValueError("unknown service 'nosuch'")
        chain = p["hops"]
        return {"version": 1}
    if m == "graph.apply":
        if "nosuch" in p["nodes"]:
            raise ValueError(f"graph '{p['name']}': node 'nosuch': no service 'nosuch'")
        res = {"name": p["name"], "id": 1, "version": 1}
        if "ids" in p["nodes"]:  # as sluiced: a service no instance runs
            res["note"] = ("service 'ids' has no running instance: packets sent to it are "
                           "dropped (no_instance) until one registers; see nf.list")
        return res
    if m == "rule.add":
        for i, r in enumerate(p["rules"]):
            if r.get("in_port") == "nosuch":
                raise ValueError(f"rules[{i}]: param 'in_port': no port 'nosuch'")
        return {"added": len(p["rules"]), "first_id": 5, "last_id": 4 + len(p["rules"])}
    if m == "flow.delete":
        if os.environ.get("FAKE_NO_FLOW_DELETE"):
            raise ValueError("the flow table is off (--flow-lookup off)")
        return {"deleted": 3}
    if m == "chain.get":
        return {"version": 1, "hops": chain or []}
    if m == "stats":
        if chain is not None:
            rx += 1000
        return stats()
    if m == "shutdown":
        for n in nfs:
            try:
                os.kill(n["pid"], signal.SIGTERM)
            except ProcessLookupError:
                pass
        return "bye"
    raise KeyError(m)
lock = threading.Lock()
def serve(conn):
    f = conn.makefile("rwb")
    for line in f:
        req = json.loads(line)
        with lock:
            try:
                res = handle(req)
                out = {"jsonrpc": "2.0", "id": req["id"],
                       "result": {} if res == "bye" else res}
            except ValueError as e:
                out = {"jsonrpc": "2.0", "id": req["id"],
                       "error": {"code": -32000, "message": str(e)}}
            except KeyError as e:
                out = {"jsonrpc": "2.0", "id": req["id"],
                       "error": {"code": -32601, "message": str(e)}}
        f.write(json.dumps(out).encode() + b"\n")
        f.flush()
        if res == "bye":
            with open(os.environ["FAKE_DIR"] + "/chain.json", "w") as cf:
                json.dump(chain, cf)
            os.unlink(path)
            os._exit(0)
    conn.close()
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
'''

FAKE_NF = r'''
import json, os, signal, socket, sys, time
argv = sys.argv[1:]
opts = argv[argv.index("--") + 1:]
service = opts[opts.index("--service") + 1]
with open(os.environ["FAKE_DIR"] + f"/nf-{service}-{os.getpid()}.argv", "w") as f:
    json.dump({"argv": argv, "cwd": os.getcwd()}, f)
if os.environ.get("FAKE_NF_FAIL") == service:
    print(f"{service}: cannot read --rules nosuch.yaml: No such file or directory",
          file=sys.stderr)
    sys.exit(3)
if os.environ.get("FAKE_NF_SILENT") != service:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["FAKE_SOCKET"])
    req = {"jsonrpc": "2.0", "id": 1, "method": "fake.register",
           "params": {"pid": os.getpid(), "service": service}}
    s.sendall(json.dumps(req).encode() + b"\n")
    s.recv(4096)
    s.close()
if os.environ.get("FAKE_NF_STUBBORN") == service:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"{service}: running", flush=True)
while True:
    time.sleep(0.05)
'''


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fake build folder (sluiced + sluice-forward + sluice-monitor), a
    short folder for the socket, and the environment that ties them."""
    d = Path(tempfile.mkdtemp(prefix="slf", dir="/tmp"))
    build = d / "build"
    for rel, text in (("src/mgr/sluiced", FAKE_SLUICED), ("nfs/forward/sluice-forward", FAKE_NF),
                      ("nfs/monitor/sluice-monitor", FAKE_NF)):
        p = build / rel
        p.parent.mkdir(parents=True)
        p.write_text(f"#!{sys.executable}\n" + text)
        p.chmod(0o755)
    monkeypatch.setenv("SLUICE_BUILD_DIR", str(build))
    monkeypatch.setenv("FAKE_DIR", str(d))
    monkeypatch.setenv("FAKE_SOCKET", str(d / "s.sock"))
    for k in ("FAKE_SLUICED_FAIL", "FAKE_NF_FAIL", "FAKE_NF_SILENT", "FAKE_NF_STUBBORN",
              "FAKE_SLUICED_DIE_AFTER", "FAKE_NO_FLOW_DELETE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.chdir(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


CPU = min(os.sched_getaffinity(0))  # a CPU the tests may use


def node_name() -> str:
    return f"pytest{os.getpid()}"


def deployment(d: Path, **node: Any) -> Path:
    text = f"""\
    node: {{name: {node_name()}, cores: [{CPU}], socket: s.sock}}
    ports:
      - {{name: in, device: "net_null0"}}
      - {{name: out, device: "net_null1"}}
    nfs:
      - {{name: mon, program: sluice-monitor, service: monitor, args: [--top, 5]}}
      - {{name: fwd, program: sluice-forward, service: forward, replicas: 2}}
    chain: [monitor, forward, "port:out"]
    """
    p = d / "dep.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def no_processes_left(d: Path) -> None:
    for argv in d.glob("nf-*.argv"):
        pid = int(argv.stem.rsplit("-", 1)[1])
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", f"NF {pid} still runs"


# -- sluice up ----------------------------------------------------------------------

def test_up_runs_and_stops_everything(fake: Path) -> None:
    log_dir = fake / "run"
    r = runner.invoke(app, ["up", str(deployment(fake)), "--duration", "1.5",
                            "--log-dir", str(log_dir)])
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert f"logs: {log_dir}/" in out
    assert "packets in: " in out and "dropped: 10" in out and "dropped nf_verdict: 10" in out
    # sluiced was started without a chain, with the core layout and ports
    sl = json.loads((fake / "sluiced.argv").read_text())
    assert sl["argv"] == [f"--lcores=0@({CPU}),1@({CPU})", "--no-pci",
                          f"--file-prefix=sluice_{node_name()}", "--",
                          "--name", node_name(), "--mode", "shared",
                          "--port", "in=net_null0", "--port", "out=net_null1",
                          "--socket", str(fake / "s.sock")]
    assert sl["cwd"] == str(fake)
    # every NF got its command line; the chain was set after they registered
    nf_argv = sorted(json.loads(p.read_text())["argv"] for p in fake.glob("nf-*.argv"))
    assert nf_argv == [
        ["--", "--node", node_name(), "--service", "forward", "--mode", "shared"],
        ["--", "--node", node_name(), "--service", "forward", "--mode", "shared"],
        ["--", "--node", node_name(), "--service", "monitor", "--mode", "shared",
         "--top", "5"]]
    assert json.loads((fake / "chain.json").read_text()) == ["monitor", "forward", "port:out"]
    assert sorted(p.name for p in log_dir.iterdir()) == [
        "commands.txt", "fwd.1.log", "fwd.2.log", "mon.log", "sluiced.log"]
    assert "ready" in (log_dir / "sluiced.log").read_text()
    no_processes_left(fake)


def test_up_reports_sluiced_failing(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SLUICED_FAIL", "1")
    r = runner.invoke(app, ["up", str(deployment(fake)), "--log-dir", str(fake / "run")])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"sluiced exited with status 1; last lines of "
                               f"{fake}/run/sluiced.log:\n")
    assert "    sluiced: no free hugepages (HugePages_Free is 0): reserve some" in r.stderr
    assert "Traceback" not in r.output


def test_up_reports_an_nf_that_exits(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NF_FAIL", "monitor")
    r = runner.invoke(app, ["up", str(deployment(fake)), "--log-dir", str(fake / "run")])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"NF 'mon' (sluice-monitor) exited with status 3 while "
                               f"starting; last lines of {fake}/run/mon.log:\n")
    assert "    monitor: cannot read --rules nosuch.yaml: No such file or directory" in r.stderr
    no_processes_left(fake)


def test_launcher_times_out_on_an_nf_that_never_registers(fake: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("FAKE_NF_SILENT", "monitor")
    dep = Deployment.from_dict(
        {"node": {"name": node_name(), "cores": [CPU], "socket": "s.sock"},
         "ports": [{"name": "out", "device": "net_null0"}],
         "nfs": [{"name": "mon", "program": "sluice-monitor", "service": "monitor"}],
         "chain": ["monitor", "port:out"]}, base_dir=fake)
    run = Launcher(dep, log_dir=fake / "run", register_timeout=0.5)
    with pytest.raises(LaunchError) as e:
        run.start()
    assert str(e.value).startswith("NF 'mon' did not register with sluiced within 0.5 s; "
                                   f"last lines of {fake}/run/mon.log:\n")
    assert run.sluiced is not None and run.sluiced.exited() is not None
    no_processes_left(fake)


def test_launcher_as_context_manager_and_stubborn_nf(fake: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NF_STUBBORN", "forward")
    dep = Deployment.from_dict(
        {"node": {"name": node_name(), "cores": [CPU], "socket": "s.sock"},
         "ports": [{"name": "out", "device": "net_null0"}],
         "nfs": [{"name": "fwd", "program": "sluice-forward", "service": "forward"}],
         "chain": ["forward", "port:out"]}, base_dir=fake)
    said: list[str] = []
    t0 = time.monotonic()
    with Launcher(dep, log_dir=fake / "run", stop_timeout=0.3, term_timeout=0.3,
                  say=said.append) as run:
        assert run.client.call("chain.get")["hops"] == ["forward", "port:out"]
        assert run.client.call("status")["rx_enabled"] is True
    assert time.monotonic() - t0 < 10
    assert any("sending SIGKILL" in m for m in said)
    assert all(p.exited() is not None for p in run.processes())
    no_processes_left(fake)


def test_launcher_refuses_a_chain_sluiced_rejects(fake: Path) -> None:
    # a chain sluiced refuses (the fake knows no service 'nosuch'): reported, all stopped
    dep = Deployment.from_dict(
        {"node": {"name": node_name(), "cores": [CPU], "socket": "s.sock"},
         "ports": [{"name": "out", "device": "net_null0"}],
         "nfs": [{"name": "x", "program": "sluice-forward", "service": "nosuch"}],
         "chain": ["nosuch", "port:out"]}, base_dir=fake, source="t.yaml")
    run = Launcher(dep, log_dir=fake / "run")
    with pytest.raises(LaunchError) as e:
        run.start()
    assert str(e.value) == "t.yaml: chain: sluiced refused it: unknown service 'nosuch'"
    assert all(p.exited() is not None for p in run.processes())


GRAPH_DEP = {
    "ports": [{"name": "in", "device": "net_null0"}, {"name": "out", "device": "net_null1"}],
    "nfs": [{"name": "mon", "program": "sluice-monitor", "service": "monitor"},
            {"name": "fwd", "program": "sluice-forward", "service": "forward"}],
    "chain": ["forward", "port:out"],
    "graphs": [{"name": "watch", "nodes": {"monitor": ["forward", "drop"],
                                           "forward": ["port:out"]},
                "match": [{"priority": 10, "proto": "udp", "dport": 53, "in_port": "in"}]},
               {"name": "direct", "entry": "forward", "nodes": {"forward": ["port:out"]}}],
    "rules": [{"graph": "direct", "proto": "tcp", "dst": "10.0.0.0/8"}],
}


def graph_deployment(fake: Path, **changes: Any) -> Deployment:
    return Deployment.from_dict(
        {"node": {"name": node_name(), "cores": [CPU], "socket": "s.sock"},
         **GRAPH_DEP, **changes}, base_dir=fake, source="g.yaml")


def calls(fake: Path) -> list[list[Any]]:
    return [json.loads(line) for line in (fake / "calls.jsonl").read_text().splitlines()]


def test_launcher_applies_graphs_and_rules_after_the_chain(fake: Path) -> None:
    said: list[str] = []
    with Launcher(graph_deployment(fake), log_dir=fake / "run", say=said.append):
        pass
    assert calls(fake) == [
        ["chain.set", {"hops": ["forward", "port:out"]}],
        ["graph.apply", {"name": "watch", "entry": "monitor",
                         "nodes": {"monitor": ["forward", "drop"], "forward": ["port:out"]}}],
        ["graph.apply", {"name": "direct", "entry": "forward",
                         "nodes": {"forward": ["port:out"]}}],
        ["rule.add", {"rules": [
            {"graph": "watch", "priority": 10, "proto": "udp", "dport": 53, "in_port": "in"},
            {"graph": "direct", "priority": 0, "proto": "tcp", "dst": "10.0.0.0/8"}]}],
        ["flow.delete", {"all": True}]]
    i = said.index("chain set: forward -> port:out")
    assert said[i + 1:i + 6] == [
        "graph watch applied (version 1): 2 node(s), entry monitor",
        "graph direct applied (version 1): 1 node(s), entry forward",
        "rule 5 added: priority 10, udp dport 53 in_port in -> graph watch",
        "rule 6 added: priority 0, tcp dst 10.0.0.0/8 -> graph direct",
        "3 flow(s) seen before the rules were added will be classified again"]
    no_processes_left(fake)


def test_launcher_says_a_graph_names_a_service_no_nf_runs(fake: Path) -> None:
    said: list[str] = []
    dep = graph_deployment(fake, graphs=[{"name": "web", "nodes": {
        "forward": ["ids", "port:out"], "ids": ["port:out"]}}], rules=[], nfs=[
        *GRAPH_DEP["nfs"],
        {"name": "ids", "program": "sluice-forward", "service": "ids", "replicas": 0}])
    with Launcher(dep, log_dir=fake / "run", say=said.append):
        pass
    i = said.index("graph web applied (version 1): 2 node(s), entry forward")
    assert said[i + 1] == ("graph web: note: service 'ids' has no running instance: packets "
                           "sent to it are dropped (no_instance) until one registers; see "
                           "`sluice nf list`")
    no_processes_left(fake)


def test_launcher_applies_a_policys_compiled_graph_flattened(fake: Path) -> None:
    said: list[str] = []
    policy = {"name": "pol", "match": {"proto": "udp"}, "nfs": ["monitor", "forward"]}
    with Launcher(graph_deployment(fake, graphs=[], rules=[], graph_policies=[policy]),
                  log_dir=fake / "run", say=said.append):
        pass
    assert calls(fake)[:3] == [
        ["chain.set", {"hops": ["forward", "port:out"]}],
        ["graph.apply", {"name": "pol", "entry": "monitor",
                         "nodes": {"monitor": ["forward"], "forward": ["port:out"]}}],
        ["rule.add", {"rules": [{"graph": "pol", "priority": 0, "proto": "udp"}]}]]
    assert "graph pol applied (version 1): 1 node(s), entry parallel-1" in said
    no_processes_left(fake)


def test_launcher_without_graphs_sends_only_the_chain(fake: Path) -> None:
    with Launcher(graph_deployment(fake, graphs=[], rules=[]), log_dir=fake / "run"):
        pass
    assert calls(fake) == [["chain.set", {"hops": ["forward", "port:out"]}]]


def test_launcher_graphs_without_rules_and_no_flow_table(fake: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    said: list[str] = []
    with Launcher(graph_deployment(fake, rules=[], graphs=GRAPH_DEP["graphs"][1:]),
                  log_dir=fake / "run", say=said.append):
        pass
    assert [c[0] for c in calls(fake)] == ["chain.set", "graph.apply"]
    (fake / "calls.jsonl").unlink()
    monkeypatch.setenv("FAKE_NO_FLOW_DELETE", "1")
    with Launcher(graph_deployment(fake), log_dir=fake / "run", say=said.append):
        pass
    assert [c[0] for c in calls(fake)][-1] == "flow.delete"
    assert said[-1] == ("flows seen before the rules were added keep the chain (flow.delete: "
                        "the flow table is off (--flow-lookup off))")


def test_launcher_reports_a_graph_or_rule_sluiced_refuses(fake: Path) -> None:
    bad = [{"name": "bad", "nodes": {"forward": ["nosuch"], "nosuch": ["drop"]}}]
    dep = graph_deployment(fake, rules=[], graphs=bad, nfs=GRAPH_DEP["nfs"] + [
        {"name": "x", "program": "sluice-forward", "service": "nosuch"}])
    run = Launcher(dep, log_dir=fake / "run")
    with pytest.raises(LaunchError) as e:
        run.start()
    assert str(e.value) == ("g.yaml: graphs[0]: graph 'bad': sluiced refused it: graph 'bad': "
                            "node 'nosuch': no service 'nosuch'")
    assert all(p.exited() is not None for p in run.processes())
    ports = [{"name": "in", "device": "net_null0"}, {"name": "nosuch", "device": "net_null1"}]
    dep = graph_deployment(fake, ports=ports, chain=["forward", "drop"], graphs=[],
                           rules=[{"graph": "default", "in_port": "nosuch"}])
    run = Launcher(dep, log_dir=fake / "run")
    with pytest.raises(LaunchError) as e:
        run.start()
    assert str(e.value) == ("g.yaml: rule for graph 'default' (in_port nosuch): sluiced "
                            "refused it: param 'in_port': no port 'nosuch'")
    assert all(p.exited() is not None for p in run.processes())


def test_up_with_graphs(fake: Path) -> None:
    p = deployment(fake)
    p.write_text(p.read_text() + textwrap.dedent("""        graphs:
          - name: web
            nodes: {forward: ["port:out"]}
            match: [{proto: tcp, dport: 80}]
        """))
    r = runner.invoke(app, ["check", str(p)])
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("chain monitor -> forward -> port:out, graph(s) web, 1 rule(s)\n")
    r = runner.invoke(app, ["up", str(p), "--duration", "0.5", "--log-dir", str(fake / "run")])
    assert r.exit_code == 0, r.output
    assert "graph web applied (version 1): 1 node(s), entry forward" in r.stdout
    assert [c[0] for c in calls(fake)] == ["chain.set", "graph.apply", "rule.add",
                                           "flow.delete"]
    no_processes_left(fake)


def test_up_refuses_a_second_instance(fake: Path) -> None:
    srv = FakeSluiced(fake / "s.sock")
    try:
        r = runner.invoke(app, ["up", str(deployment(fake))])
    finally:
        srv.close()
    assert (r.exit_code, r.stdout) == (1, "")  # no banner, no logs: this node's are not ours
    assert r.stderr == (f"node '{node_name()}' is already running: sluiced pid 1 (socket "
                        f"{fake}/s.sock), started by no `sluice up` that still runs: stop it "
                        f"with `kill 1`, or give this deployment another node.name\n")


def test_up_refuses_a_node_whose_sluiced_is_starting(fake: Path) -> None:
    # no socket yet, but a process with the node's DPDK file prefix
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)",
                              f"--file-prefix=sluice_{node_name()}"])
    try:
        r = runner.invoke(app, ["up", str(deployment(fake)), "--log-dir", str(fake / "run")])
    finally:
        other.kill()
        other.wait()
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == (f"node '{node_name()}' is already running: sluiced pid {other.pid} "
                        f"(DPDK file prefix sluice_{node_name()}), started by no `sluice up` "
                        f"that still runs: stop it with `kill {other.pid}`, or give this "
                        f"deployment another node.name\n")
    assert not (fake / "run").exists()


def test_up_without_a_built_sluiced(fake: Path) -> None:
    (fake / "build" / "src" / "mgr" / "sluiced").unlink()
    r = runner.invoke(app, ["up", str(deployment(fake))])
    assert r.exit_code == 1
    assert r.stderr == (f"sluiced not found at {fake}/build/src/mgr/sluiced: build it with "
                        f"`make build` (or set SLUICE_BUILD_DIR to the build folder)\n")


def test_up_with_a_bad_file(fake: Path) -> None:
    p = deployment(fake)
    p.write_text(p.read_text().replace("sluice-forward", "sluice-frward"))
    r = runner.invoke(app, ["up", "dep.yaml"])
    assert r.exit_code == 1
    assert r.stderr == ("dep.yaml: nfs[1].program: 'sluice-frward' not found (looked in "
                        "build/nfs/*/ and PATH); did you mean 'sluice-forward'?\n")
    assert not (fake / "sluiced.argv").exists()


def test_poll_mode_core_layout(fake: Path) -> None:
    dep = Deployment.from_dict(
        {"node": {"name": "p", "mode": "poll", "cores": [0, 1], "eal_args": ["--in-memory"],
                  "ring_size": 1024, "handoff": "mgr", "sluiced_args": ["--burst", 64]},
         "ports": [{"name": "nic", "device": "0000:03:00.0"}],
         "nfs": [{"name": "f", "program": "sluice-forward", "service": "forward", "core": 1,
                  "mode": "shared", "eal_args": ["--log-level=8"]}],
         "chain": ["forward", "port:nic"]}, base_dir=fake, check_env=False)
    run = Launcher(dep)
    assert run.sluiced_argv()[1:] == [
        "-l", "0,1", "--file-prefix=sluice_p", "--in-memory", "--", "--name", "p", "--mode",
        "poll", "--port", "nic=0000:03:00.0", "--handoff", "mgr", "--ring-size", "1024",
        "--burst", "64"]
    assert run.nf_argv(dep.nfs[0], Path("/x/sluice-forward")) == [
        "/x/sluice-forward", "--log-level=8", "--", "--node", "p", "--service", "forward",
        "--mode", "shared", "--core", "1"]
    assert run.run_dir == Path("/tmp/sluice-p")


# -- the other commands against a fake control socket ------------------------------------

STATS = {
    "tsc_hz": 2, "drops_total": 7,
    "ports": [{"id": 0, "name": "in", "rx_pkts": 100, "tx_pkts": 0, "rx_stalls": 1,
               "drops": {"no_instance": 2}},
              {"id": 1, "name": "out", "rx_pkts": 0, "tx_pkts": 90, "drops": {}}],
    "nfs": [{"instance": 0, "service": "fw", "state": "running", "rx_pkts": 98, "tx_pkts": 93,
             "drops": {"nf_verdict": 5}, "rx_ring": {"count": 1, "size": 4096},
             "cycles_per_pkt": 80.0}],
    "services": [{"id": 0, "name": "fw", "instances": [0], "drops": {"nf_verdict": 5}}],
}


def handler(req: Any) -> Any:
    if isinstance(req, dict) and req.get("method") == "stats":
        return {"jsonrpc": "2.0", "id": req["id"], "result": STATS}
    if isinstance(req, dict) and req.get("method") == "nf.list":
        return {"jsonrpc": "2.0", "id": req["id"], "result": [
            {"instance": 0, "service": "fw", "service_id": 0, "prog": "sluice-firewall",
             "pid": 42, "state": "running", "mode": "shared",
             "rx_ring": {"count": 0, "size": 4096}, "tx_ring": {"count": 0, "size": 4096}}]}
    if isinstance(req, dict) and req.get("method") == "chain.get":
        return {"jsonrpc": "2.0", "id": req["id"], "result": {"version": 3, "hops": ["fw",
                                                                                    "port:out"]}}
    return default_handler(req)


@pytest.fixture
def sock() -> Iterator[tuple[FakeSluiced, str]]:
    d = Path(tempfile.mkdtemp(prefix="slc", dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=handler)
    yield srv, str(d / "n.sock")
    srv.close()
    shutil.rmtree(d, ignore_errors=True)


def test_status(sock: tuple[FakeSluiced, str]) -> None:
    r = runner.invoke(app, ["status", "--socket", sock[1]])
    assert r.exit_code == 0
    assert r.stdout == "node:          t\npid:           1\n"
    r = runner.invoke(app, ["status", "--socket", sock[1], "--json"])
    assert json.loads(r.stdout) == {"node": "t", "pid": 1}


def test_stats(sock: tuple[FakeSluiced, str]) -> None:
    r = runner.invoke(app, ["stats", "--socket", sock[1], "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == STATS
    r = runner.invoke(app, ["stats", "--socket", sock[1]], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    assert "no_instance=2" in r.stdout and "nf_verdict=5" in r.stdout and "1/4096" in r.stdout
    assert "packets in: 100   out: 90   dropped: 7   in flight: 3" in r.stdout
    # into a pipe with no $COLUMNS: every column (up_console), none left out at 80
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "sluice", "stats", "--socket", sock[1]],
                       env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    head = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("NF "))
    assert head.split() == ["NF", "in", "out", "dropped", "ring", "cyc/pkt", "drops", "by",
                            "reason"]
    assert "not shown in" not in p.stdout


def test_totals() -> None:
    t = totals(STATS)
    assert (t.rx, t.tx, t.dropped, t.drops) == (100, 90, 7, {"no_instance": 2, "nf_verdict": 5})
    assert summary_text(STATS).splitlines()[1:] == ["  dropped nf_verdict: 5",
                                                    "  dropped no_instance: 2"]


def test_chain_and_nf_list(sock: tuple[FakeSluiced, str]) -> None:
    srv, path = sock
    r = runner.invoke(app, ["chain", "get", "--socket", path])
    assert r.stdout == "version 3: fw -> port:out\n"
    r = runner.invoke(app, ["chain", "set", "fw,mon", "port:out", "--socket", path])
    assert r.exit_code == 0 and r.stdout == "version 2: fw -> mon -> port:out\n"
    assert srv.requests[-1]["params"] == {"hops": ["fw", "mon", "port:out"]}
    r = runner.invoke(app, ["chain", "set", "nosuch", "--socket", path])
    assert r.exit_code == 1
    assert r.stderr == "sluice chain set: unknown service 'nosuch'\n"
    r = runner.invoke(app, ["chain", "set", "nosuch", "--socket", path, "--json"])
    assert r.stderr == "chain.set: unknown service 'nosuch' (JSON-RPC error -32000)\n"
    r = runner.invoke(app, ["chain", "set", "fw,,x", "--socket", path])
    assert r.exit_code == 1 and r.stderr.startswith("sluice chain set: empty hop in ")
    r = runner.invoke(app, ["nf", "list", "--socket", path], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "sluice-firewall" in r.stdout and "fw (0)" in r.stdout


def test_commands_without_sluiced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no node runs (test_cli_walkthrough.py: with others running, and without --node)
    import sluice.cli.common
    import sluice.runtime.client

    for mod in (sluice.cli.common, sluice.runtime.client):
        monkeypatch.setattr(mod, "SOCKET_DIR", tmp_path)
    for args in (["status"], ["stats"], ["chain", "get"], ["nf", "list"]):
        r = runner.invoke(app, [*args, "--node", "nosuchnode"])
        assert r.exit_code == 1
        assert r.stderr == (f"cannot connect to {tmp_path}/nosuchnode.sock: no sluiced is "
                            f"running for node 'nosuchnode', nor for any other node: start one "
                            f"with `sluice up DEPLOYMENT.yaml`\n")


# -- check, trace, place -------------------------------------------------------------------

def test_check(fake: Path) -> None:
    r = runner.invoke(app, ["check", str(deployment(fake))])
    assert r.exit_code == 0
    assert r.stdout == (f"{fake}/dep.yaml: ok: node {node_name()} (shared mode, CPUs {CPU}), "
                        f"2 port(s), 2 NF(s) (3 instance(s)), chain monitor -> forward -> "
                        f"port:out\n")
    r = runner.invoke(app, ["check", "nosuch.yaml"])
    assert r.exit_code == 1 and r.stderr == "nosuch.yaml: no such file\n"


def test_trace_gen(tmp_path: Path) -> None:
    out = tmp_path / "t.pcap"
    r = runner.invoke(app, ["trace", "gen", str(out), "--packets", "100", "--flows", "10"])
    assert r.exit_code == 0
    assert r.stdout.startswith(f"{out}: 100 packets, 10 flows, HTTP-like mix, ")
    r = runner.invoke(app, ["trace", "gen", str(out), "--size", "64", "--flows", "3"])
    assert r.stdout == f"{out}: 4096 packets, 3 flows, 64-byte UDP, 262144 bytes of frames " \
                       f"(seed 1)\n"
    r = runner.invoke(app, ["trace", "gen", str(out), "--size", "20"])
    assert r.exit_code == 1 and r.stderr == ("sluice trace gen: --size must be between 60 and "
                                             "1514 bytes, got 20\n")
    (tmp_path / "f").write_text("")  # a file where its folder would be
    r = runner.invoke(app, ["trace", "gen", str(tmp_path / "f" / "t.pcap")])
    assert r.exit_code == 1 and r.stderr == (
        f"sluice trace gen: {tmp_path}/f/t.pcap: cannot make its folder {tmp_path}/f: File "
        f"exists: give a path in a folder you can write\n")
    r = runner.invoke(app, ["trace", "gen", str(tmp_path / "new" / "t.pcap")])
    assert r.exit_code == 0 and (tmp_path / "new" / "t.pcap").is_file()


def test_place_is_registered() -> None:
    # the placement engine's own command, not the stub that says it is not
    # available (setup.sh installs its dependencies, so it imports)
    from sluice.placement.cli import place

    assert [c.callback for c in app.registered_commands if c.name == "place"] == [place]
    r = runner.invoke(app, ["--help"])
    assert [ln.split()[2:6] for ln in r.stdout.splitlines() if ln.split()[1:2] == ["place"]] == [
        ["Place", "NF", "instances", "on"]]
    r = runner.invoke(app, ["place", "--help"])
    assert r.exit_code == 0
    assert r.stdout.split("\n")[1].strip() == "Usage: sluice place [OPTIONS] {topology} {flows}"


def test_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("node: {name: x, mode: fast}\nports: []\nchain: [drop]\n")
    r = subprocess.run([sys.executable, "-m", "sluice.cli", "check", str(bad)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr == f"{bad}: node.mode: 'fast' is not one of: shared, poll\n"
    assert r.stdout == ""


def test_python_dash_m_sluice_is_the_command() -> None:
    r = subprocess.run([sys.executable, "-m", "sluice", "--version"],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout.split() == ["sluice", "0.1.0"], r.stdout
