"""The control-socket client against a fake JSON-RPC server in this file."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sluice.runtime.client import (
    Client,
    ConnectError,
    ConnectionLost,
    RpcError,
    RpcTimeout,
    rule_build_seconds,
)

# A handler gets the request (dict, or the raw line if it is not JSON) and
# returns what to do: a dict (sent as one line), bytes (sent as they are),
# "close" (close without answering), "silence" (answer nothing), or a list.
Handler = Callable[[Any], Any]


def default_handler(req: Any) -> Any:
    if not isinstance(req, dict):
        return {"jsonrpc": "2.0", "id": None,
                "error": {"code": -32700, "message": "parse error at column 1"}}
    method = req.get("method")
    if method == "status":
        return {"jsonrpc": "2.0", "id": req["id"], "result": {"node": "t", "pid": 1}}
    if method == "echo":
        return {"jsonrpc": "2.0", "id": req["id"], "result": req.get("params")}
    if method == "chain.set":
        hops = req["params"]["hops"]
        if "nosuch" in hops:
            return {"jsonrpc": "2.0", "id": req["id"],
                    "error": {"code": -32000, "message": "unknown service 'nosuch'"}}
        return {"jsonrpc": "2.0", "id": req["id"], "result": {"version": 2}}
    return {"jsonrpc": "2.0", "id": req["id"],
            "error": {"code": -32601, "message": f"unknown method '{method}'"}}


class FakeSluiced:
    """A Unix-socket JSON-RPC server, one JSON object per line."""

    def __init__(self, path: Path, handler: Handler = default_handler,
                 close_after_answer: bool = False):
        self.path = path
        self.handler = handler
        self.close_after_answer = close_after_answer
        self.connections = 0
        self.requests: list[Any] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        req: Any = json.loads(line)
                    except ValueError:
                        req = line
                    self.requests.append(req)
                    actions = self.handler(req)
                    for action in actions if isinstance(actions, list) else [actions]:
                        if action == "close":
                            return
                        if action == "silence":
                            continue
                        data = action if isinstance(action, bytes) else (
                            json.dumps(action).encode() + b"\n")
                        conn.sendall(data)
                    if self.close_after_answer:
                        conn.shutdown(socket.SHUT_RDWR)
                        return

    def close(self) -> None:
        self.stopping = True
        self.sock.close()


@pytest.fixture
def sockdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="slc", dir="/tmp"))  # short: sun_path has 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def fake_socket(handler: Callable[[Any], Any], prefix: str = "slu") -> Iterator[Path]:
    """A FakeSluiced answering with ``handler`` on a socket in a folder of
    its own (a short path: sun_path has 108 bytes), removed after."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=handler)
    try:
        yield d / "n.sock"
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def server(sockdir: Path, **kw: Any) -> Iterator[FakeSluiced]:
    s = FakeSluiced(sockdir / "t.sock", **kw)
    try:
        yield s
    finally:
        s.close()


def test_call_returns_the_result_and_reuses_the_connection(sockdir: Path) -> None:
    with server(sockdir) as srv, Client("t", sockdir / "t.sock") as c:
        assert c.call("status") == {"node": "t", "pid": 1}
        assert c.call("echo", a=1, b=[1, 2]) == {"a": 1, "b": [1, 2]}
        assert c.call("chain.set", hops=["fw", "port:out"]) == {"version": 2}
        assert srv.connections == 1
        assert srv.requests[0] == {"jsonrpc": "2.0", "id": 1, "method": "status"}
        assert srv.requests[1]["params"] == {"a": 1, "b": [1, 2]}


def test_error_response_raises_and_connection_stays_usable(sockdir: Path) -> None:
    with server(sockdir) as srv, Client("t", sockdir / "t.sock") as c:
        with pytest.raises(RpcError) as e:
            c.call("chain.set", hops=["nosuch"])
        assert e.value.code == -32000
        assert e.value.message == "unknown service 'nosuch'"
        assert str(e.value) == "chain.set: unknown service 'nosuch' (JSON-RPC error -32000)"
        with pytest.raises(RpcError) as e:
            c.call("frobnicate")
        assert e.value.code == -32601
        assert c.call("status")["node"] == "t"
        assert srv.connections == 1


