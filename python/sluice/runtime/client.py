"""Client for the control socket of sluiced (docs/control-socket.md).

JSON-RPC 2.0 over a Unix stream socket, one JSON object per line::

    with Client("demo") as c:
        print(c.call("status")["uptime_s"])
        c.call("chain.set", hops=["firewall", "port:out"])

One connection is kept open and reused. If sluiced closed it in the
meantime (it restarted, or dropped an idle client), the next call connects
again; a request that may have reached sluiced is sent a second time only
when repeating it is harmless (reads, ``chain.set``, ``graph.apply``,
``lb.set``).

Events come on a connection of their own::

    with Client("demo") as c:
        for ev in c.events():          # {kind, ts, data}, until sluiced goes away
            print(ev["kind"], ev["data"])
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.errors import SluiceError as SluiceError  # the base of this module's errors

SOCKET_DIR = paths.SOCKET_DIR  # a module global: tests point it at a folder of their own

# The kinds of event sluiced publishes: the kinds its mgr_event() calls
# (src/mgr) name; tests/python/test_event_kinds.py checks the list against
# them. A family is what a kind begins with (nf: nf.up, nf.scale, ...).
EVENT_KINDS = ("nf.up", "nf.down", "nf.freed", "nf.hung", "nf.scale", "nf.scale.failed",
               "chain.set", "graph.applied", "graph.removed", "rule.added", "rule.removed",
               "flow.request", "flow.request.removed", "nf.message")
EVENT_FAMILIES = tuple(sorted({k.rsplit(".", i)[0] for k in EVENT_KINDS
                               for i in range(1, k.count(".") + 1)} - set(EVENT_KINDS)))

# Methods that change nothing, or set a state absolutely, so sending them
# twice is harmless. Others (shutdown, nf.stop, rule.add, nf.scale, ...) are
# never sent twice.
RETRY_SAFE = frozenset(
    {"status", "nf.list", "port.list", "service.list", "stats", "chain.get",
     "chain.set", "lb.set", "graph.get", "graph.apply", "rule.list", "flow.list",
     "flow.get"}
)

MAX_LINE = 64 * 1024 * 1024  # a response longer than this is not sluiced talking

# Every method of the control socket (src/mgr/rpc.c's methods[]) as a user
# reaches it: (the `sluice` command that calls it or shows what it lists,
# the REST endpoints under /api/v1 that call it, the first to be named in a
# message). sluiced's error texts name methods ("no rule with id 4; see
# rule.list"); the CLI (command_text) and the REST API (api.rest_text) say
# them as the command or the endpoint instead (say_methods). None: there is
# none (rx.pause and rx.resume are REST and launcher only; shutdown is for
# whoever started the node). tests/python/test_method_names.py checks the
# table against rpc.c, the CLI's commands and the API's routes.
METHODS: dict[str, tuple[str | None, str | None]] = {
    "status": ("sluice status", "GET /status"),
    "stats": ("sluice stats", "GET /stats, GET /stats/schema"),
    "nf.list": ("sluice nf list", "GET /nfs"),
    "nf.stop": ("sluice nf stop", "POST /nfs/{instance}/stop"),
    "nf.scale": ("sluice nf scale", "POST /services/{service}/scale"),
    # no command of their own: these show what the method lists (the
    # service column of the instances, the port table of the counters)
    "service.list": ("sluice nf list", "GET /services"),
    "port.list": ("sluice stats", "GET /ports"),
    "lb.set": ("sluice lb set", "PUT /services/{service}/lb"),
    "chain.get": ("sluice chain get", "GET /chain"),
    "chain.set": ("sluice chain set", "PUT /chain"),
    "graph.get": ("sluice graph get", "GET /graphs, GET /graphs/{name}"),
    "graph.apply": ("sluice graph apply", "PUT /graphs/{name}, PUT /policies/{name}"),
    "graph.remove": ("sluice graph remove", "DELETE /graphs/{name}"),
    "rule.list": ("sluice rule list", "GET /rules"),
    "rule.add": ("sluice rule add", "POST /rules, POST /rule-batches"),
    "rule.remove": ("sluice rule remove", "DELETE /rules/{id}"),
    "flow.list": ("sluice flow list", "GET /flows"),
    "flow.get": ("sluice flow get", "GET /flows/{flow}"),
    "flow.delete": ("sluice flow delete", "DELETE /flows, DELETE /flows/{flow}"),
    "flow.request": ("sluice flow request", "POST /flow-requests"),
    "flow.requests": ("sluice flow request list", "GET /flow-requests"),
    "flow.request.remove": ("sluice flow request remove", "DELETE /flow-requests/{id}"),
    "rx.pause": ("sluice rx pause", "POST /rx/pause"),
    "rx.resume": ("sluice rx resume", "POST /rx/resume"),
    "subscribe": ("sluice events", "GET /events (SSE), /events/ws (websocket)"),
    "shutdown": (None, None),
}

# A dotted method name in a message, the longest first (flow.request.remove
# before flow.request), not inside a longer name (stats.flows.live); a
# sentence's full stop after it is not part of it. Plain words (status,
# stats, subscribe) are left alone in a text: they are also English.
_METHOD_RE = re.compile(
    r"(?<![\w.])("
    + "|".join(re.escape(m) for m in sorted((m for m in METHODS if "." in m),
                                            key=len, reverse=True))
    + r")(?![\w-]|\.\w)")


# The command of each method that has one.
COMMANDS = {m: cmd for m, (cmd, _) in METHODS.items() if cmd is not None}


# A command that lists what a message points to only when called so: `sluice
# graph get NAME` shows one graph, and "no graph named 'x'; see `sluice graph
# get`" read as the command just typed.
_COMMAND_SAID = {"graph.get": "`sluice graph get` (without a name: all graphs)"}


def command_text(message: str) -> str:
    """``message`` (sluiced's) with the methods it names said as commands,
    for a user of the command line (`sluice ...`, `sluice apply`)."""
    return say_methods(message, COMMANDS, _COMMAND_SAID)


def say_methods(message: str, names: dict[str, str],
                said: dict[str, str] | None = None) -> str:
    """``message`` with each method it names that ``names`` has said as
    ``names[method]`` in backquotes: ``see rule.list`` -> ``see `sluice
    rule list```, or as ``said[method]`` when ``said`` has it. Methods
    ``names`` lacks stay as they are."""
    said = said or {}

    def say(m: re.Match[str]) -> str:
        method = m.group(1)
        if method not in names:
            return method
        return said.get(method) or f"`{names[method]}`"

    return _METHOD_RE.sub(say, message)


def rule_build_seconds(n_rules: int) -> float:
    """How long to wait for sluiced to answer a call that rebuilds its rule
    classifier holding ``n_rules`` rules (rule.add, rule.remove,
    graph.remove): rte_acl builds in 0.3 ms for 1 random rule, 3 ms for
    100, 0.2 s for 1,000 and 4-6 s for 4,096 (bench/micro.py), growing
    faster than the count."""
    return 10.0 + 0.005 * n_rules


def socket_path_for(node: str) -> Path:
    """The control socket of the sluiced named ``node`` (in this module's SOCKET_DIR)."""
    return paths.socket_path_for(node, SOCKET_DIR)


class RpcError(SluiceError):
    """sluiced answered with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = ""):
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        # what a command adds for its user (the CLI's "did you mean"); not
        # part of sluiced's error, so not of str(self)
        self.hint = ""

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        return f"{where}{self.message} (JSON-RPC error {self.code})"


class ConnectError(SluiceError):
    """No sluiced listens on the socket (or it may not be used)."""


class ConnectionLost(SluiceError):
    """sluiced closed the connection, or sent something that is not JSON-RPC."""


class _Closed(ConnectionLost):
    """The connection was closed before any byte of the answer arrived."""


class _NotSent(_Closed):
    """The connection was found closed when sending: sluiced got nothing."""


class RpcTimeout(SluiceError):
    """sluiced did not answer in time."""


class Client:
    """A connection to one sluiced.

    ``node`` names the sluiced (its ``--name``); ``socket_path`` overrides
    the path derived from it. ``timeout`` bounds connecting and each call,
    in seconds.
    """

    def __init__(self, node: str = "sluice", socket_path: str | Path | None = None,
                 timeout: float = 5.0):
        self.node = node
        self.socket_path = Path(socket_path) if socket_path else socket_path_for(node)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""
        self._ids = itertools.count(1)
        self._used = False  # the open connection has carried a request already

    # -- connection ---------------------------------------------------------

    def connect(self) -> None:
        """Opens the connection if it is not open."""
        if self._sock is not None:
            return
        deadline = time.monotonic() + self.timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(str(self.socket_path))
                break
            except OSError as e:
                s.close()
                # The listen backlog is full (sluiced busy, many clients at
                # once): a Unix socket says so at once; wait for room.
                if e.errno == errno.EAGAIN and time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                raise ConnectError(self._connect_hint(e)) from None
        self._sock = s
        self._buf = b""
        self._used = False

    def _connect_hint(self, e: OSError) -> str:
        path = self.socket_path
        if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
            return (f"cannot connect to {path}: no sluiced is running for node "
                    f"'{self.node}' (start one with `sluice up DEPLOYMENT.yaml`, "
                    f"or give the node name with --node)")
        if e.errno in (errno.EACCES, errno.EPERM):
            return f"cannot connect to {path}: permission denied (run as root)"
        if isinstance(e, TimeoutError):
            return f"cannot connect to {path}: no answer within {self.timeout:g} s"
        if e.errno == errno.EAGAIN:
            return (f"cannot connect to {path}: sluiced took no new connection within "
                    f"{self.timeout:g} s (its queue of waiting connections stayed full: "
                    f"is its control thread stuck? see its log)")
        return f"cannot connect to {path}: {e.strerror or e}"

    @contextlib.contextmanager
    def patience(self, seconds: float) -> Iterator[None]:
        """Calls made inside wait at least ``seconds`` for their answer (see
        rule_build_seconds), then the client's timeout is as before."""
        old = self.timeout
        self.timeout = max(old, seconds)
        try:
            yield
        finally:
            self.timeout = old

    def rules(self, page: int = 10000) -> list[dict[str, Any]]:
        """Every rule (``rule.list``, highest priority first), asked for in
        pages of ``page``: sluiced gives at most 10,000 per call."""
        out: list[dict[str, Any]] = []
        while True:
            res = self.call("rule.list", offset=len(out), limit=page)
            got = res.get("rules", [])
            out.extend(got)
            if not res.get("truncated") or not got:
                return out

    def close(self) -> None:
        """Closes the connection; the next call opens a new one."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None
        self._buf = b""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls --------------------------------------------------------------

    def call(self, method: str, **params: Any) -> Any:
        """Calls ``method`` with named ``params``; returns its result.

        Raises RpcError when sluiced answers with an error, ConnectError when
        nobody listens, ConnectionLost when the connection breaks, RpcTimeout.
        """
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params:
            request["params"] = params
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        reused = self._sock is not None and self._used
        try:
            return self._exchange(request, line)
        except _Closed as e:
            # A connection that sat idle may have been closed by sluiced
            # before our request arrived: try once more on a new one.
            if not reused or not (isinstance(e, _NotSent) or method in RETRY_SAFE):
                raise
        return self._exchange(request, line)

    def _exchange(self, request: dict[str, Any], line: bytes) -> Any:
        self.connect()
        assert self._sock is not None
        self._used = True
        method = request["method"]
        try:
            self._sock.sendall(line)
        except TimeoutError:
            self.close()
            raise RpcTimeout(f"{method}: sluiced did not take the request within "
                             f"{self.timeout:g} s") from None
        except OSError as e:
            self.close()
            raise _NotSent(f"{method}: connection to {self.socket_path} lost "
                           f"while sending ({e.strerror or e})") from None
        while True:
            response = self._read_message(method)
            if not isinstance(response, dict):
                self.close()
                raise ConnectionLost(f"{method}: sluiced sent a JSON-RPC response that is "
                                     f"not an object: {_short(response)}")
            if "id" not in response:
                continue  # a notification (event), not our answer
            if response["id"] != request["id"]:
                if response["id"] is None and "error" in response:
                    # sluiced could not read our request at all
                    raise _rpc_error(response["error"], method)
                continue  # a late answer to an earlier, timed-out request
            if "error" in response:
                raise _rpc_error(response["error"], method)
            if "result" not in response:
                self.close()
                raise ConnectionLost(f"{method}: response has neither result nor error: "
                                     f"{_short(response)}")
            return response["result"]

    def events(self, on_subscribed: Callable[[], None] | None = None
               ) -> Iterator[dict[str, Any]]:
        """Subscribes and yields sluiced's events, ``{kind, ts, data}``, as they come.

        The connection then carries events only: use a Client of its own.
        Waits as long as it takes; ends with ConnectionLost when sluiced
        closes the connection (it stopped). Closing the client (or the
        generator) unsubscribes. ``on_subscribed`` is called once sluiced
        has answered ``subscribe`` (events from then on will come)."""
        self.call("subscribe")
        if on_subscribed is not None:
            on_subscribed()
        try:
            while True:
                try:
                    msg = self._read_message("subscribe", wait=None)
                except ConnectionLost:
                    raise ConnectionLost(f"events: sluiced closed the connection on "
                                         f"{self.socket_path} (it stopped, or this client "
                                         f"left more than its --control-out-kb unread)") from None
                if isinstance(msg, dict) and msg.get("method") == "event" \
                        and isinstance(msg.get("params"), dict):
                    yield msg["params"]
        finally:
            self.close()

    def _read_message(self, method: str, wait: float | None = -1.0) -> Any:
        """The next message; ``wait``: seconds (default: the client's
        timeout), or None for as long as it takes."""
        assert self._sock is not None
        if wait is not None and wait < 0:
            wait = self.timeout
        deadline = None if wait is None else time.monotonic() + wait
        while b"\n" not in self._buf:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                self.close()
                raise RpcTimeout(f"{method}: no answer from sluiced within {self.timeout:g} s")
            self._sock.settimeout(remaining)
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                self.close()
                raise RpcTimeout(f"{method}: no answer from sluiced within "
                                 f"{self.timeout:g} s") from None
            except OSError as e:
                partial = bool(self._buf)
                self.close()
                cls = ConnectionLost if partial else _Closed
                raise cls(f"{method}: connection to {self.socket_path} lost "
                          f"({e.strerror or e})") from None
            if not chunk:
                partial = bool(self._buf)
                self.close()
                cls = ConnectionLost if partial else _Closed
                raise cls(f"{method}: sluiced closed the connection without answering")
            self._buf += chunk
            if len(self._buf) > MAX_LINE:
                self.close()
                raise ConnectionLost(f"{method}: answer longer than {MAX_LINE} bytes")
        raw, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(raw)
        except ValueError as e:
            self.close()
            raise ConnectionLost(f"{method}: sluiced sent a line that is not JSON ({e}): "
                                 f"{_short(raw)}") from None

    def wait_ready(self, timeout: float = 10.0, check: Callable[[], None] | None = None,
                   interval: float = 0.05) -> dict[str, Any]:
        """Waits until sluiced answers ``status``; returns that status.

        ``check`` is called between attempts and may raise to give up early
        (the launcher uses it to notice that sluiced exited). Raises
        RpcTimeout after ``timeout`` seconds, naming the last error seen.
        """
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while True:
            try:
                return self.call("status")
            except (ConnectError, ConnectionLost, RpcTimeout) as e:
                last = e
                self.close()
            if check is not None:
                check()
            if time.monotonic() >= deadline:
                raise RpcTimeout(f"sluiced did not answer on {self.socket_path} within "
                                 f"{timeout:g} s (last error: {last})")
            time.sleep(interval)


def _rpc_error(err: Any, method: str) -> RpcError:
    if isinstance(err, dict):
        code = err.get("code", 0)
        return RpcError(code if isinstance(code, int) else 0,
                        str(err.get("message", "unknown error")), err.get("data"), method)
    return RpcError(0, f"malformed error object: {_short(err)}", None, method)


def _short(v: Any, n: int = 200) -> str:
    s = v.decode(errors="replace") if isinstance(v, bytes) else repr(v)
    return s if len(s) <= n else s[:n] + "..."
