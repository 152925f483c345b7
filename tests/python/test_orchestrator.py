"""The orchestrator's logic against a fake sluiced, fake processes and a fake
clock: restart backoff, give-up, occupancy and message policies, apply."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from sluice.client import Client, ConnectionLost, RpcError, rule_build_seconds
from sluice.deploy import Deployment, RestartSpec
from sluice.graph import to_rpc
from sluice.orchestrator import Backoff, Orchestrator, OrchestratorError, request, substitute


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


class FakePopen:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        return self.returncode


class FakeProc:
    def __init__(self, label: str, pid: int, nf: Any, argv: list[str]) -> None:
        self.label, self.nf, self.argv = label, nf, argv
        self.log = Path(f"/tmp/{label}.log")
        self.popen = FakePopen(pid)
        self.logf = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exited(self) -> int | None:
        return self.popen.returncode


class FakeRunner:
    """What the orchestrator needs of a Launcher."""

    def __init__(self, dep: Deployment, tmp: Path) -> None:
        self.dep, self.node, self.run_dir = dep, dep.node.name, tmp
        self.register_timeout = 20.0
        self.rules: list[tuple[dict[str, Any], int]] = []
        self.nfs: list[FakeProc] = []
        self.spawned: list[FakeProc] = []
        self.next_pid = 100
        self.fail_spawn: set[str] = set()
        for nf in dep.nfs:
            for r in range(nf.replicas):
                self.spawn_nf(nf, nf.name if nf.replicas == 1 else f"{nf.name}.{r + 1}")
        self.spawned.clear()

    def spawn_nf(self, nf: Any, label: str, extra: list[str] | None = None) -> FakeProc:
        self.next_pid += 1
        p = FakeProc(label, self.next_pid, nf, [nf.program, *nf.args, *(extra or [])])
        if nf.name in self.fail_spawn:
            p.popen.returncode = 1  # exits at once
        self.nfs.append(p)
        self.spawned.append(p)
        return p

    def kill(self, proc: FakeProc, sig: int) -> None:
        if proc.popen.returncode is None:
            proc.popen.returncode = -sig


class FakeSluiced:
    """The control socket: NFs registered by pid, stats with ring counts, and
    the graphs, chain and rules (``table``) it has. ``refuse[method]``: that method fails
    with the message; ``refuse_when``: (method, params it has, message), for
    ``rule.add`` the params of a rule of the batch (refused as sluiced does:
    ``rules[N]: message``, nothing added); ``max_rules``: a batch that would
    make more is refused whole; ``lose[method]``: the connection breaks on it
    (no answer). Rules come and go in batches only, all or none, as
    ``rule.add {rules}`` and ``rule.remove {ids}``; ``rule.list`` pages."""

    rules = Client.rules  # the real paging, over this fake's rule.list
    patience = Client.patience  # the real one, over this fake's timeout
    timeout = 5.0

    def __init__(self, runner: FakeRunner) -> None:
        self.runner = runner
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.instances: dict[int, int] = {}
        self.unregistered: set[int] = set()
        self.ring: dict[str, float] = {}  # service -> occupancy fraction
        self.refuse: dict[str, str] = {}
        self.refuse_when: list[tuple[str, dict[str, Any], str]] = []
        self.lose: set[str] = set()
        self.rule_id = 10
        self.graphs: dict[str, dict[str, Any]] = {}
        self.chain: list[str] = []
        self.table: dict[int, dict[str, Any]] = {}
        self.max_rules = 4096
        self.waited: dict[str, float] = {}  # method -> the client's timeout at its call

    def _live(self) -> list[FakeProc]:
        return [p for p in self.runner.nfs
                if p.exited() is None and p.pid not in self.unregistered]

    def call(self, method: str, **params: Any) -> Any:
        if method not in ("nf.list", "stats"):
            self.calls.append((method, params))
            self.waited[method] = self.timeout
        if method in self.refuse:
            raise RpcError(-32602, self.refuse[method], None, method)
        for m, has, msg in self.refuse_when:
            if m != method:
                continue
            if method == "rule.add":
                for i, r in enumerate(params["rules"]):
                    if all(r.get(k) == v for k, v in has.items()):
                        raise RpcError(-32602, f"rules[{i}]: {msg}", None, method)
            elif all(params.get(k) == v for k, v in has.items()):
                raise RpcError(-32000, msg, None, method)
        if method in self.lose:
            raise ConnectionLost(f"{method}: connection to t.sock lost")
        if method == "nf.list":
            out = []
            for p in self._live():
                inst = self.instances.setdefault(p.pid, len(self.instances))
                out.append({"pid": p.pid, "instance": inst, "service": p.nf.service,
                            "state": "running"})
            return out
        if method == "nf.stop":
            pid = next(k for k, v in self.instances.items() if v == params["instance"])
            proc = next(p for p in self.runner.nfs if p.pid == pid)
            proc.popen.returncode = 0
            return {"instance": params["instance"], "state": "stopping"}
        if method == "stats":
            return {"nfs": [{"service": p.nf.service, "state": "running",
                             "rx_ring": {"count": int(self.ring.get(p.nf.service, 0) * 64),
                                         "size": 64}} for p in self._live()]}
        if method == "graph.apply":
            self.graphs[params["name"]] = params
            return {"name": params["name"], "version": 2}
        if method == "graph.remove":
            if params["name"] not in self.graphs:
                raise RpcError(-32000, f"no graph named '{params['name']}'", None, method)
            del self.graphs[params["name"]]
            gone = [i for i, r in self.table.items() if r["graph"] == params["name"]]
            for i in gone:
                del self.table[i]
            return {"removed": params["name"], "rules_removed": len(gone)}
        if method == "chain.set":
            self.chain = list(params["hops"])
            return {"version": 2}
        if method == "rule.add":
            assert list(params) == ["rules"] and params["rules"], params  # batches only
            n = len(params["rules"])
            if len(self.table) + n > self.max_rules:
                raise RpcError(-32000, f"{n} rules would make {len(self.table) + n}, more "
                               f"than --max-rules {self.max_rules} ({len(self.table)} in "
                               f"use): remove some or raise --max-rules", None, method)
            first = self.rule_id + 1
            for r in params["rules"]:
                self.rule_id += 1
                self.table[self.rule_id] = r
            return {"added": n, "first_id": first, "last_id": self.rule_id}
        if method == "rule.remove":
            assert list(params) == ["ids"] and params["ids"], params  # batches only
            for i in params["ids"]:
                if i not in self.table:
                    raise RpcError(-32000, f"no rule with id {i}; see rule.list (no rule "
                                   f"was removed)", None, method)
            for i in params["ids"]:
                del self.table[i]
            return {"removed": params["ids"]}
        if method == "rule.list":
            have = [{"id": i, **r} for i, r in sorted(self.table.items())]
            off, lim = params.get("offset", 0), params.get("limit", 10000)
            return {"rules": have[off:off + lim], "total": len(have),
                    "truncated": off + lim < len(have)}
        return {}

    def close(self) -> None:
        pass


BASE: dict[str, Any] = {
    "node": {"name": "t"},
    "ports": [{"name": "in", "device": "net_null0"}, {"name": "out", "device": "net_null1"}],
    "nfs": [{"name": "fwd", "program": "sluice-forward", "service": "fwd"},
            {"name": "scrub", "program": "sluice-forward", "service": "scrub", "replicas": 0,
             "args": ["--tag-src-mac"]}],
    "chain": ["fwd", "port:out"],
    "restart": {"backoff_ms": 500, "max_backoff_ms": 4000, "stable_ms": 10000,
                "give_up_after": 4, "window_ms": 60000},
}


def make(tmp_path: Path, **changes: Any) -> tuple[Orchestrator, FakeRunner, FakeSluiced, Clock,
                                                  list[str]]:
    dep = Deployment.from_dict({**BASE, **changes}, source="d.yaml", check_env=False)
    runner = FakeRunner(dep, tmp_path)
    sluiced = FakeSluiced(runner)
    sluiced.graphs = {g.name: to_rpc(g) for g in dep.graphs}
    sluiced.chain = list(dep.chain)
    clock = Clock()
    lines: list[str] = []
    orch = Orchestrator(runner, client=sluiced, clock=clock, say=lines.append, serve=False,
                        subscribe=False)
    return orch, runner, sluiced, clock, lines


def dep_of(**changes: Any) -> Deployment:
    return Deployment.from_dict({**BASE, **changes}, source="d2.yaml", check_env=False)


def add_rule(runner: FakeRunner, sluiced: FakeSluiced, params: dict[str, Any],
             rid: int) -> None:
    """A rule the launcher added at start."""
    runner.rules.append((params, rid))
    sluiced.table[rid] = params


# -- backoff ------------------------------------------------------------------------------

def test_backoff_doubles_up_to_max_then_gives_up_in_the_window() -> None:
    b = Backoff(RestartSpec(backoff_ms=500, max_backoff_ms=1500, stable_ms=10000,
                            give_up_after=5, window_ms=60000))
    assert [b.failed(t, 1.0) for t in (0, 2, 4, 6)] == [0.5, 1.0, 1.5, 1.5]
    assert b.failed(8, 1.0) is None  # the 5th failure within 60 s


def test_backoff_stable_run_resets_the_delay_and_window_forgets() -> None:
    b = Backoff(RestartSpec(backoff_ms=100, max_backoff_ms=10000, stable_ms=5000,
                            give_up_after=3, window_ms=10000))
    assert b.failed(0, 0.1) == 0.1
    assert b.failed(1, 0.1) == 0.2
    assert b.failed(20, 6.0) == 0.1  # ran 6 s >= stable 5 s: first in a row again
    assert b.failed(21, 0.1) == 0.2  # the failures at 0 and 1 left the 10 s window
    assert b.failed(22, 0.1) is None  # 3 within 10 s: 20, 21, 22


def test_substitute() -> None:
    assert substitute(["--prefix", "{value}", "{key}:{from}", "x"], "alarm", "10.0.0.0/24",
                      "ddos-detect") == ("--prefix", "10.0.0.0/24", "alarm:ddos-detect", "x")


# -- restarts -------------------------------------------------------------------------------

def test_crashed_nf_is_restarted_after_backoff(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    assert runner.spawned == [] and lines == []
    victim = runner.nfs[0]
    victim.popen.returncode = -signal.SIGKILL
    clock.advance(3.0)
    orch.tick()
    assert lines == ["crashed: fwd was killed by SIGKILL after 3.0 s; restarting in 0.5 s "
                     "(failure 1 in a row); see /tmp/fwd.log"]
    clock.advance(0.4)
    orch.tick()
    assert runner.spawned == []
    clock.advance(0.1)
    orch.tick()
    assert len(runner.spawned) == 1 and runner.spawned[0].label == "fwd"
    assert lines[1] == (f"start: fwd (pid {runner.spawned[0].pid}): restart 1 after it was "
                        f"killed by SIGKILL")
    st = orch.status()["instances"]
    assert [(i["label"], i["state"], i["restarts"]) for i in st] == [("fwd", "running", 1)]
    # a second crash soon after waits twice as long
    runner.spawned[0].popen.returncode = 3
    clock.advance(1.0)
    orch.tick()
    assert lines[2].startswith("crashed: fwd exited with status 3 after 1.0 s; restarting in "
                               "1 s (failure 2 in a row)")


def test_gives_up_after_n_failures_and_apply_retries(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    for _ in range(4):
        (runner.spawned or runner.nfs)[-1].popen.returncode = 1
        orch.tick()
        clock.advance(5.0)
        orch.tick()
    assert lines[-1] == ("gave-up: fwd exited with status 1: 4 failures within 60 s "
                         "(restart.give_up_after 4): not restarting it; `sluice apply` tries "
                         "again; see /tmp/fwd.log")
    n = len(runner.spawned)
    assert n == 3
    clock.advance(100)
    orch.tick()
    assert len(runner.spawned) == n
    assert orch.status()["instances"][0]["state"] == "failed"
    out = orch.apply(dep_of())
    assert out == ["retry: fwd: failed before; starting it again"]
    orch.tick()
    assert len(runner.spawned) == n + 1


def test_nf_that_never_registers_is_killed_and_counted(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    runner.nfs[0].popen.returncode = -9
    orch.tick()
    clock.advance(0.5)
    sluiced.unregistered.add(runner.next_pid + 1)  # the restarted one never registers
    orch.tick()
    new = runner.spawned[0]
    assert orch.status()["instances"][0]["state"] == "starting"
    clock.advance(21)
    orch.tick()
    assert new.popen.returncode == -signal.SIGKILL
    assert lines[-1].startswith("crashed: fwd did not register within 20 s after 21.0 s; "
                                "restarting in 1 s (failure 2 in a row)")


# -- occupancy policy ---------------------------------------------------------------------

OCC = [{"on": "occupancy", "service": "fwd", "above": 0.75, "below": 0.1, "for_ms": 1000,
        "min": 1, "max": 3}]


def test_occupancy_scales_out_when_it_stays_above_and_in_when_below(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=OCC)
    sluiced.ring["fwd"] = 0.9
    for _ in range(5):  # 0.8 s above: not long enough
        orch.tick()
        clock.advance(0.2)
    assert runner.spawned == []
    sluiced.ring["fwd"] = 0.5  # a dip restarts the count
    orch.tick()
    clock.advance(0.2)
    sluiced.ring["fwd"] = 0.9
    for _ in range(6):
        orch.tick()
        clock.advance(0.2)
    assert lines[0] == ("scale-out: 'fwd' 1 -> 2: service fwd rx ring occupancy 0.89 above "
                        "0.75 for 1000 ms (policies[0])")
    assert [p.label for p in runner.spawned] == ["fwd.2"]
    assert lines[1] == f"start: fwd.2 (pid {runner.spawned[0].pid}): 'fwd' wants 2 instance(s)"
    # the new instance idles: the mean is 0.45, between the bounds: nothing more
    for p in runner.spawned:
        sluiced.ring_override = p
    orch.tick()
    clock.advance(0.2)
    sluiced.ring["fwd"] = 0.0
    for _ in range(7):
        orch.tick()
        clock.advance(0.2)
    assert lines[2] == ("scale-in: 'fwd' 2 -> 1: service fwd rx ring occupancy 0.00 below 0.1 "
                        "for 1000 ms (policies[0])")
    stopped = runner.spawned[0]
    assert lines[3] == (f"stop: fwd.2 (pid {stopped.pid}, nf.stop instance "
                        f"{sluiced.instances[stopped.pid]}): 'fwd' wants 1 instance(s)")
    for _ in range(10):  # at min: stays
        orch.tick()
        clock.advance(0.2)
    assert len(lines) == 4 and stopped.exited() == 0
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]


def test_occupancy_stops_at_max(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(
        tmp_path, policies=[{**OCC[0], "max": 2, "for_ms": 0}])
    sluiced.ring["fwd"] = 1.0
    for _ in range(20):
        orch.tick()
        clock.advance(0.2)
    assert [ln.split(":")[0] for ln in lines] == ["scale-out", "start"]
    assert len([p for p in runner.nfs if p.exited() is None]) == 2


# -- message policy -----------------------------------------------------------------------

MSG = [{"on": "message", "key": "alarm", "from": "fwd", "action": "start", "nf": "scrub",
        "args": ["--prefix", "{value}"], "once": True},
       {"on": "message", "key": "clear", "action": "stop", "nf": "scrub",
        "args": ["--prefix", "{value}"]}]


def test_message_starts_nf_with_substituted_args_once_per_value(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=MSG)
    orch.on_message({"nf": "fwd", "instance": 0, "key": "alarm", "value": "10.0.0.0/24"})
    orch.on_message({"nf": "other", "key": "alarm", "value": "10.9.0.0/24"})  # not from fwd
    orch.on_message({"from": "control", "key": "noise", "value": "x"})
    orch.tick()
    assert lines[0] == ("start: 'scrub' (args --prefix 10.0.0.0/24): 0 -> 1 instance(s): "
                        "message alarm=10.0.0.0/24 from fwd (policies[0])")
    (p,) = runner.spawned
    assert p.label == "scrub.1"
    assert p.argv == ["sluice-forward", "--tag-src-mac", "--prefix", "10.0.0.0/24"]
    # the same alarm again: nothing; another value: another instance
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.0.0.0/24"})
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.1.0.0/24"})
    orch.tick()
    assert [q.label for q in runner.spawned] == ["scrub.1", "scrub.2"]
    assert runner.spawned[1].argv[-1] == "10.1.0.0/24"
    # clear stops that group only; once: the same alarm does not start it again
    orch.on_message({"from": "control", "key": "clear", "value": "10.0.0.0/24"})
    orch.tick()
    assert lines[-2] == ("stop: 'scrub' (args --prefix 10.0.0.0/24): 1 -> 0 instance(s): "
                         "message clear=10.0.0.0/24 from control (policies[1])")
    assert lines[-1].startswith(f"stop: scrub.1 (pid {p.pid}, nf.stop instance")
    orch.tick()
    assert p.exited() == 0 and runner.spawned[1].exited() is None
    orch.on_message({"nf": "fwd", "key": "alarm", "value": "10.0.0.0/24"})
    orch.tick()
    assert len(runner.spawned) == 2
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd", "scrub.2"]


def test_message_scale_sets_the_files_instances(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, policies=[
        {"on": "message", "key": "load", "action": "scale", "nf": "fwd", "replicas": 3}])
    orch.on_message({"from": "control", "key": "load", "value": "high"})
    orch.tick()
    assert lines[0] == ("scale: 'fwd': 1 -> 3 instance(s): message load=high from control "
                        "(policies[0])")
    assert [p.label for p in runner.spawned] == ["fwd.2", "fwd.3"]


# -- apply ----------------------------------------------------------------------------------

GRAPH = {"name": "g", "nodes": {"fwd": ["port:out"]}, "match": [{"proto": "udp"}]}


def test_apply_adds_replica_changes_graph_chain_and_rules(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH])
    add_rule(runner, sluiced, {"graph": "g", "priority": 0, "proto": "udp"}, 7)
    new = dep_of(
        nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2},
             {"name": "mon", "program": "sluice-monitor", "service": "mon"}],
        chain=["mon", "fwd", "port:out"],
        graphs=[{"name": "g", "nodes": {"mon": ["fwd"], "fwd": ["port:out"]},
                 "match": [{"proto": "tcp", "dport": 80}]}])
    out = orch.apply(new)
    spawned = {p.label: p for p in runner.spawned}
    assert sorted(spawned) == ["fwd.2", "mon"]
    assert out == [
        "replicas: NF 'fwd': 1 -> 2",
        "add: NF 'mon' (sluice-monitor, service mon): 1 instance(s)",
        "graph: g changed (version 2)",
        "chain: mon -> fwd -> port:out",
        "rule: 7 removed (udp -> graph g)",
        "rule: 11 added (priority 0, tcp dport 80 -> graph g)",
        "remove: NF 'scrub': its instances stop",
    ]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "rule.remove",
                                             "rule.add"]
    assert sluiced.calls[0][1] == {"name": "g", "entry": "mon",
                                   "nodes": {"mon": ["fwd"], "fwd": ["port:out"]}}
    assert sluiced.calls[2:] == [
        ("rule.remove", {"ids": [7]}),
        ("rule.add", {"rules": [{"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}]})]
    assert runner.rules == [({"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}, 11)]
    assert sluiced.table == {11: {"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}}
    assert sluiced.chain == ["mon", "fwd", "port:out"]
    assert orch.dep is new and runner.dep is new
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]


def test_apply_refuses_ports_and_node_changes_and_changes_nothing(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    new = dep_of(node={"name": "t", "ring_size": 128},
                 ports=[{"name": "in", "device": "net_null0"},
                        {"name": "out", "device": "net_null2"}],
                 nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd",
                       "replicas": 2}])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value).splitlines() == [
        "d2.yaml: node.ring_size: unset -> 128 cannot change while the node runs: stop "
        "`sluice up` and start it again with the new file (nothing was applied)",
        "d2.yaml: ports: port out device 'net_null1' -> 'net_null2' cannot change while the "
        "node runs: stop `sluice up` and start it again with the new file (nothing was "
        "applied)"]
    orch.tick()
    assert runner.spawned == [] and sluiced.calls == [] and orch.dep.source == "d.yaml"


def test_apply_rolls_back_when_a_new_nf_exits_at_start(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    runner.fail_spawn.add("mon")
    new = dep_of(nfs=[*BASE["nfs"], {"name": "mon", "program": "sluice-monitor",
                                      "service": "mon"}],
                 chain=["mon", "fwd", "port:out"])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value) == ("d2.yaml: nfs: NF 'mon' (mon) exited with status 1 while starting, "
                            "so nothing else was changed; see /tmp/mon.log")
    assert orch.dep.source == "d.yaml" and sluiced.calls == []
    orch.tick()
    assert ("mon", ()) not in orch.groups
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]


def test_apply_replaces_changed_nf_new_first(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = runner.nfs[0]
    new = dep_of(nfs=[{"name": "fwd", "program": "sluice-forward", "service": "fwd",
                       "args": ["--tag-src-mac"]}, BASE["nfs"][1]])
    out = orch.apply(new)
    assert out[0] == ("replace: NF 'fwd' changed (args: [] -> ['--tag-src-mac']): new "
                      "instances start, then the old ones stop")
    (p,) = runner.spawned
    assert p.label == "fwd.2" and p.argv == ["sluice-forward", "--tag-src-mac"]
    assert old.exited() == 0  # nf.stop'ed once the new one registered
    orch.tick()
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd.2"]


MON = {"name": "mon", "program": "sluice-monitor", "service": "mon"}
UNDONE = "the apply was undone: d.yaml runs as before; fix d2.yaml and apply it again:"
IN_PART = ("the apply could not be undone in full: the NFs run as d.yaml says, but sluiced's "
           "graphs, chain and rules may not; the next `sluice apply` (of either file) pushes "
           "them all again:")


def test_apply_undoes_what_it_made_when_sluiced_refuses_a_step(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = orch.dep
    sluiced.refuse["chain.set"] = "no such hop"
    new = dep_of(nfs=[*BASE["nfs"], MON], graphs=[GRAPH], chain=["mon", "fwd", "port:out"])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    (mon,) = runner.spawned
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the chain (mon -> fwd -> port:out): no such hop",
        UNDONE,
        "  undone: graph g added (version 2)",
        "  undone: add NF 'mon' (sluice-monitor, service mon): 1 instance(s) (its new "
        "instances stop)"]
    assert sluiced.calls == [
        ("graph.apply", {"name": "g", "entry": "fwd", "nodes": {"fwd": ["port:out"]}}),
        ("chain.set", {"hops": ["mon", "fwd", "port:out"]}),
        ("graph.remove", {"name": "g"}),
        ("nf.stop", {"instance": 1})]
    assert lines[-2:] == ["undo: graph g added (version 2)",
                          f"stop: mon (pid {mon.pid}, nf.stop instance 1): the apply failed"]
    assert mon.exited() == 0
    assert sluiced.graphs == {} and sluiced.chain == ["fwd", "port:out"]
    assert sluiced.table == {} and runner.rules == []
    assert orch.dep is old and runner.dep is old and not orch.resync
    orch.tick()
    assert [i["label"] for i in orch.status()["instances"]] == ["fwd"]
    assert [g["nf"] for g in orch.status()["groups"]] == ["fwd", "scrub"]
    # the same file again, once sluiced takes it: everything is applied
    del sluiced.refuse["chain.set"]
    sluiced.calls.clear()
    assert orch.apply(new) == [
        "add: NF 'mon' (sluice-monitor, service mon): 1 instance(s)",
        "graph: g added (version 2)",
        "chain: mon -> fwd -> port:out",
        "rule: 11 added (priority 0, udp -> graph g)"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "rule.add"]
    assert [p.label for p in runner.spawned] == ["mon", "mon"]
    assert runner.spawned[1].exited() is None
    assert runner.rules == [({"graph": "g", "priority": 0, "proto": "udp"}, 11)]
    assert sluiced.chain == ["mon", "fwd", "port:out"] and list(sluiced.graphs) == ["g"]
    assert orch.dep is new and runner.dep is new


def test_apply_adds_a_removed_rule_again_when_sluiced_refuses_a_rule(tmp_path: Path) -> None:
    icmp_rule = {"graph": "g", "priority": 5, "proto": "icmp"}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH], rules=[icmp_rule])
    udp = {"graph": "g", "priority": 0, "proto": "udp"}
    tcp = {"graph": "g", "priority": 0, "proto": "tcp", "dport": 80}
    add_rule(runner, sluiced, udp, 7)
    add_rule(runner, sluiced, icmp_rule, 8)
    sluiced.refuse_when.append(("rule.add", {"proto": "tcp"}, "too many rules"))
    new = dep_of(graphs=[{**GRAPH, "match": [{"proto": "tcp", "dport": 80}]}],
                 rules=[icmp_rule])
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the rule (priority 0, tcp dport 80 -> graph g): too many "
        "rules",
        UNDONE,
        "  undone: rule 7 removed (udp -> graph g): added again as rule 11"]
    assert sluiced.calls == [("rule.remove", {"ids": [7]}), ("rule.add", {"rules": [tcp]}),
                             ("rule.add", {"rules": [udp]})]
    # the rule has a new id, in its old place
    assert runner.rules == [(udp, 11), (icmp_rule, 8)]
    assert sluiced.table == {8: icmp_rule, 11: udp}
    assert orch.dep.source == "d.yaml" and not orch.resync
    # the next apply removes the rule by its new id
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    assert orch.apply(new) == ["rule: 11 removed (udp -> graph g)",
                               "rule: 12 added (priority 0, tcp dport 80 -> graph g)"]
    assert sluiced.calls == [("rule.remove", {"ids": [11]}), ("rule.add", {"rules": [tcp]})]
    assert runner.rules == [(icmp_rule, 8), (tcp, 12)]
    assert sluiced.table == {8: icmp_rule, 12: tcp}


def test_apply_undoes_a_removed_graph_and_its_rules(tmp_path: Path) -> None:
    h = {"name": "h", "nodes": {"fwd": ["port:out"]}, "match": [{"proto": "icmp"}]}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH, h])
    udp = {"graph": "g", "priority": 0, "proto": "udp"}
    add_rule(runner, sluiced, udp, 7)
    add_rule(runner, sluiced, {"graph": "h", "priority": 0, "proto": "icmp"}, 8)
    sluiced.refuse_when.append(("graph.remove", {"name": "h"}, "graph h is in use"))
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of())
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of graph h: graph h is in use",
        UNDONE,
        "  undone: graph g removed (1 rule(s) with it): applied again (version 2)",
        "  undone: rule 7 removed with graph g: added again as rule 11"]
    assert sluiced.calls[:3] == [("graph.remove", {"name": "g"}), ("graph.remove", {"name": "h"}),
                                 ("graph.apply", {"name": "g", "entry": "fwd",
                                                  "nodes": {"fwd": ["port:out"]}})]
    assert sluiced.calls[3:] == [("rule.add", {"rules": [udp]})]
    assert runner.rules == [(udp, 11), ({"graph": "h", "priority": 0, "proto": "icmp"}, 8)]
    assert sorted(sluiced.graphs) == ["g", "h"] and sorted(sluiced.table) == [8, 11]
    # a rule that goes with its graph is said once the graph is gone: rule 8
    # (graph h, refused) never was
    assert [ln for ln in lines if ln.startswith("rule")] == ["rule: 7 removed (udp -> graph g)"]


UDP = {"graph": "g", "priority": 0, "proto": "udp"}  # GRAPH's match


def many(proto: str, n: int = 500) -> list[dict[str, Any]]:
    """n rules for graph g, dport 1..n."""
    return [{"graph": "g", "priority": 0, "proto": proto, "dport": i + 1} for i in range(n)]


def with_rules(tmp_path: Path, proto: str = "tcp", n: int = 500) -> tuple[
        Orchestrator, FakeRunner, FakeSluiced, list[str]]:
    """A node running GRAPH with its match (rule 1001) and n more rules (1002...),
    as the launcher added them; sluiced's next rule id is 2001."""
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH], rules=many(proto, n))
    for i, r in enumerate(orch.dep.rule_params()):
        add_rule(runner, sluiced, r, 1001 + i)
    sluiced.rule_id = 2000
    return orch, runner, sluiced, lines


