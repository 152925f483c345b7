"""What the commands share: errors said in one line, the node a command talks to
(--node, --socket, --timeout, --json), match and table helpers."""

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
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from ..core.graph import did_you_mean, match_params
from ..runtime.client import (
    COMMANDS,
    SOCKET_DIR,
    Client,
    ConnectError,
    RpcError,
    SluiceError,
    command_text,
)
from ..runtime.launch import words_width
from ..runtime.traces import TraceError
from .apps import app

F = TypeVar("F", bound=Callable[..., Any])


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

# The options above by the parameter that takes them: a command declares
# ``*, node: str | None, socket: Path | None, as_json: bool, timeout: float``
# (those it takes, in the order --help lists them) and @on_node gives each its
# option. The parameter names are what errors and option_text read.
NODE_OPTIONS: dict[str, Any] = {"node": NodeOpt, "socket": SocketOpt, "as_json": JsonOpt,
                                "timeout": TimeoutOpt}


def on_node(fn: F) -> F:
    """Gives ``fn``'s keyword-only parameters named in NODE_OPTIONS, declared
    without a default, their option (flags, default, help), in the signature
    typer reads. A parameter with a default of its own (``sluice events
    --json``: one JSON object per line) keeps it."""
    sig = inspect.signature(fn)
    params = [p.replace(default=NODE_OPTIONS[p.name])
              if p.name in NODE_OPTIONS and p.kind is p.KEYWORD_ONLY and p.default is p.empty
              else p for p in sig.parameters.values()]
    fn.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return fn


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


def _rule_text(r: dict[str, Any], format_match: Callable[[dict[str, Any]], str]) -> str:
    return f"priority {r.get('priority', 0)}, {format_match(r)} -> graph {r.get('graph')}"


ProtoOpt = typer.Option(None, "--proto", help="tcp, udp, icmp or a protocol number.")
SrcOpt = typer.Option(None, "--src", help="Source address or prefix (10.0.0.0/8, 2001:db8::/32).")
DstOpt = typer.Option(None, "--dst", help="Destination address or prefix.")
SportOpt = typer.Option(None, "--sport", help="Source port N or range N-M.")
DportOpt = typer.Option(None, "--dport", help="Destination port N or range N-M.")


def _match(command: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Checked and normalized match fields (unset ones left out), or exit 1
    with one line per problem."""

    params, problems = match_params(fields)
    if problems:
        # its in_port hint is a deployment file's ("write in_port: in")
        raise fail("\n".join(f"sluice {command}: --{k.replace('_', '-')}: "
                             f"{m.replace('write in_port: ', 'write --in-port ')}"
                             for k, m in problems))
    return params


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


_IN_MAIN = False  # set by main(): the process exits when the command returns
