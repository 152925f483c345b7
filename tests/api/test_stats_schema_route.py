"""GET /api/v1/stats/schema: what each field of /api/v1/stats is (sluiced's
`stats {"schema": true}`), the package's copy for a sluiced that does not describe
its stats, and sluiced's errors as on every route."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apifake import STATS, STATS_SCHEMA, FakeSluiced
from fastapi.testclient import TestClient

from sluice.api import create_app
from sluice.core.counters import Schema, builtin, builtin_json


def _api(sock: Path, token: str | None = None) -> TestClient:
    return TestClient(create_app("t", str(sock), token))


def test_the_schema_is_sluiceds(fake: Any, sockdir: Path) -> None:
    r = _api(sockdir / "t.sock").get("/api/v1/stats/schema")
    assert r.status_code == 200, r.text
    assert r.json() == STATS_SCHEMA
    assert Schema.parse(r.json()) == builtin()
    rx = next(f for f in r.json()["tables"]["port"] if f["name"] == "rx_pkts")
    assert rx == {"name": "rx_pkts", "kind": "counter", "type": "integer", "unit": "packets",
                  "help": "packets received from the port"}
    assert [(q["method"], q.get("params")) for q in fake[1].requests] == [
        ("stats", {"schema": True})]


def test_a_newer_sluiceds_field_is_served(sockdir: Path) -> None:
    raw: dict[str, Any] = {**STATS_SCHEMA, "tables": {
        **STATS_SCHEMA["tables"],
        "nf": [*STATS_SCHEMA["tables"]["nf"], {"name": "wakeups", "kind": "counter",
                                                "type": "integer", "unit": "",
                                                "help": "futex wake-ups the NF sent"}]}}
    srv = FakeSluiced(sockdir / "t.sock", handler=lambda req: {
        "jsonrpc": "2.0", "id": req["id"], "result": raw})
    try:
        r = _api(sockdir / "t.sock").get("/api/v1/stats/schema")
        assert r.status_code == 200 and r.json() == raw
    finally:
        srv.close()


def test_a_sluiced_without_the_schema_gets_the_packages(sockdir: Path) -> None:
    """A sluiced that ignores the param answers stats: the package's schema is served."""
    srv = FakeSluiced(sockdir / "t.sock", handler=lambda req: {
        "jsonrpc": "2.0", "id": req["id"], "result": STATS})
    try:
        r = _api(sockdir / "t.sock").get("/api/v1/stats/schema")
        assert r.status_code == 200 and r.json() == builtin_json()
    finally:
        srv.close()


def test_errors_and_the_token(fake: Any, sockdir: Path) -> None:
    api = _api(sockdir / "t.sock", token="s3cret")
    assert api.get("/api/v1/stats/schema").status_code == 401
    r = api.get("/api/v1/stats/schema", headers={"Authorization": "Bearer s3cret"})
    assert r.status_code == 200 and r.json() == STATS_SCHEMA
    r = _api(sockdir / "none.sock").get("/api/v1/stats/schema")
    assert r.status_code == 503 and r.json()["detail"].startswith("cannot connect to ")
    spec = _api(sockdir / "t.sock").get("/openapi.json").json()
    ok = spec["paths"]["/api/v1/stats/schema"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/StatsSchema"}
