"""How the orchestrator applies the control part of an edited deployment
(graphs, chain, rules) and undoes it when sluiced refuses a step (runtime
layer: it talks to sluiced through the orchestrator's client).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.deploy import Deployment
from ..core.errors import SluiceError
from ..core.graph import batch_culprit, format_match, to_rpc
from .client import METHODS, Client, RpcError, command_text, rule_build_seconds


class OrchestratorError(SluiceError):
    """An apply that was refused or failed, or no orchestrator to talk to."""


class Applier(Protocol):
    """What an apply reads and changes of the orchestrator."""

    client: Client
    run: Any  # its .rules: [(rule params, id)], what sluiced has
    resync: bool
    stale_graphs: set[str]

    def say(self, action: str, text: str, **data: Any) -> None: ...

    def _rollback(self, snapshot: dict[Any, Any], old: Deployment) -> None: ...


@dataclass
class Undo:
    """Control steps an apply made (one, or the rules of one batch), and the
    call that undoes them all."""

    texts: list[str]  # ["graph g added (version 2)"], oldest first
    # raises SluiceError; returns what it did for each text ("" if not worth saying)
    undo: Callable[[], list[str]]
    leaves: str | None = None  # a graph left in sluiced if the undo fails


@dataclass
class ControlLog:
    """The control steps of one apply: those made, and the one being made."""

    made: list[Undo] = field(default_factory=list)
    step: str = ""  # the change being made, in the words of the file (the chain (a -> b))
    leaves: str | None = None  # the graph that call may add


def _without_method(e: SluiceError) -> str:
    """The client's error without the method it begins with (``chain.set:
    connection to ... lost``): apply lines say the change, not the call."""
    method, sep, rest = str(e).partition(": ")
    return rest if sep and method in METHODS else str(e)


def _rule_ids(ids: list[int]) -> str:
    """Rule ids as a step names them: ``rule 7``, ``rules 7, 8 and 9``, or for
    many ``500 rules (7, 8, ..., 506)``."""
    if len(ids) == 1:
        return f"rule {ids[0]}"
    if len(ids) <= 8:
        return f"rules {', '.join(map(str, ids[:-1]))} and {ids[-1]}"
    return f"{len(ids)} rules ({ids[0]}, {ids[1]}, ..., {ids[-1]})"


class ControlApply:
    """The control part of one apply: graphs, chain and rules, each step made
    going into ``log`` with its undo (``run()`` makes them all).

    ``orch.run.rules`` follows each step (it is always what sluiced has, as
    far as its answers tell). With ``orch.resync`` every graph and the chain
    are pushed even if unchanged, and ``orch.stale_graphs`` are removed.

    The rules a step removes go in one ``rule.remove {ids}``, those it adds
    in one ``rule.add {rules}`` (and so do their undos): sluiced builds its
    classifier once per call, and one call per rule is O(N^2) for N rules."""

    def __init__(self, orch: Applier, old: Deployment, new: Deployment,
                 note: Callable[[str, str], None], log: ControlLog):
        self.orch, self.old, self.new, self.note, self.log = orch, old, new, note, log
        self.rules = orch.run.rules
        self.resync = orch.resync
        self.old_graphs = {g.name: to_rpc(g) for g in old.all_graphs()}
        self.new_graphs = {g.name: to_rpc(g) for g in new.all_graphs()}
        self.gone = [n for n in self.old_graphs if n not in self.new_graphs] + \
            sorted(orch.stale_graphs - self.old_graphs.keys() - self.new_graphs.keys())
        self.pos = {rid: i for i, (_, rid) in enumerate(self.rules)}  # a rule's place before

    def run(self) -> None:
        self._graphs()
        self._chain()
        wanted, with_graph = self._remove_rules()
        self._add_rules(wanted)
        self._remove_graphs(with_graph)

    # -- calls and their undos ---------------------------------------------------------

    def call(self, method: str, **params: Any) -> Any:
        client = self.orch.client
        if method not in ("rule.add", "rule.remove", "graph.remove"):
            return client.call(method, **params)
        # these rebuild sluiced's rule classifier: seconds for thousands
        n = len(self.rules) + len(params.get("rules", []))
        with client.patience(rule_build_seconds(n)):
            return client.call(method, **params)

    def made(self, action: str, text: str, undo: Callable[[], str],
             leaves: str | None = None) -> None:
        self.note(action, text)
        self.log.made.append(Undo([f"{action} {text}"], lambda: [undo()], leaves))

    def at(self, what: str, leaves: str | None = None) -> None:
        self.log.step, self.log.leaves = what, leaves

    def drop_rules(self, ids: list[int]) -> None:
        drop = set(ids)
        self.rules[:] = [r for r in self.rules if r[1] not in drop]

    def add_rules_back(self, gone_rules: list[tuple[dict[str, Any], int]]
                       ) -> Callable[[], list[str]]:
        rules, pos = self.rules, self.pos

        def undo() -> list[str]:
            # in their old order, so that rules of equal priority keep theirs
            order = sorted(gone_rules, key=lambda r: pos.get(r[1], len(pos)))
            res = self.call("rule.add", rules=[params for params, _ in order])
            new_ids: dict[int, int] = {}
            for k, (params, rid) in enumerate(order):
                new_id = new_ids[rid] = int(res["first_id"]) + k
                pos[new_id] = pos.get(rid, len(pos))
                i = sum(1 for _, r in rules if pos.get(r, len(pos)) < pos[new_id])
                rules.insert(i, (params, new_id))
            return [f"added again as rule {new_ids[rid]}" for _, rid in gone_rules]
        return undo

    def remove_rules(self, ids: list[int]) -> Callable[[], list[str]]:
        def undo() -> list[str]:
            self.call("rule.remove", ids=ids)
            self.drop_rules(ids)
            return [""] * len(ids)
        return undo

    def remove_graph(self, name: str) -> Callable[[], str]:
        def undo() -> str:
            self.call("graph.remove", name=name)
            return ""
        return undo

    def apply_graph(self, params: dict[str, Any], what: str) -> Callable[[], str]:
        def undo() -> str:
            return f"{what} (version {self.call('graph.apply', **params).get('version')})"
        return undo

    def set_chain_back(self) -> str:
        self.call("chain.set", hops=list(self.old.chain))
        return f"back to {' -> '.join(self.old.chain)}"

    # -- the steps, in order -------------------------------------------------------------

    def _graphs(self) -> None:
        for name, params in self.new_graphs.items():
            before = self.old_graphs.get(name)
            if before == params and not self.resync:
                continue
            self.at(f"the graph {name}", None if before else name)
            res = self.call("graph.apply", **params)
            how = "added" if before is None else "changed" if before != params else \
                "pushed again"
            if before is None:
                self.made("graph", f"{name} added (version {res.get('version')})",
                          self.remove_graph(name), leaves=name)
            else:
                self.made("graph", f"{name} {how} (version {res.get('version')})",
                          self.apply_graph(before, "old graph applied again"))

    def _chain(self) -> None:
        old, new = self.old, self.new
        if list(old.chain) != list(new.chain) or self.resync:
            hops = " -> ".join(new.chain)
            self.at(f"the chain ({hops})")
            self.call("chain.set", hops=list(new.chain))
            self.made("chain", hops + ("" if list(old.chain) != list(new.chain)
                                       else " (pushed again)"), self.set_chain_back)

    def _remove_rules(self) -> tuple[list[str], dict[str, list[str]]]:
        """Removes the rules no longer in the file; returns the new file's rules
        sluiced does not have yet, and the lines of the rules that go with
        their graph (said when the graph goes)."""
        rules, log = self.rules, self.log
        wanted = [json.dumps(r, sort_keys=True) for r in self.new.rule_params()]
        with_graph: dict[str, list[str]] = {}  # graph -> its rules' lines
        removing: list[tuple[dict[str, Any], int, str]] = []  # (params, id, line)
        for params, rid in list(rules):
            k = json.dumps(params, sort_keys=True)
            if k in wanted:
                wanted.remove(k)
                continue
            text = f"{rid} removed ({format_match(params)} -> graph {params['graph']})"
            if params["graph"] in self.gone:  # it goes with its graph below, said then
                with_graph.setdefault(params["graph"], []).append(text)
                continue
            removing.append((params, rid, text))
        if not removing:
            return wanted, with_graph
        ids = [rid for _, rid, _ in removing]
        self.at(f"the removal of {_rule_ids(ids)}")
        gone_ids: set[int] = set()
        try:
            self.call("rule.remove", ids=ids)
        except RpcError:
            # all or none: if sluiced no longer has some of them (gone with
            # their graph, or removed by someone else), they are gone and
            # the others are removed again; if it has them all, it refused
            step = log.step
            self.at(f"the list of rules (read to see which of {_rule_ids(ids)} sluiced still "
                    f"has, after it refused their removal)")
            have = {r.get("id") for r in self.orch.client.rules()}
            if all(rid in have for rid in ids):
                self.at(step)
                raise
            gone_ids = {rid for rid in ids if rid not in have}
            self.drop_rules(list(gone_ids))
            left = [rid for rid in ids if rid in have]
            if left:
                self.at(f"the removal of {_rule_ids(left)}")
                self.call("rule.remove", ids=left)
        self.drop_rules(ids)
        for _, _, text in removing:
            self.note("rule", text)
        removed = [(params, rid, text) for params, rid, text in removing
                   if rid not in gone_ids]
        if removed:
            log.made.append(Undo([f"rule {text}" for _, _, text in removed],
                                 self.add_rules_back([(p, rid) for p, rid, _ in removed])))
        return wanted, with_graph

    def _add_rules(self, wanted: list[str]) -> None:
        if not wanted:
            return
        adding = [json.loads(k) for k in wanted]
        whats = [f"priority {p['priority']}, {format_match(p)} -> graph {p['graph']}"
                 for p in adding]
        self.at(f"the rule ({whats[0]})" if len(adding) == 1 else
                f"the {len(adding)} new rules")
        try:
            res = self.call("rule.add", rules=adding)
        except RpcError as e:
            c = batch_culprit(e.message, len(adding))
            if c is None:
                raise  # the whole batch (too many rules, say)
            # the rule sluiced names, in the words of a refused rule.add of it
            self.at(f"the rule ({whats[c[0]]})")
            raise RpcError(e.code, c[1], e.data, e.method) from None
        added = [(params, int(res["first_id"]) + k) for k, params in enumerate(adding)]
        self.rules.extend(added)
        for (_, rid), what in zip(added, whats, strict=True):
            self.note("rule", f"{rid} added ({what})")
        self.log.made.append(Undo([f"rule {rid} added ({what})"
                                   for (_, rid), what in zip(added, whats, strict=True)],
                                  self.remove_rules([rid for _, rid in added])))

    def _remove_graphs(self, with_graph: dict[str, list[str]]) -> None:
        for name in self.gone:
            with_it = [r for r in self.rules if r[0]["graph"] == name]
            self.at(f"the removal of graph {name}")
            if name not in self.old_graphs:  # left by an apply that could not be undone
                with contextlib.suppress(RpcError):  # it may not have made it
                    self.call("graph.remove", name=name)
                    self.note("graph", f"{name} removed (left by an apply that could not be "
                              f"undone)")
                self.orch.stale_graphs.discard(name)
                self.drop_rules([rid for _, rid in with_it])
                continue
            res = self.call("graph.remove", name=name)
            for text in with_graph.get(name, []):
                self.note("rule", text)
            self.drop_rules([rid for _, rid in with_it])
            if with_it:
                self.log.made.append(Undo([f"rule {rid} removed with graph {name}"
                                           for _, rid in with_it], self.add_rules_back(with_it)))
            self.made("graph", f"{name} removed ({res.get('rules_removed', 0)} rule(s) with it)",
                      self.apply_graph(self.old_graphs[name], "applied again"))


def undo_apply(orch: Applier, e: SluiceError, log: ControlLog, nf_done: list[str],
               snapshot: dict[Any, Any], old: Deployment, src: str) -> OrchestratorError:
    """Undoes the control steps of ``log`` (newest first), then the NF part;
    returns the error that says what was refused and what was undone."""
    if isinstance(e, RpcError):
        lines = [f"{src}: sluiced refused {log.step}: {command_text(e.message)}"]
    else:  # no answer: the step may have been made
        lines = [f"{src}: sluiced did not answer about {log.step}, so it may or may not "
                 f"have been made: {_without_method(e)}"]
        orch.resync = True
        if log.leaves:
            orch.stale_graphs.add(log.leaves)
    results: list[str] = []
    failed = False
    for u in reversed(log.made):
        try:
            whats = u.undo()
        except SluiceError as err:
            failed = orch.resync = True
            if u.leaves:
                orch.stale_graphs.add(u.leaves)
            why = (f"sluiced refused it: {command_text(err.message)}"
                   if isinstance(err, RpcError) else f"no answer: {_without_method(err)}")
            for text in reversed(u.texts):  # a batch is undone all or none
                results.append(f"not undone: {text}: {why}")
                orch.say("undo-failed", f"{text}: {why}")
            continue
        for text, what in reversed(list(zip(u.texts, whats, strict=True))):
            line = text + (f": {what}" if what else "")
            results.append(f"undone: {line}")
            orch.say("undo", line)
    for d in reversed(nf_done):
        action, text = d.split(": ", 1)
        results.append(f"undone: {action} {text} (its new instances stop)")
    orch._rollback(snapshot, old)
    if failed:
        lines.append(f"the apply could not be undone in full: the NFs run as "
                     f"{old.source} says, but sluiced's graphs, chain and rules may "
                     f"not; the next `sluice apply` (of either file) pushes them all "
                     f"again:")
    elif orch.resync:
        lines.append(f"the apply was undone and the NFs run as {old.source} says, but "
                     f"sluiced's graphs, chain and rules may not; the next `sluice "
                     f"apply` (of either file) pushes them all again:")
    else:
        lines.append(f"the apply was undone: {old.source} runs as before; fix {src} "
                     f"and apply it again:")
    if not results:  # refused at its first step: a list of nothing would follow
        lines[-1] = lines[-1][:-1] + " (it had changed nothing yet)"
    return OrchestratorError("\n".join(lines + ["  " + r for r in results]))
