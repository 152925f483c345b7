"""sluiced's error texts name its JSON-RPC methods ("no service x;
service.list shows the services"); a user of the CLI is told the `sluice`
command instead, a user of the REST API the endpoint, both from one table
(client.METHODS). These tests keep that table true: against sluiced's own
method table and the methods its messages name (src/mgr), the CLI's
commands and the API's routes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi.testclient import TestClient
from test_client import fake_socket
from typer.testing import CliRunner

from sluice.api import ENDPOINTS, PREFIX, SOCKET_METHODS, create_app, rest_text
from sluice.cli import app
from sluice.runtime.client import COMMANDS, METHODS, command_text

ROOT = Path(__file__).resolve().parents[2]
MGR = ROOT / "src" / "mgr"
runner = CliRunner()


def rpc_methods() -> set[str]:
    """The names in sluiced's method tables (each module's `const struct
    sl_rpc_method sl_*_methods[]`, src/mgr and its folders)."""
    names: set[str] = set()
    for f in sorted(MGR.rglob("*.c")):
        src = f.read_text()
        for start in re.finditer(r"const struct sl_rpc_method sl_\w+_methods\[\] = \{", src):
            table = src[start.end():]
            table = table[:table.index("};")]
            names |= set(re.findall(r'\{"([a-z.]+)",', table))
    assert names, "no sl_rpc_method table found in src/mgr"
    return names


def mentioned_methods() -> dict[str, list[str]]:
    """Each dotted method that a string of sluiced's sources names inside a
    longer text (its messages and logs; not the method table, not an
    event's name), and the texts that name it."""
    found: dict[str, list[str]] = {}
    dotted = [m for m in METHODS if "." in m]
    for f in sorted(MGR.rglob("*.c")):  # modules in folders too
        for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', f.read_text()):
            for m in dotted:
                if lit != m and re.search(rf"(?<![\w.]){re.escape(m)}(?![\w-]|\.\w)", lit):
                    found.setdefault(m, []).append(f"{f.name}: {lit}")
    return found


def cli_commands() -> set[str]:
    def walk(t: typer.Typer, path: list[str]) -> Iterator[str]:
        for c in t.registered_commands:
            assert c.callback is not None
            yield " ".join([*path, c.name or c.callback.__name__.replace("_", "-")])
        for g in t.registered_groups:
            assert g.typer_instance is not None and g.name is not None
            yield " ".join([*path, g.name])
            yield from walk(g.typer_instance, [*path, g.name])

    return set(walk(app, ["sluice"]))


def api_routes() -> set[tuple[str, str]]:
    """(HTTP method or WS, path with {} for each parameter)."""
    out = set()
    for r in create_app("t", "/nonexistent/t.sock").routes:
        path = re.sub(r"\{\w+\}", "{}", getattr(r, "path", ""))
        for verb in getattr(r, "methods", None) or {"WS"}:
            out.add((verb, path))
    return out


def test_the_table_has_every_method_of_sluiced() -> None:
    assert set(METHODS) == rpc_methods()


def test_every_method_sluiced_names_has_a_command_and_an_endpoint() -> None:
    found = mentioned_methods()
    # what the messages name today (a new one is checked all the same)
    assert {"service.list", "nf.list", "port.list", "rule.list", "graph.get",
            "graph.apply", "chain.set", "flow.list", "flow.requests",
            "flow.request.remove"} <= set(found), sorted(found)
    for m, texts in found.items():
        assert m in COMMANDS, f"{m} has no command, named by {texts}"
        assert m in ENDPOINTS, f"{m} has no endpoint, named by {texts}"


def test_every_command_and_endpoint_of_the_table_exists() -> None:
    commands, routes = cli_commands(), api_routes()
    for m, cmd in COMMANDS.items():
        assert cmd in commands, (m, cmd)
    for m, endpoints in SOCKET_METHODS.items():
        for e in endpoints.split(", "):
            e = e.split(" (")[0]
            verb, _, path = e.partition(" ") if " " in e else ("WS", "", e)
            assert (verb, re.sub(r"\{\w+\}", "{}", PREFIX + path)) in routes, (m, e)
    # the first endpoint, which messages name, prefix and all
    assert ENDPOINTS["graph.get"] == "GET /api/v1/graphs"
    assert ENDPOINTS["subscribe"] == "GET /api/v1/events"
    assert set(METHODS) - set(COMMANDS) == {"shutdown"}
    assert set(METHODS) - set(ENDPOINTS) == {"shutdown"}


def test_texts_of_sluiced_said_as_commands_and_endpoints() -> None:
    said = {
        "no service x; service.list shows the services":
            ("no service x; `sluice nf list` shows the services",
             "no service x; `GET /api/v1/services` shows the services"),
        "no running NF instance 9; nf.list shows them":
            ("no running NF instance 9; `sluice nf list` shows them",
             "no running NF instance 9; `GET /api/v1/nfs` shows them"),
        "param 'in_port': no port named 'x'; use a name from port.list":
            ("param 'in_port': no port named 'x'; use a name from `sluice stats`",
             "param 'in_port': no port named 'x'; use a name from `GET /api/v1/ports`"),
        "no graph named 'g'; see graph.get":
            ("no graph named 'g'; see `sluice graph get` (without a name: all graphs)",
             "no graph named 'g'; see `GET /api/v1/graphs`"),
        "no graph named 'g': apply it first (graph.apply)":
            ("no graph named 'g': apply it first (`sluice graph apply`)",
             "no graph named 'g': apply it first (`PUT /api/v1/graphs/{name}`)"),
        "removed; replace it with chain.set or graph.apply":
            ("removed; replace it with `sluice chain set` or `sluice graph apply`",
             "removed; replace it with `PUT /api/v1/chain` or `PUT /api/v1/graphs/{name}`"),
        "remove one (flow.requests lists them, flow.request.remove)":
            ("remove one (`sluice flow request list` lists them, "
             "`sluice flow request remove`)",
             "remove one (`GET /api/v1/flow-requests` lists them, "
             "`DELETE /api/v1/flow-requests/{id}`)"),
        "stats.flows.live, status ok": ("stats.flows.live, status ok",) * 2,
    }
    for text, (cli, rest) in said.items():
        assert (command_text(text), rest_text(text)) == (cli, rest), text


# -- through the CLI and the API, against a fake sluiced ------------------------------------

def nosuch_handler(req: Any) -> Any:
    msgs = {"nf.scale": "no service nosuch; service.list shows the services",
            "lb.set": "no service nosuch; service.list shows the services",
            "nf.stop": "no running NF instance 9; nf.list shows them"}
    m = req.get("method")
    if m in msgs:
        return {"jsonrpc": "2.0", "id": req["id"],
                "error": {"code": -32000, "message": msgs[m]}}
    return {"jsonrpc": "2.0", "id": req["id"],
            "error": {"code": -32601, "message": f"unknown method '{m}'"}}


@pytest.fixture
def nosuch() -> Iterator[Path]:
    with fake_socket(nosuch_handler, "slm") as path:
        yield path


def test_cli_says_the_command(nosuch: Path) -> None:
    for args, err in (
            (["nf", "scale", "nosuch", "2"],
             "sluice nf scale: no service nosuch; `sluice nf list` shows the services"),
            (["lb", "set", "nosuch", "rr"],
             "sluice lb set: no service nosuch; `sluice nf list` shows the services"),
            (["nf", "stop", "9"],
             "sluice nf stop: no running NF instance 9; `sluice nf list` shows them")):
        r = runner.invoke(app, [*args, "--socket", str(nosuch)])
        assert (r.exit_code, r.stdout, r.stderr) == (1, "", err + "\n"), args


def test_rest_says_the_endpoint(nosuch: Path) -> None:
    api = TestClient(create_app("n", str(nosuch)))
    for (verb, url, body), detail in (
            (("POST", "/services/nosuch/scale", {"replicas": 2}),
             "no service nosuch; `GET /api/v1/services` shows the services"),
            (("PUT", "/services/nosuch/lb", {"mode": "rr"}),
             "no service nosuch; `GET /api/v1/services` shows the services"),
            (("POST", "/nfs/9/stop", None),
             "no running NF instance 9; `GET /api/v1/nfs` shows them")):
        r = api.request(verb, PREFIX + url, json=body)
        assert (r.status_code, r.json()) == (404, {"detail": detail}), url