def test_error_without_id_is_reported(sockdir: Path) -> None:
    def handler(req: Any) -> Any:
        return {"jsonrpc": "2.0", "id": None,
                "error": {"code": -32600, "message": "missing 'method'"}}

    with server(sockdir, handler=handler), Client("t", sockdir / "t.sock") as c, \
            pytest.raises(RpcError) as e:
        c.call("status")
    assert (e.value.code, e.value.message) == (-32600, "missing 'method'")
    assert str(e.value) == "status: missing 'method' (JSON-RPC error -32600)"


def test_notifications_and_stale_answers_are_skipped(sockdir: Path) -> None:
    def handler(req: Any) -> Any:
        return [{"jsonrpc": "2.0", "method": "event", "params": {"nf": "up"}},
                {"jsonrpc": "2.0", "id": 999, "result": "old"},
                {"jsonrpc": "2.0", "id": req["id"], "result": "mine"}]

    with server(sockdir, handler=handler), Client("t", sockdir / "t.sock") as c:
        assert c.call("status") == "mine"
        assert c.call("status") == "mine"


def test_answer_split_across_writes(sockdir: Path) -> None:
    def handler(req: Any) -> Any:
        line = json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": "x" * 200000}).encode()
        return [line[:10], line[10:100000], line[100000:] + b"\n"]

    with server(sockdir, handler=handler), Client("t", sockdir / "t.sock") as c:
        assert c.call("stats") == "x" * 200000


def test_server_closing_idle_connections_is_transparent(sockdir: Path) -> None:
    with server(sockdir, close_after_answer=True) as srv, Client("t", sockdir / "t.sock") as c:
        for _ in range(3):
            assert c.call("status")["node"] == "t"
            time.sleep(0.02)  # let the close arrive
        assert srv.connections == 3


def test_unsafe_method_is_not_sent_twice(sockdir: Path) -> None:
    def handler(req: Any) -> Any:
        return "close" if req["method"] in ("shutdown", "stats") else default_handler(req)

    with server(sockdir, handler=handler) as srv, Client("t", sockdir / "t.sock") as c:
        c.call("status")
        # The request reached sluiced, which closed without answering: a
        # shutdown is not repeated ...
        with pytest.raises(ConnectionLost) as e:
            c.call("shutdown")
        assert str(e.value) == "shutdown: sluiced closed the connection without answering"
        assert [r["method"] for r in srv.requests] == ["status", "shutdown"]
        assert c.call("status")["node"] == "t"  # ... and the client recovers
        # A read is sent again once on a new connection (and fails again here).
        with pytest.raises(ConnectionLost) as e:
            c.call("stats")
        assert str(e.value) == "stats: sluiced closed the connection without answering"
        assert [r["method"] for r in srv.requests][-2:] == ["stats", "stats"]


def test_server_closes_without_answering(sockdir: Path) -> None:
    with server(sockdir, handler=lambda req: "close"), Client("t", sockdir / "t.sock") as c:
        with pytest.raises(ConnectionLost) as e:
            c.call("status")
        assert str(e.value) == "status: sluiced closed the connection without answering"


def test_server_sends_garbage(sockdir: Path) -> None:
    with server(sockdir, handler=lambda req: b"hello\n"), Client("t", sockdir / "t.sock") as c:
        with pytest.raises(ConnectionLost) as e:
            c.call("status")
        assert str(e.value).startswith("status: sluiced sent a line that is not JSON")


def test_server_sends_json_that_is_not_a_response(sockdir: Path) -> None:
    with server(sockdir, handler=lambda req: b"[1]\n"), Client("t", sockdir / "t.sock") as c:
        with pytest.raises(ConnectionLost) as e:
            c.call("status")
        assert str(e.value) == ("status: sluiced sent a JSON-RPC response that is not an "
                                "object: [1]")


def test_timeout(sockdir: Path) -> None:
    with server(sockdir, handler=lambda req: "silence"), \
            Client("t", sockdir / "t.sock", timeout=0.2) as c:
        t0 = time.monotonic()
        with pytest.raises(RpcTimeout) as e:
            c.call("status")
        assert time.monotonic() - t0 < 2
        assert str(e.value) == "status: no answer from sluiced within 0.2 s"