def logged(tmp_path: Path) -> list[str]:
    """orchestrator.log without its time stamps."""
    return [ln.split(" ", 1)[1] for ln in (tmp_path / "orchestrator.log").read_text()
            .splitlines()]


def test_apply_adds_and_removes_many_rules_in_one_call_each(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    new = dep_of(graphs=[GRAPH], rules=many("udp"))
    out = orch.apply(new)
    assert sluiced.calls == [("rule.remove", {"ids": list(range(1002, 1502))}),
                             ("rule.add", {"rules": many("udp")})]
    assert out == (
        [f"rule: {1002 + i} removed (tcp dport {i + 1} -> graph g)" for i in range(500)]
        + [f"rule: {2001 + i} added (priority 0, udp dport {i + 1} -> graph g)"
           for i in range(500)])
    assert lines == out and logged(tmp_path) == out
    assert runner.rules == [(UDP, 1001), *[(r, 2001 + i) for i, r in
                                           enumerate(many("udp"))]]
    assert sluiced.table == {rid: r for r, rid in runner.rules}
    # a classifier build of hundreds of rules may take seconds: waited for longer
    assert sluiced.waited == {"rule.remove": rule_build_seconds(501),
                              "rule.add": rule_build_seconds(501)}
    assert sluiced.timeout == 5.0
    sluiced.calls.clear()
    assert orch.apply(new) == ["apply: nothing to change: d2.yaml is what runs"]
    assert sluiced.calls == []


def test_a_refused_batch_names_its_rule_and_is_undone_as_a_refused_rule_was(
        tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.refuse_when.append(("rule.add", {"proto": "udp", "dport": 250},
                                "no port named 'lan' (ports: in, out)"))
    new = dep_of(graphs=[GRAPH], rules=many("udp"))
    with pytest.raises(OrchestratorError) as e:
        orch.apply(new)
    undone = [f"rule {1002 + i} removed (tcp dport {i + 1} -> graph g): added again as rule "
              f"{2001 + i}" for i in reversed(range(500))]  # newest first
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the rule (priority 0, udp dport 250 -> graph g): no port "
        "named 'lan' (ports: in, out)",
        UNDONE,
        *[f"  undone: {u}" for u in undone]]
    # one call each: the removal, the refused batch, the removed rules added again
    assert sluiced.calls == [("rule.remove", {"ids": list(range(1002, 1502))}),
                             ("rule.add", {"rules": many("udp")}),
                             ("rule.add", {"rules": many("tcp")})]
    assert [ln for ln in lines if ln.startswith("undo")] == [f"undo: {u}" for u in undone]
    assert [ln for ln in logged(tmp_path) if ln.startswith("undo")] == \
        [f"undo: {u}" for u in undone]
    # the same rules in their old places, under new ids
    assert runner.rules == [(UDP, 1001), *[(r, 2001 + i) for i, r in
                                           enumerate(many("tcp"))]]
    assert [r for r, _ in runner.rules] == [r for r, _ in before]
    assert sluiced.table == {rid: r for r, rid in runner.rules}
    assert orch.dep.source == "d.yaml" and not orch.resync
    # the next apply removes them by their new ids
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    out = orch.apply(new)
    assert out[0] == "rule: 2001 removed (tcp dport 1 -> graph g)"
    assert out[500] == "rule: 2501 added (priority 0, udp dport 1 -> graph g)"
    assert sluiced.calls == [("rule.remove", {"ids": list(range(2001, 2501))}),
                             ("rule.add", {"rules": many("udp")})]
    assert sluiced.table == {rid: r for r, rid in runner.rules} and len(sluiced.table) == 501


def test_a_batch_refused_whole_says_how_many_rules(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.max_rules = 600
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp") + many("udp"),
                          chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the 500 new rules: 500 rules would make 1001, more "
        "than --max-rules 600 (501 in use): remove some or raise --max-rules",
        UNDONE,
        "  undone: chain fwd -> drop: back to fwd -> port:out"]
    assert [m for m, _ in sluiced.calls] == ["chain.set", "rule.add", "chain.set"]
    assert runner.rules == before and sluiced.table == {rid: r for r, rid in before}


def test_a_refusal_at_the_first_step_says_nothing_had_changed(tmp_path: Path) -> None:
    """As against a real node (4100 new rules, --max-rules 4096): the line no
    longer ends with a colon and a list of nothing."""
    orch, runner, sluiced, lines = with_rules(tmp_path)
    before = list(runner.rules)
    sluiced.max_rules = 600
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp") + many("udp")))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the 500 new rules: 500 rules would make 1001, more "
        "than --max-rules 600 (501 in use): remove some or raise --max-rules",
        "the apply was undone: d.yaml runs as before; fix d2.yaml and apply it again (it had "
        "changed nothing yet)"]
    assert [m for m, _ in sluiced.calls] == ["rule.add"]
    assert runner.rules == before


