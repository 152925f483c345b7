"""sluice rule: rules that send new flows to graphs."""

from __future__ import annotations

from pathlib import Path

import typer

from ..core.graph import format_match
from .apps import rule_app
from .common import (
    DportOpt,
    DstOpt,
    ProtoOpt,
    SportOpt,
    SrcOpt,
    _call,
    _client,
    _match,
    _print_json,
    _rule_text,
    errors,
    on_node,
    print_table,
)


@rule_app.command("add")
@errors
@on_node
def rule_add(graph: str = typer.Option(..., "--graph", "-g", help="The graph new flows go to."),
             priority: int = typer.Option(0, "--priority", "-p",
                                          help="-1000000..1000000; higher wins, then the "
                                               "older rule."),
             proto: str = ProtoOpt, src: str = SrcOpt, dst: str = DstOpt,
             sport: str = SportOpt, dport: str = DportOpt,
             in_port: str = typer.Option(None, "--in-port", help="The port packets arrive on."),
             *, node: str | None, socket: Path | None, as_json: bool,
             timeout: float) -> None:
    """Send new flows that match to a graph (flows already seen keep theirs)."""

    params = {"graph": graph, **_match("rule add", {
        "priority": priority, "proto": proto, "src": src, "dst": dst, "sport": sport,
        "dport": dport, "in_port": in_port})}
    params.setdefault("priority", priority)
    res = _call(node, socket, "rule.add", timeout, **params)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"rule {res.get('id')}: added: {_rule_text(params, format_match)}")


@rule_app.command("list")
@errors
@on_node
def rule_list(*, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """List the rules, the highest priority first as sluiced gives them."""

    with _client(node, socket, timeout) as c:
        rules = c.rules()
    if as_json:
        _print_json({"rules": rules})
        return
    if not rules:
        typer.echo("no rules (every new flow takes the chain)")
        return
    # the match wraps between words; numbers are never cut (print_table)
    print_table([("id", "right", False), ("priority", "right", False),
                 ("match", "left", True), ("graph", "left", False),
                 ("flows", "right", False)],
                [[str(r.get("id")), str(r.get("priority", 0)), format_match(r),
                  str(r.get("graph")), f"{r.get('flows', 0):,}"] for r in rules],
                drop_order=[])


@rule_app.command("remove")
@errors
@on_node
def rule_remove(rule_id: int = typer.Argument(..., metavar="ID", help="The rule (rule list)."),
                *, node: str | None, socket: Path | None, as_json: bool,
                timeout: float) -> None:
    """Remove a rule (flows it classified keep their graph until they end)."""
    res = _call(node, socket, "rule.remove", timeout, id=rule_id)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"rule {res.get('removed', rule_id)}: removed")
