"""The orchestrator's fakes: a fake sluiced, fake processes and a fake
clock (test_orchestrator.py, test_orchestrator_apply.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sluice.core.deploy import Deployment
from sluice.core.graph import to_rpc
from sluice.runtime.client import Client, ConnectionLost, RpcError
from sluice.runtime.orchestrator import Orchestrator


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
    sluiced.graphs = {g.name: to_rpc(g) for g in dep.all_graphs()}
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