def test_rules_gone_from_sluiced_are_left_out_of_the_removal(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path, n=3)
    del sluiced.table[1003]  # `sluice rule remove 1003`
    out = orch.apply(dep_of(graphs=[GRAPH]))
    assert sluiced.calls == [("rule.remove", {"ids": [1002, 1003, 1004]}),
                             ("rule.list", {"offset": 0, "limit": 10000}),
                             ("rule.remove", {"ids": [1002, 1004]})]
    assert out[:3] == [f"rule: {1002 + i} removed (tcp dport {i + 1} -> graph g)"
                       for i in range(3)]
    assert runner.rules == [(UDP, 1001)] and sluiced.table == {1001: UDP}


def test_a_refused_removal_of_rules_sluiced_has_is_undone(tmp_path: Path) -> None:
    orch, runner, sluiced, lines = with_rules(tmp_path, n=2)
    before = list(runner.rules)
    sluiced.refuse["rule.remove"] = "rules: out of memory"
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[{**GRAPH, "nodes": {"fwd": ["drop"]}}]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of rules 1002 and 1003: rules: out of memory",
        UNDONE,
        "  undone: graph g changed (version 2): old graph applied again (version 2)"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "rule.remove", "rule.list",
                                             "graph.apply"]
    assert runner.rules == before and sluiced.table == {rid: r for r, rid in before}


