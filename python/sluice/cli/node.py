"""Deployments and the node: up, apply, check, status, stats, top, events, api."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

from ..core.deploy import load_deployment
from ..runtime.client import EVENT_FAMILIES, EVENT_KINDS, SluiceError
from ..runtime.launch import stats_tables, summary_text, up_console
from ..runtime.orchestrator import request
from ..top import run_top
from . import common
from .apps import app
from .common import (
    _call,
    _client,
    _duration,
    _node_name,
    _plain,
    _print_json,
    errors,
    fail,
    on_node,
)


@app.command()
@errors
def up(deployment: Path = typer.Argument(..., help="Deployment file (docs/deployment.md)."),
       duration: float = typer.Option(None, "--duration", "-d", min=0.0,
                                      help="Stop after this many seconds (default: Ctrl-C)."),
       log_dir: Path = typer.Option(None, "--log-dir",
                                    help="Run folder for the logs (default /tmp/sluice-NODE)."),
       api: str = typer.Option(None, "--api", metavar="HOST:PORT",
                               help="Also serve the REST API, /metrics and the dashboard "
                                    "there (docs/api.md)."),
       api_token: str = typer.Option(None, "--api-token", envvar="SLUICE_API_TOKEN",
                                     help="Token the API requires (needed unless HOST is "
                                          "loopback).")
       ) -> None:
    """Start sluiced, the NFs and the chain; keep them running (restarts, policies,
    `sluice apply`); show live statistics; stop on Ctrl-C.

    Exit status: 0 after --duration, 130 for Ctrl-C, 143 for SIGTERM, 129 when the
    terminal closes, 1 on errors (docs/deployment.md, "Stopping and exit status")."""
    from ..up import run_up

    # run by main(), the process exits next: a signal then changes nothing
    raise typer.Exit(run_up(deployment, duration=duration or None, log_dir=log_dir,
                            api=api, api_token=api_token, restore_signals=not common._IN_MAIN))


@app.command("apply")
@errors
@on_node
def apply_cmd(deployment: Path = typer.Argument(..., help="The changed deployment file."),
              *, as_json: bool) -> None:
    """Change a running `sluice up` to this file: NFs, replicas, graphs, rules, chain,
    policies (ports and node options need a restart)."""

    dep = load_deployment(deployment)  # a bad file never reaches the running node
    res = request(dep, "apply", path=str(deployment.resolve()))
    if as_json:
        _print_json(res)
        return
    for line in res.get("applied", []):
        typer.echo(line)


@app.command()
@errors
def check(deployment: Path = typer.Argument(..., help="Deployment file to validate.")) -> None:
    """Validate a deployment file offline (schema, names, programs, files, cores)."""

    dep = load_deployment(deployment)
    typer.echo(f"{deployment}: ok: {dep.describe()}")


# -- a running node ---------------------------------------------------------------------

@app.command()
@errors
@on_node
def status(*, node: str | None, socket: Path | None, as_json: bool,
           timeout: float) -> None:
    """Show the status of a running sluiced."""
    st = _call(node, socket, "status", timeout)
    if as_json:
        _print_json(st)
        return
    for k, v in st.items():
        if k.endswith("_s") and isinstance(v, int | float) and not isinstance(v, bool):
            k, v = k[:-2], _duration(v)  # uptime_s: 8.93115938576923 -> uptime: 8.9 s
        typer.echo(f"{k + ':':14} {_plain(v)}")


@app.command()
@errors
@on_node
def stats(*, node: str | None, socket: Path | None, as_json: bool,
          timeout: float) -> None:
    """Show the counters of a running sluiced (ports, NFs, drops by reason)."""

    st = _call(node, socket, "stats", timeout)
    if as_json:
        _print_json(st)
        return
    con = up_console()  # into a pipe or file: every column, not 80 wide
    con.print(stats_tables(st))
    con.print(summary_text(st), markup=False, highlight=False)


@app.command()
@errors
@on_node
def top(interval: float = typer.Option(1.0, "--interval", "-i", min=0.1, help="Seconds a frame."),
        once: bool = typer.Option(False, "--once", help="Print one frame and exit (scripts)."),
        iterations: int = typer.Option(None, "--iterations", min=1, help="Print N frames, exit."),
        as_json: bool = typer.Option(False, "--json", help="The rates as one JSON object a frame."),
        *, node: str | None, socket: Path | None, timeout: float) -> None:
    """Live rates of a running node: ports, NF instances, rings, edges, drops by reason."""

    raise typer.Exit(run_top(_client(node, socket, timeout), interval,
                             1 if once else iterations, as_json))


# -- events -------------------------------------------------------------------------------

def event_line(ev: dict[str, Any]) -> str:
    """An event in one line: ``HH:MM:SS.mmm KIND key=value ...`` (local time)."""
    ts = ev.get("ts")
    when = (datetime.fromtimestamp(ts).strftime("%H:%M:%S.%f")[:-3]
            if isinstance(ts, int | float) else "--:--:--.---")
    data = ev.get("data")
    if isinstance(data, dict):
        fields = " ".join(f"{k}={_event_value(v)}" for k, v in data.items())
    else:
        fields = json.dumps(data) if data is not None else ""
    return f"{when} {ev.get('kind')} {fields}".rstrip()


def _event_value(v: Any) -> str:
    """Plain strings and numbers as they are; the rest (and strings with
    spaces) as JSON, so that a line splits back into its fields."""
    if isinstance(v, str) and v and " " not in v and "=" not in v:
        return v
    if isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    return json.dumps(v)


@app.command()
@errors
@on_node
def events(kind: list[str] = typer.Option(None, "--kind", "-k",
                                          help="Only these kinds (nf.up) or families (flow); "
                                               "may be repeated (docs/graphs.md, Events)."),
           count: int = typer.Option(None, "--count", "-c", min=1,
                                     help="Stop after this many events (default: Ctrl-C)."),
           *, node: str | None, socket: Path | None,
           as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
           timeout: float) -> None:
    """Print the node's events as they happen (NFs, graphs, rules, flow requests, messages)."""

    kinds = list(kind or [])
    bad = [k for k in kinds if k not in EVENT_KINDS and k not in EVENT_FAMILIES]
    if bad:  # it would wait forever for events that never come
        raise fail("\n".join(
            f"sluice events: --kind {k}: sluiced sends no events of that kind; use a kind "
            f"({', '.join(EVENT_KINDS)}) or a family ({', '.join(EVENT_FAMILIES)})"
            for k in bad))
    shown = 0
    with _client(node, socket, timeout) as c:
        typer.echo(f"events of {c.socket_path} (Ctrl-C stops)", err=True)
        try:
            for ev in c.events():
                k = str(ev.get("kind"))
                if kinds and not any(k == x or k.startswith(x + ".") for x in kinds):
                    continue
                typer.echo(json.dumps(ev) if as_json else event_line(ev))
                shown += 1
                if count is not None and shown >= count:
                    return
        except KeyboardInterrupt:
            return


# -- REST API ----------------------------------------------------------------------------

@app.command("api")
@errors
@on_node
def api(*, node: str | None, socket: Path | None,
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Address to listen on; not loopback needs --token."),
        port: int = typer.Option(8080, "--port", min=1, max=65535, help="TCP port."),
        token: str = typer.Option(None, "--token", envvar="SLUICE_API_TOKEN",
                                  help="Require 'Authorization: Bearer TOKEN' (or "
                                       "'X-Sluice-Token') on every request."),
        timeout: float,
        max_body_kb: int = typer.Option(1024, "--max-body-kb", min=1, max=1 << 20,
                                        help="Largest request body, in KiB; a larger one "
                                             "is refused with 413.")) -> None:
    """Serve the REST API, Prometheus /metrics and the dashboard of a running node
    (docs/api.md)."""
    from ..api import base_url, check_bind, create_app, serve, urls

    try:
        check_bind(host, token)
    except SluiceError as e:
        raise fail(f"sluice api: {e}") from None
    serve(create_app(_node_name(node, socket), socket, token, timeout=timeout,
                     max_body=max_body_kb * 1024), host, port,
          banner=f"API: {urls(base_url(host, port))}")
