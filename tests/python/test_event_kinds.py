"""`sluice events --kind K` takes only kinds sluiced sends (or their
families): the list, client.EVENT_KINDS, is checked against the mgr_event()
calls of sluiced's sources, so a new kind cannot be refused nor a removed
one accepted."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from sluice.cli import app
from sluice.runtime.client import EVENT_FAMILIES, EVENT_KINDS

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def published_kinds() -> set[str]:
    """The kinds named by the mgr_event() calls of src/mgr: the string
    literals of each call's kind argument, after sluiced's state m (one call
    names two, with ?:)."""
    kinds: set[str] = set()
    calls = 0
    for src in sorted((REPO / "src" / "mgr").rglob("*.c")):  # modules in folders too
        text = src.read_text()
        for m in re.finditer(r"\bmgr_event\((?:m, )?([^,;]*),", text):
            arg = m.group(1)
            if arg.startswith("const "):  # its definition
                continue
            names = re.findall(r'"([^"]*)"', arg)
            assert names, f"{src.name}: mgr_event({arg}, ...): a kind the test cannot read: " \
                          f"name it with a string literal"
            kinds.update(names)
            calls += 1
    assert calls >= 14, calls  # the reading found the calls
    return kinds


def test_the_list_is_what_sluiced_sends() -> None:
    assert sorted(EVENT_KINDS) == sorted(published_kinds())
    assert EVENT_FAMILIES == ("chain", "flow", "graph", "nf", "rule")


def test_the_docs_list_them() -> None:
    text = (REPO / "docs" / "graphs.md").read_text()
    para = text.split("prints each event as one JSON object `{kind, ts, data}`. The kinds:")[1]
    para = para.split("(`docs/control-socket.md`)")[0]
    assert re.findall(r"`([a-z.]+)`", para) == list(EVENT_KINDS)


def test_an_unknown_kind_is_refused() -> None:
    # refused before it connects: no node is needed (and none is waited for)
    r = runner.invoke(app, ["events", "--kind", "nosuch", "--kind", "flow", "--kind",
                            "nf.scale", "--kind", "nf.up.x", "--socket", "/nonexistent.sock"])
    valid = ("use a kind (nf.up, nf.down, nf.freed, nf.hung, nf.scale, nf.scale.failed, "
             "chain.set, graph.applied, graph.removed, rule.added, rule.removed, flow.request, "
             "flow.request.removed, nf.message) or a family (chain, flow, graph, nf, rule)")
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", (
        f"sluice events: --kind nosuch: sluiced sends no events of that kind; {valid}\n"
        f"sluice events: --kind nf.up.x: sluiced sends no events of that kind; {valid}\n"))


def test_kinds_and_families_are_taken() -> None:
    # accepted: the command goes on to connect (and says it cannot)
    for k in ("nf", "flow.request", "chain.set", "rule"):
        r = runner.invoke(app, ["events", "--kind", k, "--socket", "/nonexistent.sock"])
        assert (r.exit_code, r.stderr) == (1, (
            "cannot connect to /nonexistent.sock: no sluiced is running for node 'nonexistent' "
            "(start one with `sluice up DEPLOYMENT.yaml`, or give the node name with "
            "--node)\n")), k