def test_an_undo_of_a_batch_that_fails_names_each_rule_and_the_next_apply_removes_them(
        tmp_path: Path) -> None:
    h = {"name": "h", "nodes": {"fwd": ["port:out"]}}
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH, h])
    add_rule(runner, sluiced, UDP, 7)
    sluiced.refuse_when.append(("graph.remove", {"name": "h"}, "graph h is in use"))
    sluiced.lose.add("rule.remove")
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], rules=many("tcp", 3)))
    why = "no answer: connection to t.sock lost"
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the removal of graph h: graph h is in use",
        IN_PART,
        *[f"  not undone: rule {rid} added (priority 0, tcp dport {rid - 10} -> graph g): "
          f"{why}" for rid in (13, 12, 11)]]
    assert [ln for ln in lines if ln.startswith("undo")] == [
        f"undo-failed: rule {rid} added (priority 0, tcp dport {rid - 10} -> graph g): {why}"
        for rid in (13, 12, 11)]
    assert sluiced.calls[-1] == ("rule.remove", {"ids": [11, 12, 13]})
    assert orch.resync and runner.rules == [(UDP, 7), *[(r, 11 + i) for i, r in
                                                        enumerate(many("tcp", 3))]]
    # the running file again: the rules the apply left go, in one call
    sluiced.lose.clear()
    sluiced.refuse_when.clear()
    sluiced.calls.clear()
    out = orch.apply(Deployment.from_dict({**BASE, "graphs": [GRAPH, h]}, source="d.yaml",
                                          check_env=False))
    assert out == ["graph: g pushed again (version 2)", "graph: h pushed again (version 2)",
                   "chain: fwd -> port:out (pushed again)",
                   *[f"rule: {rid} removed (tcp dport {rid - 10} -> graph g)"
                     for rid in (11, 12, 13)]]
    assert sluiced.calls[-1] == ("rule.remove", {"ids": [11, 12, 13]})
    assert runner.rules == [(UDP, 7)] and sluiced.table == {7: UDP} and not orch.resync


