"""sluice graph: service graphs (apply, get, remove)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..core.deploy import load_graphs, read_yaml
from ..core.graph import batch_refusal, format_match, same_rule, to_rpc
from ..core.parallel import compile_data
from ..runtime.client import Client, RpcError, SluiceError, command_text, rule_build_seconds
from .apps import graph_app
from .common import (
    _call,
    _client,
    _duration,
    _method_and_text,
    _print_json,
    _rule_text,
    _say_note,
    errors,
    fail,
    on_node,
)


@graph_app.command("apply")
@errors
@on_node
def graph_apply(file: Path = typer.Argument(..., help="Graph file (or a deployment file): "
                                                      "its graphs and rules."),
                dry_run: bool = typer.Option(False, "--dry-run",
                                             help="Check the file and show the calls; send "
                                                  "nothing."),
                *, node: str | None, socket: Path | None, as_json: bool,
                timeout: float) -> None:
    """Apply the graphs of FILE (replacing those of the same name), then add its rules.

    A rule the node already has (same graph, priority and match) is not added
    again, so applying a file twice is harmless."""

    gs = load_graphs(file)
    rules = gs.rule_params()
    if dry_run:
        calls = ([{"method": "graph.apply", "params": to_rpc(g)} for g in gs.graphs]
                 + ([{"method": "rule.add", "params": {"rules": rules}}] if rules else []))
        if as_json:
            _print_json(calls)
            return
        typer.echo(f"{file}: ok: {gs.describe()}; nothing sent (--dry-run). The calls:")
        for call in calls:
            typer.echo(f"  {call['method']} {json.dumps(call['params'])}")
        return
    out: dict[str, list[Any]] = {"graphs": [], "rules": []}
    say = (lambda _m: None) if as_json else typer.echo
    with _client(node, socket, timeout) as c:
        for g in gs.graphs:
            try:
                res = c.call("graph.apply", **to_rpc(g))
            except SluiceError as e:
                why = (str(e) if as_json else
                       f"sluiced refused it: {command_text(e.message)}" if isinstance(e, RpcError)
                       else _method_and_text(e)[1])
                raise fail(f"{file}: graph '{g.name}': {why}") from None
            out["graphs"].append(res)
            say(f"graph {g.name}: applied (id {res.get('id')}, version {res.get('version')}), "
                f"{len(g.nodes)} node(s), entry {g.entry_node()}")
            if not as_json:
                _say_note(res, node, socket, timeout, c)
        existing = c.rules() if rules else []
        new: list[dict[str, Any]] = []
        for r in rules:
            have = next((x for x in existing if same_rule(x, r)), None)
            if have is not None:
                out["rules"].append({"id": have.get("id"), "added": False, **r})
                say(f"rule {have.get('id')}: already there: {_rule_text(r, format_match)}")
            else:
                new.append(r)
        # All new rules in one call: sluiced builds its classifier once for
        # them (one call per rule rebuilds it every time, O(N^2)).
        try:
            with c.patience(rule_build_seconds(len(existing) + len(new))):
                res = c.call("rule.add", rules=new) if new else {}
        except RpcError as e:
            msg = e.message if as_json else command_text(e.message)
            raise fail(f"{file}: {batch_refusal(new, msg)}") from None
        except SluiceError as e:
            raise fail(f"{file}: rules: {e if as_json else _method_and_text(e)[1]}") from None
        for k, r in enumerate(new):
            rid = int(res["first_id"]) + k
            out["rules"].append({"id": rid, "added": True, **r})
            say(f"rule {rid}: added: {_rule_text(r, format_match)}")
        names = {g.name for g in gs.graphs}
        for x in existing:
            if x.get("graph") in names and not any(same_rule(x, r) for r in rules):
                say(f"rule {x.get('id')}: not in {file}, kept: {_rule_text(x, format_match)} "
                    f"(`sluice rule remove {x.get('id')}` removes it)")
        if not as_json:
            say_live_flows(c)
    if as_json:
        _print_json(out)


def say_live_flows(c: Client) -> None:
    """After graphs or rules changed: the flows of the table keep the graph
    their first packet chose (rules apply to new flows), so say how many
    there are and how to have them classified again. Nothing when the table
    is empty or the count cannot be read (the change itself is made)."""
    try:
        flows = c.call("stats").get("flows") or {}
    except SluiceError:
        return
    live, timeout_ms = flows.get("live"), flows.get("timeout_ms")
    if not isinstance(live, int) or live <= 0:
        return
    idle = (f" (no packet for {_duration(timeout_ms / 1000)})"
            if isinstance(timeout_ms, int | float) else "")
    typer.echo(f"{live:,} existing flow(s) keep the graph they were classified into until "
               f"they end{idle} or are deleted: `sluice flow delete --all` (or with filters, "
               f"e.g. --graph NAME) has their next packet classified by the rules again")


def _graph_lines(g: dict[str, Any]) -> list[str]:
    nodes = g.get("nodes") or {}
    head = (f"graph {g.get('name')}: id {g.get('id')}, version {g.get('version')}, "
            f"entry {g.get('entry')}")
    if g.get("chain"):
        head += " (the chain: NFs may also send to any service)"
    width = max((len(n) for n in nodes), default=0)
    lines = [head]
    for n, hops in nodes.items():
        hops = list(hops or [])
        text = ", ".join([f"{hops[0]} (default)", *hops[1:]]) if hops else "(no next hop)"
        lines.append(f"  {n:<{width}} -> {text}")
    return lines


@graph_app.command("compile")
@errors
def graph_compile(file: Path = typer.Argument(..., help="Policy file (policy: name, match, "
                                                        "nfs, order, priority, position)."),
                  explain: bool = typer.Option(False, "--explain",
                                               help="Say, for every adjacent pair of the "
                                                    "chain, why it runs in parallel, with a "
                                                    "copy, or not at all."),
                  as_json: bool = typer.Option(False, "--json",
                                               help="Print the compiled graph, its chain and "
                                                    "the analysis as JSON.")) -> None:
    """Compile a policy into a service graph with parallel groups (issue 30).

    Checks the templates (Order, Priority, Position), runs the dependency
    analysis on the NFs' declared operations and prints the graph. Nothing
    is sent to a node; `sluice graph apply` takes the graph (`--json`'s
    "graph"), its groups run in sequence until sluiced runs them in parallel."""
    compiled = compile_data(read_yaml(file, "policy file"), str(file))
    if as_json:
        _print_json(compiled.to_json())
        return
    typer.echo("\n".join(compiled.explain() if explain else compiled.lines()))


@graph_app.command("get")
@errors
@on_node
def graph_get(name: str = typer.Argument(None, help="The graph (default: all)."),
              *, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """Show one graph, or all (the first next hop of a node is its default)."""
    params = {"name": name} if name is not None else {}
    res = _call(node, socket, "graph.get", timeout, **params)
    if as_json:
        _print_json(res)
        return
    graphs = [res] if name is not None else res.get("graphs", [])
    if not graphs:
        typer.echo("no graphs")
    for i, g in enumerate(graphs):
        if i:
            typer.echo("")
        typer.echo("\n".join(_graph_lines(g)))


@graph_app.command("remove")
@errors
@on_node
def graph_remove(name: str = typer.Argument(..., help="The graph."),
                 *, node: str | None, socket: Path | None, as_json: bool,
                 timeout: float) -> None:
    """Remove a graph and its rules; its flows go by the other rules or the chain."""
    res = _call(node, socket, "graph.remove", timeout, name=name)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"graph {res.get('removed', name)}: removed, with its "
               f"{res.get('rules_removed', 0)} rule(s)")
