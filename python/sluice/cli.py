"""The `sluice` command line.

Every command is a thin layer over the client, the deployment loader, the
launcher or the trace generator. Errors print one clear line (no traceback)
on stderr and exit with status 1.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import inspect
import json
import os
import re
import socket as _socket
import sys
from collections.abc import Callable
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .client import (
    COMMANDS,
    SOCKET_DIR,
    Client,
    ConnectError,
    RpcError,
    SluiceError,
    command_text,
    rule_build_seconds,
)

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
graph_app = typer.Typer(help="Service graphs of a running node (docs/graphs.md).",
                        no_args_is_help=True)
rule_app = typer.Typer(help="Rules that send new flows to graphs.", no_args_is_help=True)
flow_app = typer.Typer(help="The flow table of a running node.", no_args_is_help=True)
request_app = typer.Typer(help="Cross-layer requests about flows, as NFs make them "
                               "(SkipMe, RequestMe, ChangeDefault, Message).",
                          no_args_is_help=True)
lb_app = typer.Typer(help="Load balancing across the instances of a service.",
                     no_args_is_help=True)
rx_app = typer.Typer(help="Reading the ports of a running node: pause it (packets in flight "
                          "drain, so counters stand still) and resume it.",
                     no_args_is_help=True)
app.add_typer(chain_app, name="chain")
app.add_typer(graph_app, name="graph")
app.add_typer(rule_app, name="rule")
app.add_typer(flow_app, name="flow")
flow_app.add_typer(request_app, name="request")
app.add_typer(lb_app, name="lb")
app.add_typer(rx_app, name="rx")
app.add_typer(nf_app, name="nf")
app.add_typer(trace_app, name="trace")


def fail(message: str) -> typer.Exit:
    """Prints message on stderr; returns the Exit(1) to raise."""
    typer.echo(message, err=True)
    return typer.Exit(1)


def errors(fn: F) -> F:
    """Turns the package's errors into one line on stderr and exit status 1.

    sluiced's errors name its JSON-RPC methods (``rule.remove: no rule with
    id 4; see rule.list (JSON-RPC error -32000)``); a user typed a command,
    so they are said in commands (``sluice rule remove: no rule with id 4;
    see `sluice rule list```, see ``user_error``). With ``--json`` the error
    is printed as the client gives it, method, code and all."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from .traces import TraceError

        try:
            return fn(*args, **kwargs)
        except SluiceError as e:
            raise fail(str(e) if kwargs.get("as_json")
                       else option_text(user_error(e, command_name(wrapper)), fn)) from None
        except TraceError as e:
            raise fail(str(e)) from None
        except BrokenPipeError:
            # the reader went away (`sluice flow list | head`): nothing to say
            # ("Broken pipe" was), exit status 1 as rich's tables end then
            # (Console.on_broken_pipe, what the Python docs advise)
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(1) from None
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            raise fail(f"{where}{e.strerror or e}") from None

    return wrapper  # type: ignore[return-value]


# -- sluiced's method names, said as the commands that call them ----------------------

# COMMANDS (client.py): every method a command of this CLI calls, or whose
# list a command shows (service.list: `sluice nf list`; port.list: `sluice
# stats`), and that command, from client.METHODS, the one table the REST API
# says endpoints from. rx.pause, rx.resume and shutdown have no command:
# they stay as they are.

_PREFIX_RE = re.compile(r"([a-z_]+(?:\.[a-z_]+)*): ")


_PARAM_RE = re.compile(r"\bparam '(\w+)'")


def option_text(message: str, fn: Callable[..., Any]) -> str:
    """``message`` with the params of sluiced it names (``param
    'in_port'``) said as the options of ``fn``'s command that give them
    (``--in-port``); a param no option gives stays as it is."""
    options = {}
    for name, p in inspect.signature(fn).parameters.items():
        decls = getattr(p.default, "param_decls", None) or ()
        if isinstance(p.default, typer.models.OptionInfo):
            long = [d for d in decls if d.startswith("--")]
            options[name] = long[0] if long else "--" + name.replace("_", "-")
    return _PARAM_RE.sub(lambda m: options.get(m.group(1), m.group(0)), message)


