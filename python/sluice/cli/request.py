"""sluice flow request: cross-layer requests about flows, as NFs make them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..core.graph import format_match
from .apps import request_app
from .common import (
    DportOpt,
    DstOpt,
    ProtoOpt,
    SportOpt,
    SrcOpt,
    _call,
    _match,
    _print_json,
    errors,
    fail,
    on_node,
    print_table,
)

FlowKeyOpt = typer.Option(None, "--flow", "-f", help="One flow, by its key "
                                                     "('tcp 10.0.0.1:1234 > 10.0.0.2:80').")
AllFlowsOpt = typer.Option(False, "--all-flows", help="Every flow.")


def _request_flow(command: str, key: str | None, all_flows: bool,
                  fields: dict[str, Any]) -> dict[str, Any]:
    match = _match(command, fields)
    if sum([key is not None, all_flows, bool(match)]) != 1:
        raise fail(f"sluice {command}: say which flows: --flow KEY, a match (--proto, --src, "
                   f"--dst, --sport, --dport) or --all-flows; one of the three")
    return {"key": key} if key is not None else {"match": match}


def _request(node: str | None, socket: Path | None, timeout: float, as_json: bool,
             **params: Any) -> None:
    res = _call(node, socket, "flow.request", timeout, **params)
    if as_json:
        _print_json(res)
        return
    if params["type"] == "message":  # sluiced counts the instances it queued it for
        line = (f"message: queued for {res.get('applied', 0):,} instance(s) of "
                f"{params['service']} (their on_message gets it)")
        if res.get("note"):  # some instances' inboxes were full
            line += f"; {res['note']}"
    else:
        line = f"{params['type']}: applied to {res.get('applied', 0):,} flow(s)"
    if res.get("id") is not None:  # a request with a match: kept for new flows
        line += (f"; kept for new flows as request {res['id']} (sluice flow request "
                 f"remove {res['id']} forgets it)")
    typer.echo(line)


@request_app.command("skip-me")
@errors
@on_node
def request_skip_me(service: str = typer.Argument(..., help="The service to skip."),
                    flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                    dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                    all_flows: bool = AllFlowsOpt,
                    *, node: str | None, socket: Path | None, as_json: bool,
                    timeout: float) -> None:
    """SkipMe: the flows go past SERVICE, to its default next hop."""
    f = _request_flow("flow request skip-me", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="skip_me", flow=f, service=service)


@request_app.command("request-me")
@errors
@on_node
def request_request_me(service: str = typer.Argument(..., help="The service that asks."),
                       flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                       dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                       all_flows: bool = AllFlowsOpt,
                       *, node: str | None, socket: Path | None, as_json: bool,
                       timeout: float) -> None:
    """RequestMe: the flows are sent to SERVICE where the graph allows an edge to it."""
    f = _request_flow("flow request request-me", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="request_me", flow=f, service=service)


@request_app.command("change-default")
@errors
@on_node
def request_change_default(service: str = typer.Argument(..., help="The node whose default "
                                                                   "changes."),
                           to: str = typer.Option(..., "--to", help="Its new default: one of "
                                                                    "its next hops."),
                           flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                           dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                           all_flows: bool = AllFlowsOpt,
                           *, node: str | None, socket: Path | None,
                           as_json: bool, timeout: float) -> None:
    """ChangeDefault: for the flows, SERVICE's default next hop becomes --to."""
    f = _request_flow("flow request change-default", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="change_default", flow=f, service=service,
             to=to)


@request_app.command("message")
@errors
@on_node
def request_message(service: str = typer.Argument(..., help="The service it is for."),
                    key: str = typer.Argument(..., help="Message key."),
                    value: str = typer.Argument(..., help="Message value."),
                    *, node: str | None, socket: Path | None, as_json: bool,
                    timeout: float) -> None:
    """Message: send KEY and VALUE to the NFs of SERVICE (their on_message)."""
    _request(node, socket, timeout, as_json, type="message", service=service, key=key,
             value=value)


@request_app.command("list")
@errors
@on_node
def request_list(*, node: str | None, socket: Path | None, as_json: bool,
                 timeout: float) -> None:
    """List the requests with a match kept for new flows, the oldest first."""

    res = _call(node, socket, "flow.requests", timeout)
    if as_json:
        _print_json(res)
        return
    reqs = res.get("requests", [])
    if not reqs:
        typer.echo("no kept requests (a request with a match is kept for the flows to come)")
        return
    # the match wraps between words; ids are never cut (print_table)
    print_table([("id", "right", False), ("type", "left", False),
                 ("service", "left", False), ("to", "left", False),
                 ("match", "left", True)],
                [[str(r.get("id")), str(r.get("type")), str(r.get("service")),
                  str(r.get("to") or "-"), format_match(r.get("match") or {})]
                 for r in reqs],
                drop_order=[])


@request_app.command("remove")
@errors
@on_node
def request_remove(request_id: int = typer.Argument(..., metavar="ID",
                                                    help="The kept request (flow request "
                                                         "list)."),
                   *, node: str | None, socket: Path | None, as_json: bool,
                   timeout: float) -> None:
    """Forget a kept request: new flows no longer get it (live flows keep what it gave
    them until they end or `sluice flow delete` forgets them)."""
    res = _call(node, socket, "flow.request.remove", timeout, id=request_id)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"request {res.get('removed', request_id)}: removed (new flows no longer "
               f"get it; live flows keep what it gave them)")
