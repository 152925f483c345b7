"""How the API serves the dashboard's files: at / and /static/, outside the
OpenAPI spec, without the token (every API call of the page needs it), and
nothing in them loads from another host."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from sluice.api import create_app
from sluice.web import STATIC

SOCK = "/nonexistent/t.sock"  # nothing here talks to sluiced
NOT_FOUND = ("{}: no such file of the dashboard (/static/ has dashboard.css, dashboard.js, "
             "index.html): open / for the dashboard")


def test_page_and_static_files_without_a_token() -> None:
    api = TestClient(create_app("t1", SOCK))
    r = api.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<title>Sluice · t1</title>" in r.text and 'data-node="t1"' in r.text
    js = api.get("/static/dashboard.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert js.text == (STATIC / "dashboard.js").read_text()
    assert api.get("/static/dashboard.css").status_code == 200
    r = api.get("/static/nope.js")
    assert (r.status_code, r.json()) == (404, {"detail": NOT_FOUND.format("/static/nope.js")})
    r = api.get("/static/%2e%2e/__init__.py")  # not the package's source
    assert (r.status_code, r.json()) == (404, {
        "detail": NOT_FOUND.format("/static/../__init__.py")})
    paths = api.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if not p.startswith("/api/v1/") and p != "/metrics"], paths


def test_with_a_token_only_the_page_loads_without_it() -> None:
    api = TestClient(create_app("t2", SOCK, token="s3cret"))
    assert api.get("/").status_code == 200
    assert api.head("/").status_code == 200
    assert api.get("/static/dashboard.js").status_code == 200
    r = api.get("/static/nope.js")
    assert (r.status_code, r.json()) == (404, {"detail": NOT_FOUND.format("/static/nope.js")})
    refused = {"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' or "
                         "'X-Sluice-Token: TOKEN'"}
    for path in ["/api/v1/stats", "/api/v1/events", "/metrics", "/openapi.json", "/docs",
                 "/favicon.ico", "/static"]:
        r = api.get(path)
        assert (r.status_code, r.json(), r.headers["WWW-Authenticate"]) == (
            401, refused, "Bearer"), path
    r = api.post("/")
    assert (r.status_code, r.json()) == (401, refused)
    # the token passes; no sluiced behind SOCK
    r = api.get("/api/v1/stats", headers={"Authorization": "Bearer s3cret"})
    assert (r.status_code, r.json()) == (503, {
        "detail": f"cannot connect to {SOCK}: no sluiced is running for node 't2' (start one "
                  f"with `sluice up DEPLOYMENT.yaml`, or give the node name with --node)"})


def test_node_name_is_escaped() -> None:
    r = TestClient(create_app('a"<b>', SOCK)).get("/")
    assert "<title>Sluice · a&quot;&lt;b&gt;</title>" in r.text


def test_no_outside_resource() -> None:
    # only the SVG namespace may name a host: nothing is fetched from anywhere
    for f in STATIC.iterdir():
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s\"')]*", f.read_text()))
        assert urls <= {"http://www.w3.org/2000/svg"}, (f.name, urls)


def test_without_its_files_the_page_says_to_reinstall(tmp_path, monkeypatch) -> None:
    import sluice.web

    monkeypatch.setattr(sluice.web, "STATIC", tmp_path / "static")  # as a bad install had it
    for token in (None, "s3cret"):
        api = TestClient(create_app("t3", SOCK, token=token))
        r = api.get("/")
        assert r.status_code == 500
        assert r.json()["detail"].startswith(
            f"the dashboard's files are not installed ({tmp_path}/static/index.html is "
            f"missing): reinstall the sluice package from a source tree (`pip install .`")
        r = api.get("/static/dashboard.js")
        assert r.status_code == 404
        assert r.json()["detail"].startswith(
            f"/static/dashboard.js: the dashboard's files are not installed ({tmp_path}/"
            f"static is missing)")