def command_name(callback: Callable[..., Any]) -> str | None:
    """The command whose function is ``callback``: ``sluice rule remove``."""
    def walk(t: typer.Typer, path: list[str]) -> str | None:
        for c in t.registered_commands:
            if c.callback is callback:
                assert c.callback is not None
                return " ".join([*path, c.name or c.callback.__name__.lower().replace("_", "-")])
        for g in t.registered_groups:
            if g.typer_instance is not None and g.name is not None:
                found = walk(g.typer_instance, [*path, g.name])
                if found:
                    return found
        return None

    return walk(app, ["sluice"])


def _method_and_text(e: SluiceError) -> tuple[str | None, str]:
    """(the method ``e`` is about, what it says without it), said in
    commands; (None, str(e)) for an error about no method."""
    if isinstance(e, RpcError):
        return e.method, command_text(e.message)
    m = _PREFIX_RE.match(str(e))  # no answer, connection lost: "METHOD: ..."
    if m is None or m.group(1) not in COMMANDS:
        return None, str(e)
    return m.group(1), command_text(str(e)[m.end():])


def user_error(e: SluiceError, command: str | None = None) -> str:
    """The one line a user reads for ``e``: an error of sluiced
    (``RpcError``) or of the connection to it (no answer, connection lost)
    begins with ``command`` (the one being run; default: the method's)
    instead of the method, the methods it names are said as commands
    (``command_text``) and the JSON-RPC code is left out. Other errors are as
    they are."""
    method, text = _method_and_text(e)
    if method is None:
        return text
    hint = e.hint if isinstance(e, RpcError) else ""  # a close name (_call)
    return f"{command or COMMANDS.get(method, method)}: {text}{hint}"


# -- options shared by the commands that talk to a running node ------------------

NodeOpt = typer.Option(None, "--node", "-n",
                       help="Node name (its sluiced --name). Default: $SLUICE_NODE, else "
                            "the node running if only one runs (with several, say which).")
SocketOpt = typer.Option(None, "--socket", help="Control socket path (overrides --node).")
JsonOpt = typer.Option(False, "--json", help="Print the raw JSON result.")
TimeoutOpt = typer.Option(5.0, "--timeout", help="Seconds to wait for sluiced.")


def _listening(path: Path) -> bool | None:
    """Whether a sluiced listens on ``path``: False when no socket is there
    or nobody accepts on it (a file a stopped or killed sluiced left), None
    when it cannot be told (permission denied: not root)."""
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    except OSError as e:
        return True if e.errno == errno.EAGAIN else None  # EAGAIN: its queue is full
    finally:
        s.close()
    return True


def running_nodes() -> list[str]:
    """The nodes whose sluiced listens on SOCKET_DIR/NAME.sock, by name
    (those it cannot be told of, for want of permission, count as running:
    using one then says why it cannot be used)."""
    try:
        socks = sorted(SOCKET_DIR.glob("*.sock"))
    except OSError:
        return []
    return [p.stem for p in socks if _listening(p) is not False]


def default_node() -> str:
    """The node of a command given no --node (docs/graphs.md, "Applying
    graphs and rules"): $SLUICE_NODE; else the node running, when one is;
    'sluice' (sluiced's default --name) when none is; several running:
    SluiceError naming them."""
    env = os.environ.get("SLUICE_NODE")
    if env:
        return env
    running = running_nodes()
    if len(running) > 1:
        raise SluiceError(f"{len(running)} nodes are running ({', '.join(running)}): say "
                          f"which with --node NAME (or set SLUICE_NODE)")
    return running[0] if running else "sluice"


def _node_name(node: str | None, socket: Path | None) -> str:
    """--node, else (with --socket) the socket's name, else default_node()."""
    return node or (os.environ.get("SLUICE_NODE") or socket.stem if socket
                    else default_node())


def _client(node: str | None, socket: Path | None, timeout: float = 5.0) -> Client:
    """A client connected to the node of the command's --node/--socket (see
    default_node); when no sluiced listens there, the error names the nodes
    that run."""
    env = os.environ.get("SLUICE_NODE")
    how = "--node" if node else "$SLUICE_NODE" if env else "default"
    c = Client(_node_name(node, socket), socket, timeout=timeout)
    try:
        c.connect()
    except ConnectError:
        if socket is not None or _listening(c.socket_path) is not False:
            raise
        raise SluiceError(_not_running(c, how)) from None
    return c


