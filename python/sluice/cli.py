"""The `sluice` command line.

Every command is a thin layer over the client, the deployment loader, the
launcher or the trace generator. Errors print one clear line (no traceback)
on stderr and exit with status 1.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .client import SOCKET_DIR, Client, SluiceError

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="sluice",
    help="Sluice: run network functions as processes and steer packets through them.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
chain_app = typer.Typer(help="Show or replace the default chain of a running node.",
                        no_args_is_help=True)
nf_app = typer.Typer(help="The NF instances of a running node.", no_args_is_help=True)
trace_app = typer.Typer(help="Packet captures for the demo and the benchmarks.",
                        no_args_is_help=True)
app.add_typer(chain_app, name="chain")
app.add_typer(nf_app, name="nf")
app.add_typer(trace_app, name="trace")


def fail(message: str) -> typer.Exit:
    """Prints message on stderr; returns the Exit(1) to raise."""
    typer.echo(message, err=True)
    return typer.Exit(1)


def errors(fn: F) -> F:
    """Turns the package's errors into one line on stderr and exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from .traces import TraceError

        try:
            return fn(*args, **kwargs)
        except (SluiceError, TraceError) as e:
            raise fail(str(e)) from None
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            raise fail(f"{where}{e.strerror or e}") from None

    return wrapper  # type: ignore[return-value]


# -- options shared by the commands that talk to a running node ------------------

NodeOpt = typer.Option(None, "--node", "-n",
                       help="Node name (its sluiced --name). Default: $SLUICE_NODE, else "
                            "the only node running, else 'sluice'.")
SocketOpt = typer.Option(None, "--socket", help="Control socket path (overrides --node).")
JsonOpt = typer.Option(False, "--json", help="Print the raw JSON result.")
TimeoutOpt = typer.Option(5.0, "--timeout", help="Seconds to wait for sluiced.")


def default_node() -> str:
    env = os.environ.get("SLUICE_NODE")
    if env:
        return env
    try:
        socks = sorted(SOCKET_DIR.glob("*.sock"))
    except OSError:
        socks = []
    return socks[0].stem if len(socks) == 1 else "sluice"


def _client(node: str | None, socket: Path | None, timeout: float = 5.0) -> Client:
    return Client(node or default_node(), socket, timeout=timeout)


def _call(node: str | None, socket: Path | None, method: str, timeout: float = 5.0,
          **params: Any) -> Any:
    with _client(node, socket, timeout) as c:
        return c.call(method, **params)


def _print_json(v: Any) -> None:
    typer.echo(json.dumps(v, indent=2, sort_keys=False))


# -- deployments ------------------------------------------------------------------------

@app.command()
@errors
def up(deployment: Path = typer.Argument(..., help="Deployment file (docs/deployment.md)."),
       duration: float = typer.Option(None, "--duration", "-d", min=0.0,
                                      help="Stop after this many seconds (default: Ctrl-C)."),
       log_dir: Path = typer.Option(None, "--log-dir",
                                    help="Run folder for the logs (default /tmp/sluice-NODE)."),
       api: str = typer.Option(None, "--api", metavar="HOST:PORT",
                               help="Also serve the REST API and /metrics there (docs/api.md)."),
       api_token: str = typer.Option(None, "--api-token", envvar="SLUICE_API_TOKEN",
                                     help="Token the API requires (needed unless HOST is "
                                          "loopback).")
       ) -> None:
    """Start sluiced, the NFs and the chain; show live statistics; stop on Ctrl-C."""
    from .launch import run_up

    raise typer.Exit(run_up(deployment, duration=duration or None, log_dir=log_dir,
                            api=api, api_token=api_token))


@app.command()
@errors
def check(deployment: Path = typer.Argument(..., help="Deployment file to validate.")) -> None:
    """Validate a deployment file offline (schema, names, programs, files, cores)."""
    from .deploy import load_deployment

    dep = load_deployment(deployment)
    typer.echo(f"{deployment}: ok: {dep.describe()}")


# -- a running node ---------------------------------------------------------------------

@app.command()
@errors
def status(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
           timeout: float = TimeoutOpt) -> None:
    """Show the status of a running sluiced."""
    st = _call(node, socket, "status", timeout)
    if as_json:
        _print_json(st)
        return
    for k, v in st.items():
        if isinstance(v, list):
            v = ", ".join(map(str, v))
        typer.echo(f"{k + ':':14} {v}")


@app.command()
@errors
def stats(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
          timeout: float = TimeoutOpt) -> None:
    """Show the counters of a running sluiced (ports, NFs, drops by reason)."""
    from .launch import stats_tables, summary_text

    st = _call(node, socket, "stats", timeout)
    if as_json:
        _print_json(st)
        return
    con = Console()
    con.print(stats_tables(st))
    con.print(summary_text(st), markup=False, highlight=False)