def test_an_undo_sluiced_refuses_is_reported_and_the_next_apply_pushes_all(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    old = orch.dep
    sluiced.refuse["chain.set"] = "no such hop"
    sluiced.refuse["graph.remove"] = "graph g is busy"
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[GRAPH], chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced refused the chain (fwd -> drop): no such hop",
        IN_PART,
        "  not undone: graph g added (version 2): sluiced refused it: graph g is busy"]
    assert [m for m, _ in sluiced.calls] == ["graph.apply", "chain.set", "graph.remove"]
    assert lines[-1] == "undo-failed: graph g added (version 2): sluiced refused it: graph g " \
                        "is busy"
    assert orch.dep is old and orch.resync and orch.stale_graphs == {"g"}
    assert list(sluiced.graphs) == ["g"]
    # the running file again: not "nothing to change", the chain and graphs are pushed
    del sluiced.refuse["chain.set"], sluiced.refuse["graph.remove"]
    sluiced.calls.clear()
    running = Deployment.from_dict(BASE, source="d.yaml", check_env=False)
    assert orch.apply(running) == [
        "chain: fwd -> port:out (pushed again)",
        "graph: g removed (left by an apply that could not be undone)"]
    assert sluiced.calls == [("chain.set", {"hops": ["fwd", "port:out"]}),
                             ("graph.remove", {"name": "g"})]
    assert sluiced.graphs == {} and not orch.resync and orch.stale_graphs == set()
    assert orch.apply(running) == ["apply: nothing to change: d.yaml is what runs"]


