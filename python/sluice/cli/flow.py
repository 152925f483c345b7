"""sluice flow: the flow table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .apps import flow_app
from .common import (
    DstOpt,
    ProtoOpt,
    SrcOpt,
    _call,
    _match,
    _print_json,
    errors,
    fail,
    on_node,
    print_table,
)

FGraphOpt = typer.Option(None, "--graph", "-g", help="Flows of this graph.")
FPortOpt = typer.Option(None, "--port", help="Flows with this source or destination port "
                                             "(N or N-M).")
FServiceOpt = typer.Option(None, "--service", help="Flows pinned to an instance of this "
                                                   "service.")
FInPortOpt = typer.Option(None, "--in-port", help="Flows whose first packet came in on this "
                                                  "port.")


def _flow_filters(command: str, graph: str | None, proto: str | None, src: str | None,
                  dst: str | None, port: str | None, service: str | None,
                  in_port: str | None = None) -> dict[str, Any]:
    """flow.list / flow.delete filters. sluiced matches a filter against both
    directions of a flow, so ``dport: N`` finds the flows with N as either port."""
    params = _match(command, {"proto": proto, "src": src, "dst": dst, "port": port})
    if "port" in params:
        params["dport"] = params.pop("port")
    if graph is not None:
        params["graph"] = graph
    if service is not None:
        params["service"] = service
    if in_port is not None:
        params["in_port"] = in_port
    return params


def _flow_state(f: dict[str, Any]) -> str:
    parts = [f"{s}#{i}" for s, i in (f.get("pins") or {}).items()]
    for o in f.get("overrides") or []:
        if o.get("type") == "skip":
            parts.append(f"skip {o.get('service')}")
        else:
            parts.append(f"{o.get('service')} default {o.get('to')}")
    return ", ".join(parts)


def _idle(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return "-"
    return f"{ms:.0f} ms" if ms < 10000 else f"{ms / 1000:.0f} s"


@flow_app.command("list")
@errors
@on_node
def flow_list(graph: str = FGraphOpt, proto: str = ProtoOpt, src: str = SrcOpt,
              dst: str = DstOpt, port: str = FPortOpt, service: str = FServiceOpt,
              in_port: str = FInPortOpt,
              limit: int = typer.Option(100, "--limit", "-l", min=0, max=100000,
                                        help="Show at most this many flows (0: only count "
                                             "them)."),
              *, node: str | None, socket: Path | None, as_json: bool,
              timeout: float) -> None:
    """List flows of the flow table (at most --limit; says how many more matched)."""
    params = {"limit": limit,
              **_flow_filters("flow list", graph, proto, src, dst, port, service, in_port)}
    res = _call(node, socket, "flow.list", timeout, **params)
    if as_json:
        _print_json(res)
        return
    flows = res.get("flows", [])
    if flows:
        # the flow key and the pins wrap between words; in a narrow terminal
        # idle, then the pins, then the graph are left out rather than cut
        print_table([("id", "right", False), ("flow", "left", True), ("graph", "left", False),
                     ("pkts", "right", False), ("bytes", "right", False),
                     ("idle", "right", False), ("pins, overrides", "left", True)],
                    [[str(f.get("id")), str(f.get("key")), str(f.get("graph")),
                      f"{f.get('pkts', 0):,}", f"{f.get('bytes', 0):,}",
                      _idle(f.get("idle_ms")), _flow_state(f)] for f in flows],
                    drop_order=["idle", "pins, overrides", "graph"],
                    note="`sluice flow get ID` shows them")
    total, matched = res.get("total", len(flows)), res.get("matched", len(flows))
    table = f" ({total:,} in the table)" if len(params) > 1 else ""
    what = "matching flow(s)" if table else "flow(s)"
    if limit and (res.get("truncated") or len(flows) < matched):
        typer.echo(f"{len(flows):,} of {matched:,} {what} shown{table}; --limit N shows more")
    else:
        typer.echo(f"{matched:,} {what}{table}")


@flow_app.command("get")
@errors
@on_node
def flow_get(flow_id: int = typer.Argument(None, metavar="[ID]", help="The flow (flow list)."),
             key: str = typer.Option(None, "--key", "-k",
                                     help="The flow by its key, as flow list shows it: "
                                          "'tcp 10.0.0.1:1234 > 10.0.0.2:80'."),
             *, node: str | None, socket: Path | None, as_json: bool,
             timeout: float) -> None:
    """Show one flow: its graph, counters, pinned instances and overrides."""
    if (flow_id is None) == (key is None):
        raise fail("sluice flow get: give a flow ID or --key KEY (one of them)")
    params = {"id": flow_id} if flow_id is not None else {"key": key}
    f = _call(node, socket, "flow.get", timeout, **params)
    if as_json:
        _print_json(f)
        return
    lines = [f"flow {f.get('id')}: {f.get('key')}",
             f"  graph:     {f.get('graph')}",
             f"  packets:   {f.get('pkts', 0):,}",
             f"  bytes:     {f.get('bytes', 0):,}",
             f"  idle:      {_idle(f.get('idle_ms'))}"]
    pins = f.get("pins") or {}
    lines.append("  pinned:    " + (", ".join(f"{s} -> instance {i}" for s, i in pins.items())
                                    or "-"))
    ov = []
    for o in f.get("overrides") or []:
        if o.get("type") == "skip":
            ov.append(f"skip {o.get('service')}")
        else:
            ov.append(f"default of {o.get('service')} is {o.get('to')}")
    lines.append("  overrides: " + (", ".join(ov) or "-"))
    typer.echo("\n".join(lines))


@flow_app.command("delete")
@errors
@on_node
def flow_delete(flow_id: int = typer.Argument(None, metavar="[ID]", help="The flow."),
                key: str = typer.Option(None, "--key", "-k",
                                        help="The flow by its key, as flow list shows it: "
                                             "'tcp 10.0.0.1:1234 > 10.0.0.2:80'."),
                all_flows: bool = typer.Option(False, "--all", help="Every flow."),
                graph: str = FGraphOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                dst: str = DstOpt, port: str = FPortOpt, service: str = FServiceOpt,
                in_port: str = FInPortOpt,
                *, node: str | None, socket: Path | None, as_json: bool,
                timeout: float) -> None:
    """Forget flows: their next packet is classified again (rules, else the chain)."""
    filters = _flow_filters("flow delete", graph, proto, src, dst, port, service, in_port)
    given = [flow_id is not None, key is not None, all_flows, bool(filters)]
    if sum(given) != 1:
        raise fail("sluice flow delete: say which flows: a flow ID, --key KEY, --all, or "
                   "filters (--graph, --proto, --src, --dst, --port, --service, --in-port); "
                   "one of the four")
    params: dict[str, Any] = ({"id": flow_id} if flow_id is not None
                              else {"key": key} if key is not None
                              else {"all": True} if all_flows else filters)
    res = _call(node, socket, "flow.delete", timeout, **params)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"deleted {res.get('deleted', 0):,} flow(s)")
