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
from conftest import STATUS
from typer.testing import CliRunner

from sluice.api import is_loopback
from sluice.cli import app


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
         "--port", str(port), "--token", "tok"],
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
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