def _not_running(c: Client, how: str) -> str:
    """Why nothing listens on ``c``'s socket, and which nodes do run.
    ``how`` the node was chosen: --node, $SLUICE_NODE or default."""
    running = [n for n in running_nodes() if n != c.node]
    if how == "default":  # none runs (one would have been chosen)
        return (f"no sluiced is running (none listens on a socket in {SOCKET_DIR}/): start "
                f"one with `sluice up DEPLOYMENT.yaml`")
    which = f"node '{c.node}'" + (" (from $SLUICE_NODE)" if how == "$SLUICE_NODE" else "")
    if not running:
        return (f"cannot connect to {c.socket_path}: no sluiced is running for {which}, nor "
                f"for any other node: start one with `sluice up DEPLOYMENT.yaml`")
    return (f"cannot connect to {c.socket_path}: no sluiced is running for {which}; "
            f"running: {', '.join(running)}: say which with --node NAME")


def _call(node: str | None, socket: Path | None, method: str, timeout: float = 5.0,
          **params: Any) -> Any:
    with _client(node, socket, timeout) as c:
        try:
            return c.call(method, **params)
        except RpcError as e:
            e.hint = _name_hint(c, e.message)
            raise


# sluiced's "no such name" errors, and the method that lists the names of that kind
_UNKNOWN_NAME = ((re.compile(r"\bno graph named '([^']*)'"), "graph.get"),
                 (re.compile(r"\bno service (\S+?);"), "service.list"),
                 (re.compile(r"\bno port named '([^']*)'"), "port.list"))


def _name_hint(c: Client, message: str) -> str:
    """For an error of sluiced about a name it does not know (``no graph
    named 'anomly'``), ``; did you mean 'anomaly'?`` when the node has a
    name close to it (a typo); else (or when the names cannot be read) ""."""
    from .graph import did_you_mean

    for pattern, method in _UNKNOWN_NAME:
        m = pattern.search(message)
        if m is None:
            continue
        try:
            res = c.call(method)
        except SluiceError:
            return ""
        items = res.get("graphs", []) if isinstance(res, dict) else res
        names = [x.get("name") for x in items if isinstance(x, dict)]
        return did_you_mean(m.group(1), [n for n in names if isinstance(n, str)])
    return ""


def _say_note(res: Any, node: str | None, socket: Path | None, timeout: float,
              c: Client | None = None) -> None:
    """Prints sluiced's ``note`` on a chain or graph it applied (services
    with no running instance), in the CLI's words, with the running service
    closest to each named one when it looks like a typo."""
    note = res.get("note") if isinstance(res, dict) else None
    if not isinstance(note, str):
        return
    named = re.findall(r"'([^']*)'", note.split(" no running instance")[0])
    close: list[str] = []
    try:
        if c is None:
            with _client(node, socket, timeout) as c2:
                svcs = c2.call("service.list")
        else:
            svcs = c.call("service.list")
        live = [x["name"] for x in svcs
                if isinstance(x, dict) and isinstance(x.get("name"), str) and x.get("instances")]
        for n in named:
            m = difflib.get_close_matches(n, live, n=1, cutoff=0.6)
            if m:
                close.append(f"'{m[0]}'" + (f" for '{n}'" if len(named) > 1 else ""))
    except SluiceError:
        pass
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    typer.echo(f"note: {command_text(note)}{hint}")


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
    from .up import run_up

    # run by main(), the process exits next: a signal then changes nothing
    raise typer.Exit(run_up(deployment, duration=duration or None, log_dir=log_dir,
                            api=api, api_token=api_token, restore_signals=not _IN_MAIN))


@app.command("apply")
@errors
def apply_cmd(deployment: Path = typer.Argument(..., help="The changed deployment file."),
              as_json: bool = JsonOpt) -> None:
    """Change a running `sluice up` to this file: NFs, replicas, graphs, rules, chain,
    policies (ports and node options need a restart)."""
    from .deploy import load_deployment
    from .orchestrator import request

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
        if k.endswith("_s") and isinstance(v, int | float) and not isinstance(v, bool):
            k, v = k[:-2], _duration(v)  # uptime_s: 8.93115938576923 -> uptime: 8.9 s
        typer.echo(f"{k + ':':14} {_plain(v)}")


def _plain(v: Any) -> str:
    """A status value as a person reads it: lists joined with commas, an
    object as its keys and values, one nested in a list in parentheses
    (mbufs: size 8191, ..., pools (name sl_demo_pkts, socket 0, ...))."""
    if isinstance(v, dict):
        return ", ".join(f"{x} {_plain(y)}" for x, y in v.items())
    if isinstance(v, list):
        return ", ".join(f"({_plain(x)})" if isinstance(x, dict) else _plain(x) for x in v)
    return str(v)


