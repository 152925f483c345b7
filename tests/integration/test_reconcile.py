"""The orchestrator on a real sluiced: a killed NF is restarted and traffic
recovers, `sluice apply` changes a running node (and a bad file changes
nothing), an occupancy policy scales out under a stopped NF and in again,
a message policy starts an NF with the message's value in its arguments."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, build_dir, deployment, port, prog, service, wait_drained, wait_until
from packets import mixed, write

from sluice.core.deploy import load_deployment
from sluice.runtime.launch import Launcher
from sluice.runtime.orchestrator import Orchestrator, OrchestratorError, request

REPLAY = 1000
SLUICE = str(Path(sys.executable).parent / "sluice")


@pytest.fixture
def orchestrate(tmp_path: Path, node: str) -> Iterator[Callable[..., tuple[Launcher,
                                                                          Orchestrator]]]:
    """orchestrate(dict) writes the deployment to d.yaml, starts it and an
    orchestrator (with its socket); both are stopped after the test."""
    runs: list[tuple[Launcher, Orchestrator | None]] = []

    def start(dep: dict[str, Any]) -> tuple[Launcher, Orchestrator]:
        f = tmp_path / "d.yaml"
        f.write_text(yaml.safe_dump(dep, sort_keys=False))
        run = Launcher(load_deployment(f, build_dir=build_dir()), log_dir=tmp_path / "run",
                       build_dir=build_dir())
        runs.append((run, None))
        run.start()
        orch = Orchestrator(run, tick_s=0.05)
        runs[-1] = (run, orch)
        orch.start()
        return run, orch

    yield start
    for run, orch in runs:
        if orch is not None:
            orch.stop()
        run.stop()


def _source(tmp_path: Path) -> str:
    src = write(tmp_path / "in.pcap", mixed(REPLAY, flows=64, seed=5))
    return f"net_pcap0,rx_pcap={src},infinite_rx=1"


def _out(run: Launcher) -> int:
    return port(run.client.call("stats"), "out")["tx_pkts"]


def _actions(orch: Orchestrator) -> list[str]:
    return [f"{a['action']}: {a['text']}" for a in list(orch.actions)]


def _wait_subscribed(run: Launcher) -> None:
    """Until the orchestrator's status (on its socket) says its event subscription
    is live: message policies and clean-stop detection work from then on."""
    wait_until(lambda: request(run.dep, "status")["subscribed"], 10,
               "the orchestrator's event subscription")


def test_killed_nf_is_restarted_and_traffic_recovers(orchestrate, node, tmp_path):
    run, orch = orchestrate({
        **deployment(node,
                     ports=[{"name": "in", "device": _source(tmp_path)},
                            {"name": "out", "device": "net_null0,no-rx=1"}],
                     nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
                     chain=["fwd", "port:out"]),
        "restart": {"backoff_ms": 300, "max_backoff_ms": 2000}})
    wait_until(lambda: _out(run) > 50_000, 20, "traffic through fwd")
    (victim,) = run.client.call("nf.list")
    os.kill(victim["pid"], signal.SIGKILL)
    wait_until(lambda: any(a.startswith("crashed: fwd was killed by SIGKILL") for a in
                           _actions(orch)), 10, "the orchestrator to see the crash")
    (crash,) = [a for a in _actions(orch) if a.startswith("crashed: ")]
    # How long it ran is the test's timing; the rest is exact.
    assert re.fullmatch(r"crashed: fwd was killed by SIGKILL after \d+\.\d s; restarting in "
                        r"0\.3 s \(failure 1 in a row\); see "
                        + re.escape(str(tmp_path / "run" / "fwd.log")), crash), crash

    def restarted() -> dict[str, Any] | None:
        nfs = run.client.call("nf.list")
        return nfs[0] if len(nfs) == 1 and nfs[0]["pid"] != victim["pid"] else None

    new = wait_until(restarted, 20, "a new fwd instance registered")
    assert new["service"] == "fwd" and new["state"] == "running"
    starts = [a for a in _actions(orch) if a.startswith("start: fwd ")]
    assert starts == [f"start: fwd (pid {new['pid']}): restart 1 after it was killed by "
                      f"SIGKILL"]
    before = _out(run)
    wait_until(lambda: _out(run) > before + 50_000, 20, "traffic through the new instance")
    st = orch.status()["instances"]
    assert [(i["label"], i["state"], i["restarts"], i["pid"]) for i in st] == \
        [("fwd", "running", 1, new["pid"])]
    # every packet is accounted for: out, or lost with the dead NF, or dropped at
    # the ingress while no instance was there
    run.client.call("rx.pause")
    stats = wait_drained(run)
    assert port(stats, "in")["rx_pkts"] == port(stats, "out")["tx_pkts"] + stats["drops_total"]
    drops = {k: v for p in stats["ports"] + stats["services"] for k, v in p["drops"].items()
             if v}
    assert set(drops) <= {"nf_lost", "no_instance"}, drops
    log = (tmp_path / "run" / "fwd.log").read_text()
    assert log.count("$ ") == 2  # the first command line and the restart's, one file


def test_apply_adds_a_replica_and_changes_a_graph(orchestrate, node, tmp_path):
    dep = {**deployment(node,
                        ports=[{"name": "in", "device": _source(tmp_path)},
                               {"name": "out", "device": "net_null0,no-rx=1"}],
                        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"},
                             {"name": "mon", "program": prog("monitor"), "service": "mon",
                              "args": ["--interval", "0"]}],
                        chain=["fwd", "port:out"]),
           "graphs": [{"name": "udp", "nodes": {"fwd": ["port:out"]},
                       "match": [{"priority": 5, "proto": "udp"}]}]}
    run, orch = orchestrate(dep)
    wait_until(lambda: _out(run) > 20_000, 20, "traffic")
    new = {**dep, "nfs": [{**dep["nfs"][0], "replicas": 2}, dep["nfs"][1]],
           "graphs": [{"name": "udp", "nodes": {"mon": ["fwd"], "fwd": ["port:out"]},
                       "match": [{"priority": 5, "proto": "udp"}]}]}
    f2 = tmp_path / "d2.yaml"
    f2.write_text(yaml.safe_dump(new, sort_keys=False))
    # through the CLI, as a user would
    env = {**os.environ, "SLUICE_BUILD_DIR": str(build_dir())}
    r = subprocess.run([SLUICE, "apply", str(f2)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    g = run.client.call("graph.get", name="udp")
    assert r.stdout.splitlines() == ["replicas: NF 'fwd': 1 -> 2",
                                     f"graph: udp changed (version {g['version']})"]
    assert g["entry"] == "mon" and g["nodes"]["mon"] == ["fwd"]
    svc = next(s for s in run.client.call("service.list") if s["name"] == "fwd")
    assert len(svc["instances"]) == 2
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd", "fwd.2", "mon"]
    # the same file again: nothing to do
    assert request(orch.dep, "apply", path=str(f2)) == {
        "applied": [f"apply: nothing to change: {f2} is what runs"]}
    # UDP flows seen from now on go through mon
    run.client.call("flow.delete", all=True)
    mon0 = service(run.client.call("stats"), "mon")["rx_pkts"]
    wait_until(lambda: service(run.client.call("stats"), "mon")["rx_pkts"] > mon0 + 1000, 20,
               "UDP packets through mon")


def test_apply_refuses_bad_and_unchangeable_files_and_keeps_running(orchestrate, node,
                                                                   tmp_path):
    dep = deployment(node,
                     ports=[{"name": "in", "device": _source(tmp_path)},
                            {"name": "out", "device": "net_null0,no-rx=1"}],
                     nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
                     chain=["fwd", "port:out"])
    run, orch = orchestrate(dep)
    wait_until(lambda: _out(run) > 20_000, 20, "traffic")
    pid = run.client.call("nf.list")[0]["pid"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**dep, "chain": ["fwdd", "port:out"]}, sort_keys=False))
    r = subprocess.run([SLUICE, "apply", str(bad)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"{bad}: chain[0]: 'fwdd' is not the service of any NF in nfs (services: fwd), nor "
        f"port:NAME nor drop: add an NF with service 'fwdd' or fix the name; did you mean "
        f"'fwd'?"]
    # the orchestrator checks it too (a file changed after sluice apply read it)
    with pytest.raises(OrchestratorError) as e:
        request(orch.dep, "apply", path=str(bad))
    assert str(e.value).startswith(f"{bad}: chain[0]: 'fwdd' is not the service")
    ring = tmp_path / "ring.yaml"
    ring.write_text(yaml.safe_dump({**dep, "node": {**dep["node"], "ring_size": 512}},
                                   sort_keys=False))
    with pytest.raises(OrchestratorError) as e:
        request(orch.dep, "apply", path=str(ring))
    assert str(e.value) == (f"{ring}: node.ring_size: unset -> 512 cannot change while the "
                            f"node runs: stop `sluice up` and start it again with the new "
                            f"file (nothing was applied)")
    before = _out(run)
    wait_until(lambda: _out(run) > before + 20_000, 20, "traffic after the refusals")
    assert run.client.call("nf.list")[0]["pid"] == pid
    assert run.client.call("chain.get")["hops"] == ["fwd", "port:out"]
    assert [a for a in _actions(orch) if a.startswith("refused: ")] == [
        f"refused: {line}" for line in
        [f"{bad}: chain[0]: 'fwdd' is not the service of any NF in nfs (services: fwd), "
         f"nor port:NAME nor drop: add an NF with service 'fwdd' or fix the name; did you "
         f"mean 'fwd'?",
         f"{ring}: node.ring_size: unset -> 512 cannot change while the node runs: stop "
         f"`sluice up` and start it again with the new file (nothing was applied)"]]


def test_occupancy_policy_scales_out_under_a_stopped_nf_and_in_again(orchestrate, node,
                                                                    tmp_path):
    run, orch = orchestrate({
        **deployment(node,
                     ports=[{"name": "in", "device": _source(tmp_path)},
                            {"name": "out", "device": "net_null0,no-rx=1"}],
                     nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
                     chain=["fwd", "port:out"], ring_size=256,
                     # the NF is frozen on purpose: not a hang to kill
                     sluiced_args=["--nf-hang-ms", "0"]),
        "policies": [{"on": "occupancy", "service": "fwd", "above": 0.75, "below": 0.10,
                      "for_ms": 600, "min": 1, "max": 3}]})
    wait_until(lambda: _out(run) > 20_000, 20, "traffic")
    (first,) = run.client.call("nf.list")
    os.kill(first["pid"], signal.SIGSTOP)  # a stalled NF: its rx ring fills up
    try:
        wait_until(lambda: len(run.client.call("nf.list")) == 2, 30, "a second fwd instance")
        (second,) = [n for n in run.client.call("nf.list") if n["pid"] != first["pid"]]
        out = [a for a in _actions(orch) if a.startswith("scale-out: ")]
        assert len(out) == 1 and out[0].startswith("scale-out: 'fwd' 1 -> 2: service fwd rx "
                                                   "ring occupancy ")
        assert out[0].endswith(" above 0.75 for 600 ms (policies[0])")
        # The flows stay pinned to the stalled instance and the new one idles:
        # the mean (about 0.5) is between the bounds, so no third instance.
        time.sleep(2.0)
        assert len(run.client.call("nf.list")) == 2
    finally:
        os.kill(first["pid"], signal.SIGCONT)
    run.client.call("rx.pause")  # no more traffic: the rings drain
    wait_until(lambda: len(run.client.call("nf.list")) == 1, 30, "scale in to one instance")
    acts = _actions(orch)
    scale_in = [a for a in acts if a.startswith("scale-in: ")]
    assert len(scale_in) == 1 and scale_in[0].startswith("scale-in: 'fwd' 2 -> 1: service fwd "
                                                         "rx ring occupancy 0.00 below 0.1 for "
                                                         "600 ms (policies[0])")
    # the newest instance went (nf.stop: it drained), the first one stays
    assert run.client.call("nf.list")[0]["pid"] == first["pid"]
    (stopped,) = [a for a in acts if a.startswith("stop: ")]
    assert stopped == (f"stop: fwd.2 (pid {second['pid']}, nf.stop instance "
                       f"{second['instance']}): 'fwd' wants 1 instance(s)"), acts
    stats = wait_drained(run)
    drops = {k: v for p in stats["ports"] + stats["services"] for k, v in p["drops"].items()
             if v}
    assert set(drops) <= {"ring_full"}, drops  # what the stalled ring could not take
    assert not [a for a in acts if a.startswith("crashed")]


def test_message_policy_starts_an_nf_with_the_value_in_its_args(orchestrate, node, tmp_path):
    run, orch = orchestrate({
        **deployment(node,
                     ports=[{"name": "in", "device": _source(tmp_path)},
                            {"name": "out", "device": "net_null0,no-rx=1"}],
                     nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"},
                          {"name": "mon", "program": prog("monitor"), "service": "mon",
                           "replicas": 0, "args": ["--top", "3"]}],
                     chain=["fwd", "port:out"]),
        "policies": [{"on": "message", "key": "watch", "from": "control", "action": "start",
                      "nf": "mon", "args": ["--interval", "{value}"], "once": True},
                     {"on": "message", "key": "unwatch", "action": "stop", "nf": "mon"}]})
    assert run.client.call("service.list")  # sluiced is up
    _wait_subscribed(run)
    res = run.client.call("flow.request", type="message", service="fwd", key="watch",
                          value="7")
    assert res == {"applied": 1}

    def mon() -> dict[str, Any] | None:
        return next((n for n in run.client.call("nf.list") if n["service"] == "mon"), None)

    inst = wait_until(mon, 30, "mon started by the policy")
    cmdline = Path(f"/proc/{inst['pid']}/cmdline").read_bytes().split(b"\0")
    assert cmdline[-5:-1] == [b"--top", b"3", b"--interval", b"7"]
    assert "start: 'mon' (args --interval 7): 0 -> 1 instance(s): message watch=7 from " \
           "control (policies[0])" in _actions(orch)
    # once: the same value again starts nothing more
    run.client.call("flow.request", type="message", service="fwd", key="watch", value="7")
    time.sleep(1.0)
    assert [n["service"] for n in run.client.call("nf.list")].count("mon") == 1
    run.client.call("flow.request", type="message", service="fwd", key="unwatch", value="-")
    wait_until(lambda: mon() is None, 30, "mon stopped by the policy")
    assert "stop: 'mon' (args --interval 7): 1 -> 0 instance(s): message unwatch=- from " \
           "control (policies[1])" in _actions(orch)
    assert not [a for a in _actions(orch) if a.startswith("crashed")]


def test_nf_stopped_with_nf_stop_is_not_restarted_until_apply(orchestrate, node, tmp_path):
    run, orch = orchestrate(
        deployment(node,
                   ports=[{"name": "in", "device": _source(tmp_path)},
                          {"name": "out", "device": "net_null0,no-rx=1"}],
                   nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd",
                         "replicas": 2}],
                   chain=["fwd", "port:out"]))
    wait_until(lambda: _out(run) > 20_000, 20, "traffic")
    _wait_subscribed(run)
    assert request(run.dep, "status")["subscribed"] is True
    first, second = sorted(run.client.call("nf.list"), key=lambda n: n["instance"])
    # as `sluice nf stop` does: the NF deregisters, drains and exits 0
    assert run.client.call("nf.stop", instance=second["instance"])["state"] == "stopping"
    wait_until(lambda: [a for a in _actions(orch) if a.startswith("stopped: ")], 20,
               "the orchestrator to see the clean stop")
    (stopped,) = [a for a in _actions(orch) if a.startswith("stopped: ")]
    assert f"(pid {second['pid']}) stopped cleanly after " in stopped
    assert stopped.endswith("not restarting it; 'fwd' now wants 1 instance(s) until "
                            "`sluice apply` (or SIGHUP) starts it again")
    time.sleep(1.5)  # several reconcile rounds: nothing is started in its place
    assert [n["pid"] for n in run.client.call("nf.list")] == [first["pid"]]
    assert not [a for a in _actions(orch) if a.startswith(("start: ", "crashed: ",
                                                           "exited: "))]
    before = _out(run)
    wait_until(lambda: _out(run) > before + 20_000, 20, "traffic through the other one")
    # applying the same file starts it again
    res = request(run.dep, "apply", path=str(tmp_path / "d.yaml"))
    assert res["applied"] == ["restore: 'fwd': 1 -> 2 instance(s): 1 stopped outside the "
                              "orchestrator before"]
    wait_until(lambda: len(run.client.call("nf.list")) == 2, 30, "fwd back to 2 instances")


def _rules(graph: str, proto: str, ports: range) -> list[dict[str, Any]]:
    return [{"graph": graph, "proto": proto, "dport": p} for p in ports]


def test_apply_changes_many_rules_one_build_each_and_undoes_a_refused_batch(orchestrate, node,
                                                                          tmp_path):
    """500 rules replaced by 500 others: one rule.remove and one rule.add, so
    sluiced builds its classifier twice (not 1,000 times). A batch sluiced
    refuses (--max-rules) is undone: the rules removed before it come back in
    one more build, under new ids, and the error lists each of them."""
    dep = {**deployment(node,
                        ports=[{"name": "in", "device": "net_null0,no-rx=1"},
                               {"name": "out", "device": "net_null1,no-rx=1"}],
                        nfs=[{"name": "fwd", "program": prog("forward"), "service": "fwd"}],
                        chain=["fwd", "port:out"], sluiced_args=["--max-rules", "1000"]),
           "graphs": [{"name": "g", "nodes": {"fwd": ["port:out"]}}],
           "rules": _rules("g", "tcp", range(1, 501))}
    run, orch = orchestrate(dep)

    def sluiced_rules() -> list[tuple[int, str, int]]:
        return sorted((r["id"], r["proto"], int(r["dport"])) for r in run.client.rules())

    def builds() -> int:
        return run.client.call("rule.list", limit=0)["builds"]

    start = sluiced_rules()
    assert [(p, d) for _, p, d in start] == [("tcp", d) for d in range(1, 501)]
    tcp_ids = [i for i, _, _ in start]
    b0 = builds()
    f2 = tmp_path / "d2.yaml"
    f2.write_text(yaml.safe_dump({**dep, "rules": _rules("g", "udp", range(1, 501))},
                                 sort_keys=False))
    res = request(orch.dep, "apply", path=str(f2))
    assert builds() == b0 + 2
    now = sluiced_rules()
    assert [(p, d) for _, p, d in now] == [("udp", d) for d in range(1, 501)]
    udp_ids = [i for i, _, _ in now]
    assert udp_ids == list(range(tcp_ids[-1] + 1, tcp_ids[-1] + 501))  # one batch: consecutive
    assert res["applied"] == (
        [f"rule: {i} removed (tcp dport {d} -> graph g)"
         for i, d in zip(tcp_ids, range(1, 501), strict=True)]
        + [f"rule: {i} added (priority 0, udp dport {d} -> graph g)"
           for i, d in zip(udp_ids, range(1, 501), strict=True)])
    assert run.rules == [({"graph": "g", "priority": 0, "proto": "udp", "dport": d}, i)
                         for i, d in zip(udp_ids, range(1, 501), strict=True)]
    # 300 stay, 200 go and 800 come: 1,100 rules would be more than --max-rules 1000
    f3 = tmp_path / "d3.yaml"
    f3.write_text(yaml.safe_dump({**dep, "rules": _rules("g", "udp", range(1, 301))
                                  + _rules("g", "sctp", range(1, 801))}, sort_keys=False))
    b1 = builds()
    with pytest.raises(OrchestratorError) as e:
        request(orch.dep, "apply", path=str(f3))
    assert builds() == b1 + 2  # the removal, and the rules added again
    back = sluiced_rules()
    again = list(range(udp_ids[-1] + 1, udp_ids[-1] + 201))  # the 200, in their old order
    stay = zip(udp_ids[:300], range(1, 301), strict=True)
    back_again = list(zip(udp_ids[300:], again, range(301, 501), strict=True))
    assert back == sorted([(i, "udp", d) for i, d in stay]
                          + [(new, "udp", d) for _, new, d in back_again])
    assert str(e.value).splitlines() == [
        f"{f3}: sluiced refused the 800 new rules: 800 rules would make 1100, more than "
        f"--max-rules 1000 (300 in use): remove some or raise --max-rules",
        f"the apply was undone: {f2} runs as before; fix {f3} and apply it again:",
        *[f"  undone: rule {old} removed (udp dport {d} -> graph g): added again as rule {new}"
          for old, new, d in reversed(back_again)]]
    # the orchestrator knows the new ids: the same file again changes nothing
    assert [(r["dport"], i) for r, i in run.rules] == \
        [(d, i) for i, _, d in sorted(back, key=lambda r: r[2])]
    assert request(orch.dep, "apply", path=str(f2)) == {
        "applied": [f"apply: nothing to change: {f2} is what runs"]}
    assert builds() == b1 + 2
    log = (tmp_path / "run" / "orchestrator.log").read_text().splitlines()
    assert [ln.split(" ", 1)[1] for ln in log if " undo: " in ln] == \
        ["undo: " + ln.removeprefix("  undone: ") for ln in str(e.value).splitlines()[2:]]
