"""What a new user meets on the README tour, against fakes: which node a
command talks to when --node is not given (and what it says when it
cannot tell), sluiced's errors said in commands instead of JSON-RPC
methods, `sluice status`'s durations, and `sluice up` refusing a node that
runs before it prints anything, naming the `sluice up` to stop."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli import deployment, fake, no_processes_left, node_name  # noqa: F401
from test_client import FakeSluiced, default_handler
from typer.testing import CliRunner

import sluice.cli
import sluice.cli.common
from sluice.cli import app
from sluice.core.deploy import load_deployment
from sluice.runtime.client import command_text
from sluice.runtime.launch import Launcher

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "graphs"


# -- which node: --node, $SLUICE_NODE, else the one running ----------------------------

@pytest.fixture
def sockdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty SOCKET_DIR (short: sun_path has 108 bytes), no $SLUICE_NODE."""
    d = Path(tempfile.mkdtemp(prefix="sld", dir="/tmp"))
    monkeypatch.setattr(sluice.runtime.client, "SOCKET_DIR", d)
    monkeypatch.setattr(sluice.cli.common, "SOCKET_DIR", d)
    monkeypatch.delenv("SLUICE_NODE", raising=False)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def stale(path: Path) -> None:
    """A socket file nobody listens on: what a killed sluiced leaves."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()


def status_handler(name: str) -> Any:
    def handler(req: Any) -> Any:
        if isinstance(req, dict) and req.get("method") == "status":
            return {"jsonrpc": "2.0", "id": req["id"],
                    "result": {"node": name, "pid": 7, "uptime_s": 8.93115938576923}}
        return default_handler(req)
    return handler


# every command that takes --node and talks to the node: (its words, its arguments)
NODE_COMMANDS: list[tuple[tuple[str, ...], list[str]]] = [
    (("status",), []), (("stats",), []), (("chain", "get"), []), (("nf", "list"), []),
    (("graph", "get"), []), (("rule", "list"), []), (("flow", "list"), []),
    (("flow", "get"), ["1"]), (("flow", "request", "list"), []),
    (("events",), ["--count", "1"]), (("top",), ["--once"]), (("rule", "remove"), ["4"]),
    (("graph", "remove"), ["g"]), (("graph", "apply"), [str(EXAMPLES / "anomaly.yaml")]),
    (("lb", "set"), ["s", "rr"]), (("nf", "scale"), ["s", "1"]),
    (("nf", "stop"), ["3"]),
    (("flow", "delete"), ["--all"]), (("chain", "set"), ["a", "port:out"]),
    (("rule", "add"), ["--graph", "g"]), (("flow", "request", "skip-me"), ["s", "--all-flows"]),
    (("flow", "request", "request-me"), ["s", "--all-flows"]),
    (("flow", "request", "change-default"), ["s", "--to", "t", "--all-flows"]),
    (("flow", "request", "message"), ["s", "k", "v"]),
    (("flow", "request", "remove"), ["1"]), (("api",), ["--port", "1"]),
    (("rx", "pause"), []), (("rx", "resume"), [])]


def test_every_node_command_is_tried() -> None:
    import typer.main

    found = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))
        if any("--node" in p.opts for p in getattr(cmd, "params", [])):
            found.append(path)

    walk(typer.main.get_command(app), ())
    assert sorted(found) == sorted(words for words, _ in NODE_COMMANDS)


def test_several_nodes_running_are_named(sockdir: Path) -> None:
    a = FakeSluiced(sockdir / "lab.sock", handler=status_handler("lab"))
    b = FakeSluiced(sockdir / "demo.sock", handler=status_handler("demo"))
    stale(sockdir / "old.sock")
    try:
        for words, rest in NODE_COMMANDS:
            args = [*words, *rest]
            r = runner.invoke(app, args)
            assert (r.exit_code, r.stdout, r.stderr) == (
                1, "", "2 nodes are running (demo, lab): say which with --node NAME (or set "
                       "SLUICE_NODE)\n"), args
        assert a.requests == [] and b.requests == []
        r = runner.invoke(app, ["status", "--node", "lab"])
        assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "node:          lab")
        r = runner.invoke(app, ["status"], env={"SLUICE_NODE": "demo"})
        assert (r.exit_code, r.stdout.splitlines()[0]) == (0, "node:          demo")
        # a node that does not run: the ones that do are named
        for words, rest in NODE_COMMANDS[:3]:
            args = [*words, *rest]
            r = runner.invoke(app, [*args, "--node", "nosuch"])
            assert (r.exit_code, r.stderr) == (
                1, f"cannot connect to {sockdir}/nosuch.sock: no sluiced is running for node "
                   f"'nosuch'; running: demo, lab: say which with --node NAME\n"), args
        r = runner.invoke(app, ["status"], env={"SLUICE_NODE": "old"})
        assert (r.exit_code, r.stderr) == (
            1, f"cannot connect to {sockdir}/old.sock: no sluiced is running for node 'old' "
               f"(from $SLUICE_NODE); running: demo, lab: say which with --node NAME\n")
    finally:
        a.close()
        b.close()


def test_the_one_node_running_is_used(sockdir: Path) -> None:
    stale(sockdir / "sluice.sock")  # a killed sluiced's socket does not count
    stale(sockdir / "old.sock")
    srv = FakeSluiced(sockdir / "demo.sock", handler=status_handler("demo"))
    try:
        r = runner.invoke(app, ["status"])
        assert (r.exit_code, r.stderr) == (0, "")
        assert r.stdout == "node:          demo\npid:           7\nuptime:        8.9 s\n"
        assert [q["method"] for q in srv.requests] == ["status"]
    finally:
        srv.close()


def test_no_node_running(sockdir: Path) -> None:
    stale(sockdir / "old.sock")
    for words, rest in NODE_COMMANDS[:4]:
        args = [*words, *rest]
        r = runner.invoke(app, args)
        assert (r.exit_code, r.stderr) == (
            1, f"no sluiced is running (none listens on a socket in {sockdir}/): start one "
               f"with `sluice up DEPLOYMENT.yaml`\n"), args
        r = runner.invoke(app, [*args, "--node", "demo"])
        assert (r.exit_code, r.stderr) == (
            1, f"cannot connect to {sockdir}/demo.sock: no sluiced is running for node "
               f"'demo', nor for any other node: start one with `sluice up "
               f"DEPLOYMENT.yaml`\n"), args


# -- sluiced's errors, said in commands -------------------------------------------------------

def test_every_method_the_cli_calls_has_its_command() -> None:
    src = "".join(p.read_text() for p in sorted(Path(sluice.cli.__file__).parent.glob("*.py")))
    called = set(re.findall(r'_call\([^)]*?"([a-z.]+)"', src, re.S))
    called |= set(re.findall(r'\bc\.call\("([a-z.]+)"', src))
    called |= {"rule.list", "subscribe"}  # Client.rules() and Client.events()
    assert called <= set(sluice.cli.COMMANDS), called - set(sluice.cli.COMMANDS)
    # and the methods whose lists a command shows (test_method_names.py);
    # service.list is also called by name, for the close names of a note
    assert set(sluice.cli.COMMANDS) - called == {"port.list"}


def test_method_names_become_commands() -> None:
    assert command_text("no rule with id 4; see rule.list") == (
        "no rule with id 4; see `sluice rule list`")
    assert command_text("too many kept requests: remove one (flow.requests lists them, "
                        "flow.request.remove) or raise --max-wildcards") == (
        "too many kept requests: remove one (`sluice flow request list` lists them, "
        "`sluice flow request remove`) or raise --max-wildcards")
    assert command_text("ask again once the chain is set (chain.set).") == (
        "ask again once the chain is set (`sluice chain set`).")
    # a method with no command of its own: the command that shows its list;
    # no command at all: as it is; words that are not methods: as they are
    assert command_text("no service x; service.list shows the services; status ok") == (
        "no service x; `sluice nf list` shows the services; status ok")
    assert command_text("rx.pause, then rx.resume") == (
        "`sluice rx pause`, then `sluice rx resume`")
    assert command_text("shutdown it") == "shutdown it"
    assert command_text("stats.flows.live and nf.list mbuf_cache") == (
        "stats.flows.live and `sluice nf list` mbuf_cache")


def errors_handler(req: Any) -> Any:
    m = req.get("method")
    msgs = {"rule.remove": "no rule with id 4; see rule.list",
            "flow.get": "no flow with id 999999; see flow.list",
            "graph.get": "no graph named 'x'; see graph.get",
            "flow.request.remove": "no kept wildcard request with id 2; see flow.requests"}
    if m in msgs:
        return {"jsonrpc": "2.0", "id": req["id"],
                "error": {"code": -32000, "message": msgs[m]}}
    return default_handler(req)


def test_errors_say_commands_and_json_keeps_the_rpc_error(tmp_path: Path) -> None:
    d = Path(tempfile.mkdtemp(prefix="sle", dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=errors_handler)
    sock = ["--socket", str(d / "n.sock")]
    try:
        for args, err in (
                (["rule", "remove", "4"],
                 "sluice rule remove: no rule with id 4; see `sluice rule list`"),
                (["flow", "get", "999999"],
                 "sluice flow get: no flow with id 999999; see `sluice flow list`"),
                # not "see `sluice graph get`" alone: the command just typed
                (["graph", "get", "x"],
                 "sluice graph get: no graph named 'x'; see `sluice graph get` (without a "
                 "name: all graphs)"),
                (["flow", "request", "remove", "2"],
                 "sluice flow request remove: no kept wildcard request with id 2; see "
                 "`sluice flow request list`")):
            r = runner.invoke(app, [*args, *sock])
            assert (r.exit_code, r.stdout, r.stderr) == (1, "", err + "\n"), args
        r = runner.invoke(app, ["rule", "remove", "4", "--json", *sock])
        assert (r.exit_code, r.stderr) == (
            1, "rule.remove: no rule with id 4; see rule.list (JSON-RPC error -32000)\n")
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


def test_no_answer_says_the_command(tmp_path: Path) -> None:
    d = Path(tempfile.mkdtemp(prefix="sle", dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=lambda req: [])  # answers nothing
    try:
        r = runner.invoke(app, ["rule", "list", "--socket", str(d / "n.sock"),
                                "--timeout", "0.2"])
        assert (r.exit_code, r.stderr) == (
            1, "sluice rule list: no answer from sluiced within 0.2 s\n")
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


# -- sluice status ------------------------------------------------------------------------------

def test_durations() -> None:
    seconds = (0, 0.04, 1.0, 8.93115938576923, 9.96, 42.7, 185, 3599.9, 8040, 86399, 277200)
    assert [sluice.cli._duration(s) for s in seconds] == [
        "0 s", "0 s", "1 s", "8.9 s", "10 s", "42 s", "3 min 5 s", "59 min 59 s",
        "2 h 14 min", "23 h 59 min", "3 d 5 h"]


def test_status_is_read_by_people_json_is_not(tmp_path: Path) -> None:
    st = {"node": "demo", "pid": 7, "uptime_s": 8.93115938576923, "rx_enabled": True,
          "methods": ["status", "stats"],
          "mbufs": {"size": 8191, "in_use": 12, "leaked": 0,
                    "pools": [{"name": "sl_demo_pkts", "socket": 0, "size": 8191,
                               "in_use": 12}]}}

    def handler(req: Any) -> Any:
        return {"jsonrpc": "2.0", "id": req["id"], "result": st}

    d = Path(tempfile.mkdtemp(prefix="sls", dir="/tmp"))
    srv = FakeSluiced(d / "n.sock", handler=handler)
    try:
        r = runner.invoke(app, ["status", "--socket", str(d / "n.sock")])
        assert r.stdout == ("node:          demo\n"
                            "pid:           7\n"
                            "uptime:        8.9 s\n"
                            "rx_enabled:    True\n"
                            "methods:       status, stats\n"
                            "mbufs:         size 8191, in_use 12, leaked 0, pools (name "
                            "sl_demo_pkts, socket 0, size 8191, in_use 12)\n")
        r = runner.invoke(app, ["status", "--socket", str(d / "n.sock"), "--json"])
        assert json.loads(r.stdout) == st
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


# -- sluice up on a node that runs ----------------------------------------------------------------

def test_up_refuses_a_running_node_before_its_banner(fake: Path) -> None:  # noqa: F811
    dep = deployment(fake)
    owner_cmd = " ".join(a.decode() for a in Path("/proc/self/cmdline").read_bytes()
                         .rstrip(b"\0").split(b"\0"))
    owner_cmd = owner_cmd if len(owner_cmd) <= 80 else owner_cmd[:77] + "..."
    with Launcher(load_deployment(dep), log_dir=fake / "run1"):
        r = runner.invoke(app, ["up", str(dep), "--log-dir", str(fake / "run2")])
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == (f"node '{node_name()}' is already running, started by pid "
                        f"{os.getpid()} ({owner_cmd}): stop that (Ctrl-C in its "
                        f"terminal, or `kill {os.getpid()}`), or give this "
                        f"deployment another node.name\n")
    assert not (fake / "run2").exists()
    no_processes_left(fake)