def _duration(s: float) -> str:
    """Seconds as a person reads them: 8.9 s, 42 s, 3 min 5 s, 2 h 14 min,
    3 d 4 h (the larger units truncated, not rounded)."""
    if s < 10:
        return f"{s:.1f}".rstrip("0").rstrip(".") + " s"
    n = int(s)
    if n < 60:
        return f"{n} s"
    if n < 3600:
        return f"{n // 60} min {n % 60} s"
    if n < 86400:
        return f"{n // 3600} h {n % 3600 // 60} min"
    return f"{n // 86400} d {n % 86400 // 3600} h"


@app.command()
@errors
def stats(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
          timeout: float = TimeoutOpt) -> None:
    """Show the counters of a running sluiced (ports, NFs, drops by reason)."""
    from .launch import stats_tables, summary_text, up_console

    st = _call(node, socket, "stats", timeout)
    if as_json:
        _print_json(st)
        return
    con = up_console()  # into a pipe or file: every column, not 80 wide
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
    _say_note(res, node, socket, timeout)


@nf_app.command("list")
@errors
def nf_list(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
            timeout: float = TimeoutOpt) -> None:
    """List the NF instances registered with sluiced."""
    nfs = _call(node, socket, "nf.list", timeout)
    if as_json:
        _print_json(nfs)
        return
    # numbers never cut (print_table); in a narrow terminal the mode, the
    # tx ring, then the program are left out
    rows = []
    for n in nfs:
        rx, tx = n.get("rx_ring") or {}, n.get("tx_ring") or {}
        rows.append([str(n.get("instance")), f"{n.get('service')} ({n.get('service_id')})",
                     str(n.get("prog", "")), str(n.get("pid")), str(n.get("state")),
                     str(n.get("mode", "")), f"{rx.get('count', 0)}/{rx.get('size', 0)}",
                     f"{tx.get('count', 0)}/{tx.get('size', 0)}"])
    print_table([("instance", "right", False), ("service", "left", True),
                 ("program", "left", False), ("pid", "right", False),
                 ("state", "left", False), ("mode", "left", False),
                 ("rx ring", "right", False), ("tx ring", "right", False)],
                rows, drop_order=["mode", "tx ring", "program"],
                note="`sluice nf list --json` shows them")


@nf_app.command("stop")
@errors
def nf_stop(instance: int = typer.Argument(..., min=0, help="The instance to stop."),
            node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
            timeout: float = TimeoutOpt) -> None:
    """Stop one NF instance cleanly: it deregisters, its ring drains, it exits (a launcher's
    orchestrator does not restart an instance stopped so)."""
    res = _call(node, socket, "nf.stop", timeout, instance=instance)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"instance {res.get('instance', instance)}: {res.get('state', 'stopping')} "
               f"(`sluice nf list` shows it until it has gone)")


@nf_app.command("scale")
@errors
def nf_scale(service: str = typer.Argument(..., help="The service to scale."),
             replicas: int = typer.Argument(..., min=0,
                                            help="Instances it should have (0 stops them all; "
                                                 "new ones copy the newest running)."),
             node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
             timeout: float = TimeoutOpt) -> None:
    """Start or stop instances of a service until it has REPLICAS (copies of its newest)."""
    res = _call(node, socket, "nf.scale", timeout, service=service, replicas=replicas)
    if as_json:
        _print_json(res)
        return
    started, stopping = res.get("started") or [], res.get("stopping") or []
    pids = res.get("started_pids") or []
    what = []
    if started:
        what.append(f"started instance(s) {_ids(started)}")
    if pids:
        what.append(f"started pid(s) {_ids(pids)} (they appear in `sluice nf list` once "
                    f"registered)")
    if stopping:
        what.append(f"stopping instance(s) {_ids(stopping)}")
    cancelled = res.get("cancelled_pids") or []
    if cancelled:
        what.append(f"stopped pid(s) {_ids(cancelled)} before they registered")
    typer.echo(f"service {res.get('service', service)}: {res.get('replicas', replicas)} "
               f"replica(s): "
               f"{'; '.join(what) or 'nothing to do'}")
    if replicas == 0 and (stopping or cancelled):
        # nf.scale copies a running instance: with none left it cannot start one
        typer.echo(f"no instance of {service} is left to copy: `sluice nf scale {service} N` "
                   f"cannot start one again; `sluice apply DEPLOYMENT.yaml` starts the "
                   f"file's replicas")