def test_a_step_without_answer_is_undone_and_the_next_apply_pushes_all(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, graphs=[GRAPH])
    add_rule(runner, sluiced, {"graph": "g", "priority": 0, "proto": "udp"}, 7)
    sluiced.lose.add("chain.set")
    with pytest.raises(OrchestratorError) as e:
        orch.apply(dep_of(graphs=[{**GRAPH, "nodes": {"fwd": ["drop"]}}],
                          chain=["fwd", "drop"]))
    assert str(e.value).splitlines() == [
        "d2.yaml: sluiced did not answer about the chain (fwd -> drop), so it may or may "
        "not have been made: connection to t.sock lost",
        "the apply was undone and the NFs run as d.yaml says, but sluiced's graphs, chain "
        "and rules may not; the next `sluice apply` (of either file) pushes them all again:",
        "  undone: graph g changed (version 2): old graph applied again (version 2)"]
    assert sluiced.graphs["g"]["nodes"] == {"fwd": ["port:out"]}
    assert orch.resync and orch.stale_graphs == set()
    sluiced.lose.clear()
    sluiced.calls.clear()
    assert orch.apply(Deployment.from_dict({**BASE, "graphs": [GRAPH]}, source="d.yaml",
                                           check_env=False)) == [
        "graph: g pushed again (version 2)", "chain: fwd -> port:out (pushed again)"]
    assert sluiced.calls == [
        ("graph.apply", {"name": "g", "entry": "fwd", "nodes": {"fwd": ["port:out"]}}),
        ("chain.set", {"hops": ["fwd", "port:out"]})]
    assert not orch.resync


