"""`sluice api`: the loopback/token rule, and a real server against the fake sluiced."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from apifake import STATUS
from typer.testing import CliRunner

from sluice.api import ApiServer, create_app, is_loopback, parse_listen
from sluice.cli import app
from sluice.runtime.client import SluiceError


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.7", "::", "example.com"])
def test_non_loopback_host_needs_a_token(host: str) -> None:
    r = CliRunner().invoke(app, ["api", "--host", host])
    assert r.exit_code == 1
    assert r.output.strip() == (
        f"sluice api: --host {host} is not a loopback address: give --token TOKEN too "
        f"(clients then send 'Authorization: Bearer TOKEN')")


def test_loopback_addresses() -> None:
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.5", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "10.0.0.1", "", "host"]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sluice_api_serves_on_loopback(fake: Any, sockdir: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "api", "--socket", str(sockdir / "t.sock"),
         "--port", str(port), "--token", "tok", "--max-body-kb", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "SLUICE_API_TOKEN": ""})
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/v1/status",
                              headers={"Authorization": "Bearer tok"}, timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[0]
                assert time.monotonic() < deadline, "sluice api did not start"
                time.sleep(0.1)
        assert (r.status_code, r.json()) == (200, STATUS)
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).status_code == 401
        r = httpx.put(f"http://127.0.0.1:{port}/api/v1/chain", timeout=2,
                      headers={"Authorization": "Bearer tok"},
                      content=b'{"hops": [' + b'"fw", ' * 200 + b'"fw"]}')  # > 1 KiB
        assert (r.status_code, r.json()) == (413, {
            "detail": "the body is 1216 bytes, more than this API takes (1024 bytes): send a "
                      "smaller one"})
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_listening(proc: subprocess.Popen[str], url: str, **kw: Any) -> httpx.Response:
    deadline = time.monotonic() + 20
    while True:
        try:
            return httpx.get(url, timeout=2, **kw)
        except httpx.TransportError:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "sluice api did not start"
            time.sleep(0.1)


def _hold_subscription(fake: Any) -> None:
    """The fake sluiced answers subscribe and then sends nothing, keeping it open."""
    fake[0].fail["subscribe"] = [{"jsonrpc": "2.0", "id": 1, "result": {"subscribed": True}}]


def test_sluice_api_stops_at_once_on_ctrl_c_with_an_event_stream_open(
        fake: Any, sockdir: Path) -> None:
    _hold_subscription(fake)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sluice.cli", "api", "--socket", str(sockdir / "t.sock"),
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "SLUICE_API_TOKEN": ""})
    try:
        assert _wait_listening(proc, f"{url}/api/v1/status").json() == STATUS
        with httpx.Client(timeout=20) as c, c.stream("GET", f"{url}/api/v1/events") as r:
            lines = r.iter_lines()
            assert next(lines) == ": subscribed"
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                out = proc.communicate(timeout=5)[0]
            except subprocess.TimeoutExpired:
                pytest.fail("sluice api was still running 5 s after Ctrl-C with an event "
                            "stream open: the stream must end when the server stops")
            took = time.monotonic() - t0
            assert ": closing: the API server is stopping" in list(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert took < 5
    # what it prints once listening: where the API, metrics and dashboard are
    assert f"API: {url}/api/v1/status, metrics at {url}/metrics, dashboard at {url}/" in out


def test_api_server_stop_ends_open_event_streams(fake: Any, sockdir: Path) -> None:
    _hold_subscription(fake)
    server = ApiServer(create_app("t", str(sockdir / "t.sock"), keepalive=15.0),
                       "127.0.0.1", _free_port())
    server.start()
    try:
        with httpx.Client(timeout=20) as c:
            streams = [c.stream("GET", f"{server.url}/api/v1/events") for _ in range(2)]
            opened = [s.__enter__() for s in streams]
            its = [r.iter_lines() for r in opened]
            assert [next(i) for i in its] == [": subscribed"] * 2
            t0 = time.monotonic()
            server.stop()
            took = time.monotonic() - t0
            assert not server.thread.is_alive(), "the API thread still runs after stop()"
            assert took < 5, (f"ApiServer.stop() took {took:.1f} s with event streams open: "
                              f"they must end when the server stops")
            for i in its:  # each stream says why it ends, then ends
                assert ": closing: the API server is stopping" in list(i)
            for s in streams:
                s.__exit__(None, None, None)
    finally:
        server.stop()
    # the line `sluice up --api` prints
    assert server.describe() == (f"API: {server.url}/api/v1/status, metrics at "
                                 f"{server.url}/metrics, dashboard at {server.url}/")


# -- sluice up --api ---------------------------------------------------------------------------

def test_up_api_non_loopback_needs_a_token_and_is_checked_first(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["up", str(tmp_path / "none.yaml"), "--api", "0.0.0.0:8080"],
                           env={"SLUICE_API_TOKEN": ""})
    assert r.exit_code == 1
    assert r.output.strip() == (
        "--api 0.0.0.0 is not a loopback address: give --api-token TOKEN too "
        "(clients then send 'Authorization: Bearer TOKEN')")
    r = CliRunner().invoke(app, ["up", str(tmp_path / "none.yaml"), "--api", "8080"])
    assert (r.exit_code, r.output.strip()) == (
        1, "--api '8080': give HOST:PORT, e.g. 127.0.0.1:8080")


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_listen("[::1]:9100") == ("::1", 9100)
    for bad in ["127.0.0.1", ":80", "h:0", "h:70000", "h:x"]:
        with pytest.raises(SluiceError) as e:
            parse_listen(bad)
        assert str(e.value) == f"--api {bad!r}: give HOST:PORT, e.g. 127.0.0.1:8080"


def test_api_server_thread(fake: Any, sockdir: Path) -> None:
    port = _free_port()
    server = ApiServer(create_app("t", str(sockdir / "t.sock")), "127.0.0.1", port)
    server.start()
    try:
        assert server.url == f"http://127.0.0.1:{port}"
        assert httpx.get(f"{server.url}/api/v1/status", timeout=2).json() == STATUS
        # a second one on the same port cannot listen, and says so
        other = ApiServer(create_app("t", str(sockdir / "t.sock")), "127.0.0.1", port)
        with pytest.raises(SluiceError) as e:
            other.start()
        assert str(e.value) == (f"--api 127.0.0.1:{port}: cannot listen there (address in "
                                f"use, or not an address of this machine?)")
        assert not other.thread.is_alive()
    finally:
        server.stop()
    assert not server.thread.is_alive()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{server.url}/api/v1/status", timeout=2)


def _sockets() -> int:
    return sum(os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
               for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))


def test_event_stream_ends_when_the_client_goes_away(fake: Any, sockdir: Path) -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "result": {"subscribed": True}}
    fake[0].fail["subscribe"] = [ok]  # sluiced keeps the subscription open, sends nothing
    server = ApiServer(create_app("t", str(sockdir / "t.sock"), keepalive=0.1),
                       "127.0.0.1", _free_port())
    server.start()
    try:
        before = _sockets()
        with httpx.Client(timeout=5) as c, c.stream("GET", f"{server.url}/api/v1/events") as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            assert next(lines) == ": subscribed"
            assert next(lines) == ""
            assert next(lines) == ": keepalive"
            assert _sockets() > before
        deadline = time.monotonic() + 10
        while _sockets() > before:  # our end and the fake's end of the subscription
            assert time.monotonic() < deadline, "the subscription to sluiced stayed open"
            time.sleep(0.05)
    finally:
        server.stop()


@pytest.mark.parametrize("option,value", [
    ("--proto", "x"), ("--proto", "tcpx"), ("--proto", "300"), ("--dport", "70000"),
    ("--dport", "1-2-3"), ("--sport", "9-3"), ("--src", "10.0.0.1/8"), ("--dst", "nope"),
    ("--in-port", "in port")])
def test_rest_refuses_a_match_field_in_the_cli_words(fake: Any, sockdir: Path, option: str,
                                                     value: str) -> None:
    """POST /rules and `sluice rule add` check a match field with the same
    parser: the same words, the field named as each names it (in_port: port:NAME
    is not: the hint says it as REST takes it, test_endpoints.test_in_port_hint)."""
    from fastapi.testclient import TestClient

    cli = CliRunner().invoke(app, ["rule", "add", "-g", "web", option, value,
                                   "--socket", str(sockdir / "t.sock")])
    assert cli.exit_code == 1, cli.output
    prefix = f"sluice rule add: {option}: "
    assert cli.output.startswith(prefix), cli.output
    field = option[2:].replace("-", "_")
    api = TestClient(create_app("t", str(sockdir / "t.sock")))
    r = api.post("/api/v1/rules", json={"graph": "web", field: value})
    assert (r.status_code, r.json()) == (422, {
        "detail": f"{field}: {cli.output.strip()[len(prefix):]}"})
    assert fake[1].requests == []  # neither sent it to sluiced