def test_no_server(sockdir: Path) -> None:
    c = Client("nowhere", sockdir / "none.sock")
    with pytest.raises(ConnectError) as e:
        c.call("status")
    assert str(e.value) == (
        f"cannot connect to {sockdir}/none.sock: no sluiced is running for node 'nowhere' "
        f"(start one with `sluice up DEPLOYMENT.yaml`, or give the node name with --node)")


def _full_backlog(path: Path) -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket that accepts nothing, with its backlog filled: the
    next connect gets EAGAIN at once (a Unix socket does not wait)."""
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(str(path))
    lst.listen(0)
    waiting = []
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(str(path))
        except BlockingIOError:
            s.close()
            return lst, waiting
        waiting.append(s)


def test_a_full_listen_backlog_is_waited_for(sockdir: Path) -> None:
    lst, waiting = _full_backlog(sockdir / "b.sock")
    got: list[Any] = []

    def connect() -> None:
        c = Client("b", sockdir / "b.sock", timeout=5.0)
        try:
            c.connect()
            got.append("connected")
        except ConnectError as e:
            got.append(e)
        finally:
            c.close()

    t = threading.Thread(target=connect)
    t.start()
    time.sleep(0.3)
    assert got == []  # still trying: the queue is full
    lst.accept()[0].close()  # room for one
    t.join(5)
    assert got == ["connected"]
    for s in [lst, *waiting]:
        s.close()


def test_a_backlog_that_stays_full_is_a_clear_error(sockdir: Path) -> None:
    lst, waiting = _full_backlog(sockdir / "b.sock")
    c = Client("b", sockdir / "b.sock", timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(ConnectError) as e:
        c.connect()
    assert 0.3 <= time.monotonic() - t0 < 3
    assert str(e.value) == (
        f"cannot connect to {sockdir}/b.sock: sluiced took no new connection within 0.3 s "
        f"(its queue of waiting connections stayed full: is its control thread stuck? see "
        f"its log)")
    for s in [lst, *waiting]:
        s.close()


def test_patience_waits_longer_inside_only(sockdir: Path) -> None:
    def slow(req: dict[str, Any]) -> Any:
        time.sleep(0.4)  # a rule build, say: longer than the client's 0.2 s
        return {"jsonrpc": "2.0", "id": req["id"], "result": {"added": 1}}

    with server(sockdir, handler=slow), Client("t", sockdir / "t.sock", timeout=0.2) as c:
        with c.patience(rule_build_seconds(1)):
            assert c.timeout == 10.005
            assert c.call("rule.add", rules=[{"graph": "g"}]) == {"added": 1}
        assert c.timeout == 0.2  # (test_timeout: a call then gives up after 0.2 s)
    assert rule_build_seconds(4096) > rule_build_seconds(100) > 10


def test_default_socket_path() -> None:
    assert Client("demo").socket_path == Path("/var/run/sluice/demo.sock")
    assert Client().socket_path == Path("/var/run/sluice/sluice.sock")


def test_wait_ready(sockdir: Path) -> None:
    path = sockdir / "t.sock"
    started: list[FakeSluiced] = []
    timer = threading.Timer(0.3, lambda: started.append(FakeSluiced(path)))
    timer.start()
    try:
        c = Client("t", path)
        t0 = time.monotonic()
        assert c.wait_ready(5.0)["node"] == "t"
        assert 0.2 < time.monotonic() - t0 < 4
        c.close()
    finally:
        timer.join()
        for s in started:
            s.close()


def test_wait_ready_times_out_and_can_give_up(sockdir: Path) -> None:
    c = Client("t", sockdir / "t.sock")
    with pytest.raises(RpcTimeout) as e:
        c.wait_ready(0.2)
    assert str(e.value).startswith(f"sluiced did not answer on {sockdir}/t.sock within 0.2 s "
                                   f"(last error: cannot connect")

    def check() -> None:
        raise RuntimeError("sluiced exited")

    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as gave_up:
        c.wait_ready(10.0, check=check)
    assert str(gave_up.value) == "sluiced exited"  # check's own error, at once
    assert time.monotonic() - t0 < 2
