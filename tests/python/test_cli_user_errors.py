"""The CLI as a user meets it on the flow-director commands: sluiced's
params said as the options the user typed, and a reader that goes away
(`sluice rule list | head`) ending the command quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_client import fake_socket
from typer.testing import CliRunner

from sluice.cli import app

runner = CliRunner()
RULES = [{"id": i, "priority": 0, "match": {"proto": 17, "dport": i}, "graph": "g",
          "flows": 0} for i in range(1, 2001)]


def handler(req: Any) -> Any:
    m, p = req.get("method"), req.get("params") or {}
    if "in_port" in p or "in_port" in (p.get("rules") or [{}])[0]:
        return {"jsonrpc": "2.0", "id": req["id"], "error": {
            "code": -32602,
            "message": "param 'in_port': no port named 'nosuch'; use a name from port.list"}}
    if m == "flow.get":
        return {"jsonrpc": "2.0", "id": req["id"], "error": {
            "code": -32602, "message": "param 'id' (a flow id, from flow.list) is not a number"}}
    if m == "rule.list":
        off, lim = p.get("offset", 0), p.get("limit", 10000)
        return {"jsonrpc": "2.0", "id": req["id"], "result": {
            "rules": RULES[off:off + lim], "total": len(RULES),
            "truncated": off + lim < len(RULES)}}
    return {"jsonrpc": "2.0", "id": req["id"],
            "error": {"code": -32601, "message": f"unknown method '{m}'"}}


@pytest.fixture
def sock() -> Iterator[Path]:
    with fake_socket(handler, "slu") as path:
        yield path


def test_params_are_said_as_options(sock: Path) -> None:
    for args, err in (
            (["rule", "add", "-g", "g", "--in-port", "nosuch"],
             "sluice rule add: --in-port: no port named 'nosuch'; use a name from "
             "`sluice stats`"),
            (["flow", "list", "--in-port", "nosuch"],
             "sluice flow list: --in-port: no port named 'nosuch'; use a name from "
             "`sluice stats`"),
            # the form a deployment file gives a port in, hinted as the option
            (["rule", "add", "-g", "g", "--in-port", "port:in"],
             "sluice rule add: --in-port: 'port:in' is not a port name: write --in-port in"),
            # an argument, not an option: as sluiced says it
            (["flow", "get", "7"],
             "sluice flow get: param 'id' (a flow id, from `sluice flow list`) is not a "
             "number")):
        r = runner.invoke(app, [*args, "--socket", str(sock)])
        assert (r.exit_code, r.stdout, r.stderr) == (1, "", err + "\n"), args
    # --json: as sluiced said it
    r = runner.invoke(app, ["flow", "list", "--in-port", "nosuch", "--json",
                            "--socket", str(sock)])
    assert (r.exit_code, r.stderr) == (
        1, "flow.list: param 'in_port': no port named 'nosuch'; use a name from port.list "
           "(JSON-RPC error -32602)\n")


@pytest.mark.parametrize("args", [["rule", "list"],  # a table: rich's own handling
                                  ["rule", "list", "--json"]])  # typer.echo: ours
def test_a_reader_that_goes_away_ends_it_quietly(sock: Path, args: list[str]) -> None:
    p = subprocess.Popen([sys.executable, "-m", "sluice", *args, "--socket", str(sock)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "COLUMNS": "100"})
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # as `| head` does, before the output comes
    err = p.stderr.read()
    assert (p.wait(timeout=60), err) == (1, b"")