def test_socket_apply_and_status(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(
        tmp_path, node={"name": "t", "socket": str(tmp_path / "t.sock")})
    f = tmp_path / "d.yaml"
    f.write_text("node: {name: t, socket: t.sock}\n"
                 "ports: [{name: in, device: net_null0}, {name: out, device: net_null1}]\n"
                 "nfs: [{name: fwd, program: /bin/true, service: fwd, replicas: 2}]\n"
                 "chain: [fwd, 'port:out']\n")
    dep = Deployment.from_dict({**BASE, "node": {"name": "t", "socket": str(tmp_path / "t.sock")}},
                               check_env=False)
    orch._serve = True
    with orch:
        assert orch.sock_path == tmp_path / "t.orchestrator"
        st = request(dep, "status")
        assert [i["label"] for i in st["instances"]] == ["fwd"]
        res = request(dep, "apply", path=str(f))
        assert "replicas: NF 'fwd': 1 -> 2" in res["applied"]
        with pytest.raises(OrchestratorError) as e:
            request(dep, "apply", path=str(tmp_path / "missing.yaml"))
        assert str(e.value) == f"{tmp_path / 'missing.yaml'}: no such file"
    assert not orch.sock_path.exists()
    log = (tmp_path / "orchestrator.log").read_text()
    assert "replicas: NF 'fwd': 1 -> 2" in log and "refused: " in log


def test_sighup_reload_reads_the_running_file_again(tmp_path: Path) -> None:
    from sluice.deploy import load_deployment

    f = tmp_path / "d.yaml"
    text = ("node: {name: t}\n"
            "ports: [{name: in, device: net_null0}, {name: out, device: net_null1}]\n"
            "nfs: [{name: fwd, program: /bin/true, service: fwd, replicas: 1}]\n"
            "chain: [fwd, 'port:out']\n")
    f.write_text(text)
    dep = load_deployment(f, check_env=False)
    runner = FakeRunner(dep, tmp_path)
    lines: list[str] = []
    orch = Orchestrator(runner, client=FakeSluiced(runner), clock=Clock(), say=lines.append,
                        serve=False, subscribe=False)
    f.write_text(text.replace("replicas: 1", "replicas: 2"))
    orch.reload.set()
    orch.tick()
    assert lines[:2] == [f"reload: SIGHUP: reading {f} again", "replicas: NF 'fwd': 1 -> 2"]
    assert [p.label for p in runner.spawned] == ["fwd.2"]
    orch.reload.set()
    orch.tick()  # the same file again
    assert lines[-2:] == [f"reload: SIGHUP: reading {f} again",
                          f"apply: nothing to change: {f} is what runs"]
    f.write_text(text.replace("chain: [fwd", "chain: [fw"))
    orch.reload.set()
    orch.tick()
    assert lines[-1].startswith(f"refused: {f}: chain[0]: 'fw' is not the service")
    assert orch.dep.nfs[0].replicas == 2


def test_container_nf_command_line_is_wrapped(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import sluice.container
    from sluice.launch import Launcher

    seen: list[tuple[list[str], dict[str, Any]]] = []

    def wrap(argv: list[str], **kw: Any) -> list[str]:
        seen.append((argv, kw))
        return ["podman", "run", kw["image"], *argv]

    monkeypatch.setattr(sluice.container, "wrap", wrap)
    dep = Deployment.from_dict({**BASE, "nfs": [
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "run": "container",
         "image": "nfs:1", "args": ["--tag-src-mac"]}]}, base_dir=tmp_path, check_env=False)
    run = Launcher(dep, log_dir=tmp_path)
    argv = run.nf_argv(dep.nfs[0], "sluice-forward", ["--x"], label="fwd.2")
    assert seen == [(["sluice-forward", "--", "--node", "t", "--service", "fwd", "--mode",
                      "shared", "--tag-src-mac", "--x"],
                     {"name": "fwd.2", "image": "nfs:1", "node": "t", "workdir": tmp_path})]
    assert argv[:3] == ["podman", "run", "nfs:1"]


def test_an_nf_sluiced_killed_as_hung_is_said_to_be_hung(tmp_path: Path) -> None:
    """sluiced publishes nf.hung, then SIGKILLs the NF: the restart line says
    it hung, not that it crashed of itself. A SIGKILL exit waits a moment
    for that event; one with no such event is a plain kill."""
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=[
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2}])
    orch.subscribed = True
    orch.tick()
    a, b = runner.nfs
    a.popen.returncode = b.popen.returncode = -signal.SIGKILL
    clock.advance(2.0)
    orch.tick()
    assert lines == []  # nf.hung may be a moment behind the exit
    orch.events.put({"kind": "nf.hung", "ts": 0.0, "data": {
        "instance": 0, "service": "fwd", "pid": a.pid, "hang_ms": 1000}})
    clock.advance(0.1)
    orch.tick()
    assert lines == [f"crashed: fwd.1 was hung (no heartbeat for 1000 ms) and killed by "
                     f"sluiced (SIGKILL; --nf-hang-ms) after 2.1 s; restarting in 0.5 s "
                     f"(failure 1 in a row); see {a.log}"]
    clock.advance(0.4)
    orch.tick()  # b: no nf.hung within HUNG_EVENT_WAIT_S
    assert lines[1] == (f"crashed: fwd.2 was killed by SIGKILL after 2.5 s; restarting in "
                        f"0.5 s (failure 1 in a row); see {b.log}")


