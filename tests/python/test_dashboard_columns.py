"""The dashboard's columns (python/sluice/web/static/): each <th data-field> names a
field of the stats schema, and the page's script heads them by the same rules as
sluice.core.counters.heading (its part between "heading-begin" and "heading-end", run in
node on every field of the schema)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from sluice.core.counters import SchemaError, builtin, by_word, heading
from sluice.web import STATIC

PAGE = (STATIC / "index.html").read_text()
SCRIPT = (STATIC / "dashboard.js").read_text()


def _fields(page: str) -> list[str]:
    return re.findall(r'data-field="([^"]*)"', page)


def _check(names: list[str]) -> None:
    for n in names:
        table, _, name = n.partition(".")
        builtin().field(table, name)


def test_every_column_is_a_field_of_the_schema() -> None:
    names = _fields(PAGE)
    assert set(names) == {"port.rx_pkts", "port.tx_pkts", "port.drops", "nf.instance",
                          "nf.state", "nf.rx_pkts", "nf.tx_pkts", "nf.drops", "nf.rx_ring",
                          "nf.cycles_per_pkt", "edge.from", "edge.to", "edge.pkts",
                          "edge.bytes", "node.drops"}
    _check(names)
    with pytest.raises(SchemaError, match="table 'port' has no field 'rx_pktz'"):
        _check(_fields(PAGE.replace('"port.rx_pkts"', '"port.rx_pktz"')))
    # the page's heads are the script's to write: none is typed in the page
    for th in re.findall(r"<th[^>]*data-field[^>]*>([^<]*)</th>", PAGE):
        assert th == ""


def test_the_script_heads_fields_as_sluice_counters_does() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail("no node: install nodejs (scripts/setup.sh does)", pytrace=False)
    part = SCRIPT[SCRIPT.index("// heading-begin"):SCRIPT.index("// heading-end")]
    schema = builtin()
    fields = [{"name": f.name, "kind": f.kind, "unit": f.unit, "help": f.help,
               "type": f.type} for t in schema.tables for f in schema.fields(t)]
    # and a few a newer sluiced may add
    fields += [{"name": n, "kind": k, "unit": u, "help": h, "type": "integer"} for n, k, u, h in (
        ("tx_wakeups", "counter", "", "wake-ups"), ("rx_bytes_dropped", "counter", "bytes", "x"),
        ("constructor", "gauge", "", "x"), ("rx_", "counter", "packets", "x by port."))]
    code = part + ("\nconst fs = " + json.dumps(fields) + ";\nconsole.log(JSON.stringify("
                   "fs.map((f) => [heading(f, false), heading(f, true), byWord(f)])));\n")
    out = subprocess.run([node, "-e", code], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    from sluice.core.counters import Field
    want = [[heading(Field(**f), rate=False), heading(Field(**f), rate=True),
             by_word(Field(**f))] for f in fields]
    assert got == want
    assert ["in", "in/s", "key"] in got and ["dropped", "drop/s", "reason"] in got


def test_the_page_carries_the_packages_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Heads before the node's schema is read (and without the token): the package's,
    in the page, with nothing in a help able to end its <script>."""
    from fastapi.testclient import TestClient

    import sluice.web
    from sluice.api import create_app
    from sluice.core.counters import builtin_json

    def carried() -> str:
        page = TestClient(create_app("t", "/nonexistent/t.sock", token="s3cret")).get("/").text
        m = re.search(r'<script id="stats-schema" type="application/json">(.*?)</script>',
                      page, re.S)
        assert m is not None, page
        return m.group(1)

    assert json.loads(carried()) == builtin_json()
    odd = builtin_json()
    odd["tables"]["port"][2]["help"] = "a </script><b>&amp; help"
    monkeypatch.setattr(sluice.web, "builtin_json", lambda: odd)
    text = carried()
    assert "</" not in text and "<b>" not in text and json.loads(text) == odd