@chain_app.command("get")
@errors
def chain_get(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
    """Show the default chain."""
    ch = _call(node, socket, "chain.get", timeout)
    if as_json:
        _print_json(ch)
        return
    typer.echo(f"version {ch.get('version')}: {' -> '.join(ch.get('hops', [])) or '(none)'}")


@chain_app.command("set")
@errors
def chain_set(hops: list[str] = typer.Argument(
                  ..., help="Hops in order: services, port:NAME or drop "
                            "(separate arguments or one comma-separated list)."),
              node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
    """Replace the default chain, e.g. `sluice chain set firewall forward port:out`."""
    flat = [h.strip() for arg in hops for h in arg.split(",")]
    if any(not h for h in flat):
        raise fail(f"sluice chain set: empty hop in {' '.join(hops)!r}: list the hops, "
                   f"e.g. firewall,monitor,port:out")
    res = _call(node, socket, "chain.set", timeout, hops=flat)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"version {res.get('version')}: {' -> '.join(flat)}")


@nf_app.command("list")
@errors
def nf_list(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
            timeout: float = TimeoutOpt) -> None:
    """List the NF instances registered with sluiced."""
    nfs = _call(node, socket, "nf.list", timeout)
    if as_json:
        _print_json(nfs)
        return
    t = Table()
    for col in ("instance", "service", "program", "pid", "state", "mode", "rx ring", "tx ring"):
        t.add_column(col)
    for n in nfs:
        rx, tx = n.get("rx_ring") or {}, n.get("tx_ring") or {}
        t.add_row(str(n.get("instance")), f"{n.get('service')} ({n.get('service_id')})",
                  str(n.get("prog", "")), str(n.get("pid")), str(n.get("state")),
                  str(n.get("mode", "")), f"{rx.get('count', 0)}/{rx.get('size', 0)}",
                  f"{tx.get('count', 0)}/{tx.get('size', 0)}")
    Console().print(t)


# -- REST API ----------------------------------------------------------------------------

@app.command("api")
@errors
def api(node: str = NodeOpt, socket: Path = SocketOpt,
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Address to listen on; not loopback needs --token."),
        port: int = typer.Option(8080, "--port", min=1, max=65535, help="TCP port."),
        token: str = typer.Option(None, "--token", envvar="SLUICE_API_TOKEN",
                                  help="Require 'Authorization: Bearer TOKEN' (or "
                                       "'X-Sluice-Token') on every request."),
        timeout: float = TimeoutOpt) -> None:
    """Serve the REST API and Prometheus /metrics of a running node (docs/api.md)."""
    from .api import check_bind, create_app

    try:
        check_bind(host, token)
    except SluiceError as e:
        raise fail(f"sluice api: {e}") from None
    import uvicorn

    uvicorn.run(create_app(node or default_node(), socket, token, timeout=timeout),
                host=host, port=port, log_level="info")


# -- traces ------------------------------------------------------------------------------

@trace_app.command("gen")
@errors
def trace_gen(out: Path = typer.Argument(..., help="pcap file to write."),
              packets: int = typer.Option(None, "--packets", min=1,
                                          help="Packets (mix: 4096; --size: max(flows, 4096))."),
              flows: int = typer.Option(None, "--flows", min=1,
                                        help="Flows (mix: 512; --size: 1)."),
              seed: int = typer.Option(1, "--seed", help="Random seed; same seed, same bytes."),
              size: int = typer.Option(None, "--size",
                                       help="Fixed-size UDP frames of this many bytes instead "
                                            "of the HTTP-like mix (benchmarks).")) -> None:
    """Write a deterministic capture: the HTTP-like demo mix, or fixed-size UDP."""
    from .traces import generate

    typer.echo(generate(out, packets=packets, flows=flows, seed=seed, size=size))


# -- placement (the placement engine's own command) -----------------------------------------

def _register_place() -> None:
    """Registers the placement engineer's `place` command. Until
    python/sluice/placement/cli.py exists (or while it cannot be imported) a
    stub says so; the placement package is not imported before then, as it
    is slow to import."""
    if (Path(__file__).parent / "placement" / "cli.py").exists():
        try:
            from .placement.cli import place
        except ImportError as e:
            reason = f"sluice.placement.cli: {e}"
        else:
            app.command("place")(place)
            return
    else:
        reason = "python/sluice/placement/cli.py does not exist yet"

    @app.command("place", context_settings={"ignore_unknown_options": True,
                                            "allow_extra_args": True})
    def place_missing() -> None:
        """Plan which NF runs on which node (placement engine not available)."""
        raise fail(f"sluice place: the placement engine is not available ({reason})")


_register_place()


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"sluice {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=version_callback,
                                       is_eager=True, help="Print the version.")) -> None:
    """Sluice control plane."""


def main() -> None:
    """Entry point of the `sluice` command."""
    try:
        app()
    except SluiceError as e:  # raised outside a command body
        typer.echo(str(e), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