def _ids(v: list[Any]) -> str:
    return ", ".join(map(str, v))


# -- load balancing -----------------------------------------------------------------------

class LbMode(str, Enum):
    flow = "flow"
    queue = "queue"
    rr = "rr"


LB_MODES = {"flow": "flow-sticky", "queue": "shortest queue", "rr": "round robin"}


@lb_app.command("set")
@errors
def lb_set(service: str = typer.Argument(..., help="The service."),
           mode: LbMode = typer.Argument(..., help="flow: a flow stays on one instance; "
                                                   "queue: the shortest queue; rr: round "
                                                   "robin."),
           node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
           timeout: float = TimeoutOpt) -> None:
    """Choose how packets of a service are spread over its instances."""
    res = _call(node, socket, "lb.set", timeout, service=service, mode=mode.value)
    if as_json:
        _print_json(res)
        return
    m = res.get("mode", mode.value)
    typer.echo(f"service {res.get('service', service)}: load balancing {m} "
               f"({LB_MODES.get(m, m)})")


@rx_app.command("pause")
@errors
def rx_pause(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
             timeout: float = TimeoutOpt) -> None:
    """Stop reading the ports; the packets in flight go on to their ends."""
    res = _call(node, socket, "rx.pause", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports paused: sluiced reads none of them (packets in flight drain; "
               "`sluice rx resume` reads them again)")


@rx_app.command("resume")
@errors
def rx_resume(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
    """Read the ports again."""
    res = _call(node, socket, "rx.resume", timeout)
    if as_json:
        _print_json(res)
        return
    typer.echo("ports resumed: sluiced reads them again")


# -- graphs -------------------------------------------------------------------------------

@graph_app.command("apply")
@errors
def graph_apply(file: Path = typer.Argument(..., help="Graph file (or a deployment file): "
                                                      "its graphs and rules."),
                dry_run: bool = typer.Option(False, "--dry-run",
                                             help="Check the file and show the calls; send "
                                                  "nothing."),
                node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                timeout: float = TimeoutOpt) -> None:
    """Apply the graphs of FILE (replacing those of the same name), then add its rules.

    A rule the node already has (same graph, priority and match) is not added
    again, so applying a file twice is harmless."""
    from .deploy import load_graphs
    from .graph import batch_refusal, format_match, same_rule, to_rpc

    gs = load_graphs(file)
    rules = gs.rule_params()
    if dry_run:
        calls = ([{"method": "graph.apply", "params": to_rpc(g)} for g in gs.graphs]
                 + ([{"method": "rule.add", "params": {"rules": rules}}] if rules else []))
        if as_json:
            _print_json(calls)
            return
        typer.echo(f"{file}: ok: {gs.describe()}; nothing sent (--dry-run). The calls:")
        for c in calls:
            typer.echo(f"  {c['method']} {json.dumps(c['params'])}")
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


def _rule_text(r: dict[str, Any], format_match: Callable[[dict[str, Any]], str]) -> str:
    return f"priority {r.get('priority', 0)}, {format_match(r)} -> graph {r.get('graph')}"


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


@graph_app.command("get")
@errors
def graph_get(name: str = typer.Argument(None, help="The graph (default: all)."),
              node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
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
def graph_remove(name: str = typer.Argument(..., help="The graph."),
                 node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                 timeout: float = TimeoutOpt) -> None:
    """Remove a graph and its rules; its flows go by the other rules or the chain."""
    res = _call(node, socket, "graph.remove", timeout, name=name)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"graph {res.get('removed', name)}: removed, with its "
               f"{res.get('rules_removed', 0)} rule(s)")


# -- rules --------------------------------------------------------------------------------

ProtoOpt = typer.Option(None, "--proto", help="tcp, udp, icmp or a protocol number.")
SrcOpt = typer.Option(None, "--src", help="Source address or prefix (10.0.0.0/8, 2001:db8::/32).")
DstOpt = typer.Option(None, "--dst", help="Destination address or prefix.")
SportOpt = typer.Option(None, "--sport", help="Source port N or range N-M.")
DportOpt = typer.Option(None, "--dport", help="Destination port N or range N-M.")


def _match(command: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Checked and normalized match fields (unset ones left out), or exit 1
    with one line per problem."""
    from .graph import match_params

    params, problems = match_params(fields)
    if problems:
        # its in_port hint is a deployment file's ("write in_port: in")
        raise fail("\n".join(f"sluice {command}: --{k.replace('_', '-')}: "
                             f"{m.replace('write in_port: ', 'write --in-port ')}"
                             for k, m in problems))
    return params


@rule_app.command("add")
@errors
def rule_add(graph: str = typer.Option(..., "--graph", "-g", help="The graph new flows go to."),
             priority: int = typer.Option(0, "--priority", "-p",
                                          help="-1000000..1000000; higher wins, then the "
                                               "older rule."),
             proto: str = ProtoOpt, src: str = SrcOpt, dst: str = DstOpt,
             sport: str = SportOpt, dport: str = DportOpt,
             in_port: str = typer.Option(None, "--in-port", help="The port packets arrive on."),
             node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
             timeout: float = TimeoutOpt) -> None:
    """Send new flows that match to a graph (flows already seen keep theirs)."""
    from .graph import format_match

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
def rule_list(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
    """List the rules, the highest priority first as sluiced gives them."""
    from .graph import format_match

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
def rule_remove(rule_id: int = typer.Argument(..., metavar="ID", help="The rule (rule list)."),
                node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                timeout: float = TimeoutOpt) -> None:
    """Remove a rule (flows it classified keep their graph until they end)."""
    res = _call(node, socket, "rule.remove", timeout, id=rule_id)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"rule {res.get('removed', rule_id)}: removed")


# -- flows --------------------------------------------------------------------------------

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


def print_table(columns: list[tuple[str, str, bool]], rows: list[list[str]],
                drop_order: list[str], note: str = "") -> None:
    """Prints a table whose numbers and ids are never cut.

    ``columns``: (header, justify, may wrap); a column that may wrap breaks
    only between words, the others never. Into a pipe or a file the table
    has its full width, whatever $COLUMNS says. In a terminal too narrow
    for it, the columns of ``drop_order`` are left out, in that order, until
    it fits (a line after it says which, and ``note`` where to see them),
    and those that may wrap share what is left, the first first; if it still
    cannot fit, it is printed at the width it needs and the terminal folds
    its lines."""
    from .launch import words_width

    con = Console()
    cells = [[c[0], *(r[i] for r in rows)] for i, c in enumerate(columns)]
    full = [max(len(x) for x in col) for col in cells]
    least = [max(words_width(x) for x in col) if c[2] else full[i]
             for i, (c, col) in enumerate(zip(columns, cells, strict=True))]

    def box(keep: list[int]) -> int:  # a border left of each column and at the end,
        return 3 * len(keep) + 1      # and a space each side of it

    keep = list(range(len(columns)))
    widths = list(full)
    dropped: list[str] = []
    if con.is_terminal:
        names = [c[0] for c in columns]
        for name in drop_order:
            if box(keep) + sum(least[i] for i in keep) <= con.width:
                break
            keep.remove(names.index(name))
            dropped.append(name)
        spare = con.width - box(keep) - sum(least[i] for i in keep)
        for i in keep:
            if columns[i][2]:
                widths[i] = least[i] + min(max(spare, 0), full[i] - least[i])
                spare -= widths[i] - least[i]
    t = Table()
    for i in keep:
        head, justify, _ = columns[i]
        t.add_column(head, justify=justify, width=widths[i],  # type: ignore[arg-type]
                     overflow="fold")
    for r in rows:
        t.add_row(*(r[i] for i in keep))
    Console(width=max(con.width if con.is_terminal else 0,
                      box(keep) + sum(widths[i] for i in keep))).print(t)
    if dropped:
        typer.echo(f"(not shown in {con.width} columns: {', '.join(dropped)}"
                   f"{'; ' + note if note else ''})")


@flow_app.command("list")
@errors
def flow_list(graph: str = FGraphOpt, proto: str = ProtoOpt, src: str = SrcOpt,
              dst: str = DstOpt, port: str = FPortOpt, service: str = FServiceOpt,
              in_port: str = FInPortOpt,
              limit: int = typer.Option(100, "--limit", "-l", min=0, max=100000,
                                        help="Show at most this many flows (0: only count "
                                             "them)."),
              node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
              timeout: float = TimeoutOpt) -> None:
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
def flow_get(flow_id: int = typer.Argument(None, metavar="[ID]", help="The flow (flow list)."),
             key: str = typer.Option(None, "--key", "-k",
                                     help="The flow by its key, as flow list shows it: "
                                          "'tcp 10.0.0.1:1234 > 10.0.0.2:80'."),
             node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
             timeout: float = TimeoutOpt) -> None:
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
def flow_delete(flow_id: int = typer.Argument(None, metavar="[ID]", help="The flow."),
                key: str = typer.Option(None, "--key", "-k",
                                        help="The flow by its key, as flow list shows it: "
                                             "'tcp 10.0.0.1:1234 > 10.0.0.2:80'."),
                all_flows: bool = typer.Option(False, "--all", help="Every flow."),
                graph: str = FGraphOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                dst: str = DstOpt, port: str = FPortOpt, service: str = FServiceOpt,
                in_port: str = FInPortOpt,
                node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                timeout: float = TimeoutOpt) -> None:
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


# -- cross-layer requests --------------------------------------------------------------------

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
def request_skip_me(service: str = typer.Argument(..., help="The service to skip."),
                    flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                    dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                    all_flows: bool = AllFlowsOpt,
                    node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                    timeout: float = TimeoutOpt) -> None:
    """SkipMe: the flows go past SERVICE, to its default next hop."""
    f = _request_flow("flow request skip-me", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="skip_me", flow=f, service=service)


@request_app.command("request-me")
@errors
def request_request_me(service: str = typer.Argument(..., help="The service that asks."),
                       flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                       dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                       all_flows: bool = AllFlowsOpt,
                       node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                       timeout: float = TimeoutOpt) -> None:
    """RequestMe: the flows are sent to SERVICE where the graph allows an edge to it."""
    f = _request_flow("flow request request-me", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="request_me", flow=f, service=service)


@request_app.command("change-default")
@errors
def request_change_default(service: str = typer.Argument(..., help="The node whose default "
                                                                   "changes."),
                           to: str = typer.Option(..., "--to", help="Its new default: one of "
                                                                    "its next hops."),
                           flow: str = FlowKeyOpt, proto: str = ProtoOpt, src: str = SrcOpt,
                           dst: str = DstOpt, sport: str = SportOpt, dport: str = DportOpt,
                           all_flows: bool = AllFlowsOpt,
                           node: str = NodeOpt, socket: Path = SocketOpt,
                           as_json: bool = JsonOpt, timeout: float = TimeoutOpt) -> None:
    """ChangeDefault: for the flows, SERVICE's default next hop becomes --to."""
    f = _request_flow("flow request change-default", flow, all_flows, {
        "proto": proto, "src": src, "dst": dst, "sport": sport, "dport": dport})
    _request(node, socket, timeout, as_json, type="change_default", flow=f, service=service,
             to=to)


@request_app.command("message")
@errors
def request_message(service: str = typer.Argument(..., help="The service it is for."),
                    key: str = typer.Argument(..., help="Message key."),
                    value: str = typer.Argument(..., help="Message value."),
                    node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                    timeout: float = TimeoutOpt) -> None:
    """Message: send KEY and VALUE to the NFs of SERVICE (their on_message)."""
    _request(node, socket, timeout, as_json, type="message", service=service, key=key,
             value=value)


@request_app.command("list")
@errors
def request_list(node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                 timeout: float = TimeoutOpt) -> None:
    """List the requests with a match kept for new flows, the oldest first."""
    from .graph import format_match

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
def request_remove(request_id: int = typer.Argument(..., metavar="ID",
                                                    help="The kept request (flow request "
                                                         "list)."),
                   node: str = NodeOpt, socket: Path = SocketOpt, as_json: bool = JsonOpt,
                   timeout: float = TimeoutOpt) -> None:
    """Forget a kept request: new flows no longer get it (live flows keep what it gave
    them until they end or `sluice flow delete` forgets them)."""
    res = _call(node, socket, "flow.request.remove", timeout, id=request_id)
    if as_json:
        _print_json(res)
        return
    typer.echo(f"request {res.get('removed', request_id)}: removed (new flows no longer "
               f"get it; live flows keep what it gave them)")


@app.command()
@errors
def top(interval: float = typer.Option(1.0, "--interval", "-i", min=0.1, help="Seconds a frame."),
        once: bool = typer.Option(False, "--once", help="Print one frame and exit (scripts)."),
        iterations: int = typer.Option(None, "--iterations", min=1, help="Print N frames, exit."),
        as_json: bool = typer.Option(False, "--json", help="The rates as one JSON object a frame."),
        node: str = NodeOpt, socket: Path = SocketOpt, timeout: float = TimeoutOpt) -> None:
    """Live rates of a running node: ports, NF instances, rings, edges, drops by reason."""
    from .top import run_top

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
def events(kind: list[str] = typer.Option(None, "--kind", "-k",
                                          help="Only these kinds (nf.up) or families (flow); "
                                               "may be repeated (docs/graphs.md, Events)."),
           count: int = typer.Option(None, "--count", "-c", min=1,
                                     help="Stop after this many events (default: Ctrl-C)."),
           node: str = NodeOpt, socket: Path = SocketOpt,
           as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
           timeout: float = TimeoutOpt) -> None:
    """Print the node's events as they happen (NFs, graphs, rules, flow requests, messages)."""
    from .client import EVENT_FAMILIES, EVENT_KINDS

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
def api(node: str = NodeOpt, socket: Path = SocketOpt,
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Address to listen on; not loopback needs --token."),
        port: int = typer.Option(8080, "--port", min=1, max=65535, help="TCP port."),
        token: str = typer.Option(None, "--token", envvar="SLUICE_API_TOKEN",
                                  help="Require 'Authorization: Bearer TOKEN' (or "
                                       "'X-Sluice-Token') on every request."),
        timeout: float = TimeoutOpt,
        max_body_kb: int = typer.Option(1024, "--max-body-kb", min=1, max=1 << 20,
                                        help="Largest request body, in KiB; a larger one "
                                             "is refused with 413.")) -> None:
    """Serve the REST API, Prometheus /metrics and the dashboard of a running node
    (docs/api.md)."""
    from .api import base_url, check_bind, create_app, serve, urls

    try:
        check_bind(host, token)
    except SluiceError as e:
        raise fail(f"sluice api: {e}") from None
    serve(create_app(_node_name(node, socket), socket, token, timeout=timeout,
                     max_body=max_body_kb * 1024), host, port,
          banner=f"API: {urls(base_url(host, port))}")


# -- traces ------------------------------------------------------------------------------

@trace_app.command("gen")
@errors
def trace_gen(out: Path = typer.Argument(..., help="pcap file to write."),
              ddos: bool = typer.Option(False, "--ddos",
                                        help="The DDoS scenario's mix (docs/ddos.md): normal "
                                             "clients, and from 30 % of the packets on an "
                                             "attack from --attack-prefix; with the defaults, "
                                             "the capture of examples/ddos.yaml."),
              packets: int = typer.Option(None, "--packets", min=1,
                                          help="Packets (mix: 4096; --size: max(flows, 4096); "
                                               "--ddos: 6000)."),
              flows: int = typer.Option(None, "--flows", min=1,
                                        help="Flows (mix: 512; --size: 1)."),
              seed: int = typer.Option(1, "--seed", help="Random seed; same seed, same bytes."),
              size: int = typer.Option(None, "--size",
                                       help="Fixed-size UDP frames of this many bytes instead "
                                            "of the HTTP-like mix (benchmarks)."),
              clients: int = typer.Option(None, "--clients", min=1,
                                          help="--ddos: normal clients, each in its own /24 "
                                               "(default 200)."),
              attack_prefix: str = typer.Option(None, "--attack-prefix",
                                                help="--ddos: the attacking IPv4 prefix "
                                                     "(default 10.66.6.0/24)."),
              syn: bool = typer.Option(False, "--syn",
                                       help="--ddos: the attack is TCP SYNs to port 80, not "
                                            "DNS queries.")) -> None:
    """Write a deterministic capture: the HTTP-like demo mix, fixed-size UDP (--size) or
    the DDoS mix (--ddos)."""
    from .traces import TraceError, generate

    try:
        typer.echo(generate(out, packets=packets, flows=flows, seed=seed, size=size,
                            ddos=ddos, clients=clients, attack_prefix=attack_prefix, syn=syn))
    except TraceError as e:
        raise fail(f"sluice trace gen: {e}") from None


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


_IN_MAIN = False  # set by main(): the process exits when the command returns


def main() -> None:
    """Entry point of the `sluice` command."""
    global _IN_MAIN
    _IN_MAIN = True
    try:
        app()
    except SluiceError as e:  # raised outside a command body
        typer.echo(str(e), err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