# -- exits with status 0, and the event subscription --------------------------------------------

def _nf_down(pid: int, reason: str) -> dict[str, Any]:
    return {"kind": "nf.down", "ts": 0.0,
            "data": {"instance": 0, "service": "fwd", "pid": pid, "reason": reason}}


def test_clean_stop_asked_elsewhere_is_not_restarted_until_the_next_apply(
        tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    (p,) = runner.nfs
    # `sluice nf stop`: sluiced says it deregistered, then it exits 0
    orch.events.put(_nf_down(p.pid, "stopped"))
    p.popen.returncode = 0
    clock.advance(2.0)
    orch.tick()
    assert lines == [
        f"stopped: fwd (pid {p.pid}) stopped cleanly after 2.0 s, asked by someone else than "
        f"the orchestrator (sluice nf stop, the REST API, nf.scale or SIGTERM): not "
        f"restarting it; 'fwd' now wants 0 instance(s) until `sluice apply` (or SIGHUP) "
        f"starts it again"]
    clock.advance(60.0)
    orch.tick()
    assert runner.spawned == [] and len(lines) == 1
    assert {g["nf"]: (g["want"], g["stopped_outside"]) for g in orch.status()["groups"]} \
        == {"fwd": (0, 1), "scrub": (0, 0)}
    # applying the file (even unchanged) starts it again
    assert orch.apply(dep_of()) == [
        "restore: 'fwd': 0 -> 1 instance(s): 1 stopped outside the orchestrator before"]
    assert [s.label for s in runner.spawned] == ["fwd"]


def test_unexpected_exit_0_is_restarted_as_exited_not_crashed(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path)
    orch.tick()
    (p,) = runner.nfs
    p.popen.returncode = 0  # no nf.down 'stopped': it did not deregister first
    clock.advance(3.0)
    orch.tick()
    assert lines == [f"exited: fwd exited with status 0 after 3.0 s without being asked to "
                     f"stop; restarting in 0.5 s (failure 1 in a row); see {p.log}"]
    clock.advance(0.5)
    orch.tick()
    assert lines[-1] == "start: fwd (pid 102): restart 1 after it exited with status 0"
    assert not [ln for ln in lines if ln.startswith("crashed")]


def test_with_events_an_exit_0_waits_a_moment_for_sluiceds_word(tmp_path: Path) -> None:
    orch, runner, sluiced, clock, lines = make(tmp_path, nfs=[
        {"name": "fwd", "program": "sluice-forward", "service": "fwd", "replicas": 2}])
    orch.subscribed = True  # as when the event subscription is live
    orch.tick()
    a, b = runner.nfs
    a.popen.returncode = b.popen.returncode = 0
    orch.tick()
    assert lines == []  # nf.down may come just after the exit is seen
    clock.advance(0.5)
    orch.events.put(_nf_down(a.pid, "stopped"))
    orch.tick()
    assert [ln.split(" (pid")[0] for ln in lines] == ["stopped: fwd.1"]
    orch.events.put(_nf_down(b.pid, "died"))  # no word of a clean stop for b
    clock.advance(0.6)
    orch.tick()
    assert lines[-1].startswith("exited: fwd.2 exited with status 0 after ")
    assert not runner.spawned  # b after its backoff; a not at all
    clock.advance(0.5)
    orch.tick()
    assert [s.label for s in runner.spawned] == ["fwd.2"]


def test_status_says_whether_the_event_subscription_is_live(tmp_path: Path) -> None:
    """subscribed: true once sluiced has answered subscribe, false when the
    connection breaks (until it subscribes again)."""
    import json
    import socket
    import threading
    import time

    path = tmp_path / "t.sock"
    conns: list[socket.socket] = []

    def listen() -> socket.socket:
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(str(path))
        srv.listen(4)

        def serve() -> None:
            while True:
                try:
                    c, _ = srv.accept()
                except OSError:
                    return
                req = json.loads(c.makefile().readline())
                assert req["method"] == "subscribe"
                # kept open: events would come on it (listed before the answer,
                # which the test may see before this thread runs on)
                conns.append(c)
                c.sendall(json.dumps({"jsonrpc": "2.0", "id": req["id"],
                                      "result": {"subscribed": True}}).encode() + b"\n")

        threading.Thread(target=serve, daemon=True).start()
        return srv

    def wait_for(want: bool) -> None:
        deadline = time.monotonic() + 10
        while orch.status()["subscribed"] is not want:
            assert time.monotonic() < deadline, f"status never said subscribed: {want}"
            time.sleep(0.02)

    orch, runner, sluiced, clock, lines = make(
        tmp_path, node={"name": "t", "socket": str(path)})
    orch._subscribe = True
    assert orch.status()["subscribed"] is False
    srv = listen()
    with orch:
        wait_for(True)
        srv.close()
        path.unlink()  # sluiced gone: the subscription breaks and cannot be made again
        conns[0].close()
        wait_for(False)
        time.sleep(0.6)  # it tried again (every 0.5 s) and failed
        assert orch.status()["subscribed"] is False
        srv = listen()  # back: subscribed again
        wait_for(True)
        assert len(conns) == 2
    srv.close()
    assert orch.status()["subscribed"] is False


def test_one_way_to_say_how_a_process_ended() -> None:
    """The orchestrator's lines (crashed: ...) and the launcher's errors say
    an exit with the same function, so they cannot drift apart."""
    from sluice import launch, orchestrator

    assert orchestrator._status_text is launch._status_text
    assert [launch._status_text(rc) for rc in (-signal.SIGKILL, -200, 0, 3)] == [
        "was killed by SIGKILL", "was killed by signal 200", "exited with status 0",
        "exited with status 3"]
