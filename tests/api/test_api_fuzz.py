"""The REST API under hostile and malformed requests, as
tests/integration/test_control_fuzz.py does for the control socket: a seeded
stream of requests to every route of the app (enumerated from app.routes, so
a new route is fuzzed without changes here) with mutated bodies, junk JSON and
bytes, hostile path and query values, odd methods and headers, against the
fake sluiced (apifake.py); then every route with every kind of error sluiced
can give; then targeted cases with exact statuses and messages.

Every answer must be well-formed JSON {"detail": "..."} with a 4xx status
(or 2xx when the request was valid), never a 5xx, never a traceback; the fake
must never get a request sluiced could not read; and the API must still
answer afterwards.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import apifake
import pytest
from apifake import STATUS, FakeSluiced, Sluiced
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Mount, WebSocketRoute
from starlette.websockets import WebSocketDisconnect

from sluice.api import PREFIX, SOCKET_METHODS, create_app

SEED = 1722
PER_ROUTE = 70  # requests per route and method of the fuzz
METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND"]
FLOW_KEY = "tcp 10.0.0.1:1234 > 10.0.0.2:80"
LOST = ": sluiced may have stopped or restarted; check that it runs (sluice status) and try again"

pytestmark = pytest.mark.timeout(120)

# Valid-looking requests per route: (path params, query, body). Mutations start
# from them; test_every_route_has_a_template keeps the list complete.
TEMPLATES: dict[tuple[str, str], tuple[dict[str, str], dict[str, str], Any]] = {
    ("GET", "/status"): ({}, {}, None), ("GET", "/nfs"): ({}, {}, None),
    ("POST", "/nfs/{instance}/stop"): ({"instance": "1"}, {}, None),
    ("GET", "/ports"): ({}, {}, None), ("GET", "/services"): ({}, {}, None),
    ("PUT", "/services/{service}/lb"): ({"service": "mon"}, {}, {"mode": "rr"}),
    ("POST", "/services/{service}/scale"): ({"service": "fw"}, {}, {"replicas": 2}),
    ("GET", "/stats"): ({}, {}, None), ("GET", "/stats/schema"): ({}, {}, None),
    ("GET", "/chain"): ({}, {}, None),
    ("PUT", "/chain"): ({}, {}, {"hops": ["fw", "mon", "port:out"]}),
    ("POST", "/rx/pause"): ({}, {}, None), ("POST", "/rx/resume"): ({}, {}, None),
    ("GET", "/events"): ({}, {"max_events": "1"}, None),
    ("GET", "/graphs"): ({}, {}, None), ("GET", "/graphs/{name}"): ({"name": "default"}, {}, None),
    ("PUT", "/graphs/{name}"): ({"name": "g1"}, {}, {"nodes": {"fw": ["mon", "drop"],
                                                               "mon": ["port:out"]},
                                                     "entry": "fw"}),
    ("DELETE", "/graphs/{name}"): ({"name": "g1"}, {}, None),
    ("POST", "/graphs/compile"): ({}, {}, {"name": "p1", "nfs": ["firewall", "monitor"]}),
    ("PUT", "/policies/{name}"): ({"name": "p1"}, {}, {"nfs": ["fw", "mon"], "declare": {
        "fw": {"reads": ["l3_addr"]}, "mon": {}}}),
    ("GET", "/rules"): ({}, {}, None),
    ("POST", "/rules"): ({}, {}, {"graph": "default", "priority": 5, "proto": "udp",
                                  "src": "10.0.0.0/8", "dst": "10.0.1.0/24",
                                  "sport": "1000-1100", "dport": 53, "in_port": "in"}),
    ("POST", "/rule-batches"): ({}, {}, {"rules": [{"graph": "default", "proto": "udp",
                                                   "dport": 53}, {"graph": "default"}]}),
    ("DELETE", "/rules/{rule_id}"): ({"rule_id": "1"}, {}, None),
    ("GET", "/flows"): ({}, {"limit": "3", "graph": "default", "service": "fw",
                             "instance": "0", "proto": "udp", "src": "10.0.0.0/8",
                             "dst": "10.0.0.9", "sport": "5353", "dport": "53"}, None),
    ("DELETE", "/flows"): ({}, {"proto": "tcp"}, None),
    ("GET", "/flows/{flow}"): ({"flow": "7"}, {}, None),
    ("DELETE", "/flows/{flow}"): ({"flow": FLOW_KEY}, {}, None),
    ("POST", "/flow-requests"): ({}, {}, {"type": "change_default", "service": "fw",
                                          "to": "drop", "flow": {"match": {"proto": "udp"}}}),
    ("GET", "/flow-requests"): ({}, {}, None),
    ("DELETE", "/flow-requests/{request_id}"): ({"request_id": "1"}, {}, None),
}

_deep: Any = 1
for _ in range(500):  # json.dumps can write it; RAW_BODIES nest deeper
    _deep = [_deep]

# Values of every JSON type and the edges of what the API and sluiced parse.
VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2, 255, 256, 65535, 65536, 2**31, 2**32, 2**63, -(2**63) - 1,
    1.5, -0.0, 1e308, 2.0, "", "a", "fw", "mon", "x" * 40, "x" * 300, "x" * 70000,
    "\x00", "a\x00b", "\ud800", "é☃\U0001F600", "\n\r\t", "..", "../..", "a/b", "%2F", "%00",
    "port:out", "port:", "drop", "default", "any", "tcp", "udp", "300", "-1", "1-2", "5-1",
    "70000", "10.0.0.0/8", "10.0.0.0/33", "::/0", FLOW_KEY, "<script>", "' OR 1=1 --",
    [], [1], ["fw"], ["fw", "drop"], [None], {}, {"a": 1}, {"fw": ["drop"]}, {"match": {}},
    {"key": FLOW_KEY}, [[[[[]]]]], _deep,
]
# Whole bodies that are not what json.dumps writes.
RAW_BODIES: list[bytes] = [
    b"", b" ", b"{", b"}", b"{]", b'{"a":}', b"[", b"nul", b"NaN", b'{"replicas":NaN}',
    b'{"replicas":Infinity}', b"\xff\xfe\x00", b'{"hops":["\xff"]}', b'{"hops":["\xc3"]}',
    b"\xef\xbb\xbf{}", b'{"a":1}{"b":2}', b'{"a":1,"a":2}', b"\x00" * 16,
    b'{"replicas":' + b"9" * 5000 + b"}", b'{"priority":-' + b"1" * 5000 + b"}",
    b'{"replicas":1' + b"0" * 400 + b"}", b'{"replicas":1e' + b"9" * 50 + b"}",
    b"[" * 100000 + b"]" * 100000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
    b"<xml/>", b"hops=fw&hops=drop", b'"\\ud800"', b'{"hops":["\\u0000"]}',
]
PATH_VALUES: list[str] = [
    "", "0", "1", "-1", "65536", "4294967296", "9" * 5000, "1.5", "0x10", "x", "fw", "default",
    "..", ".", "...", "a/b", "a%2Fb", "%2F", "%00", "%ff", "%", "%zz", "%252F", "\x00", "a\x00",
    "é☃", "\U0001F600", " ", "a b", "x" * 3000, FLOW_KEY, "udp 1.2.3.4 > 5.6.7.8", "?", "#",
    ";", "*", "~", "port:out", "<>",
]
QUERY_VALUES: list[str] = [
    "", "0", "1", "-1", "true", "false", "yes", "2", "100000", "100001", "9" * 5000,
    "1e3", "x", "\x00", "é", "\ud800"[:0] + "\ufffd", "tcp", "300", "any", "1-2", "70000",
    "10.0.0.0/8", "::1", "fw", "default", "x" * 2000, " 5", "5 ", "0x5", "NaN",
]
CONTENT_TYPES: list[str | None] = [
    "application/json", "application/json", "application/json", "application/json; charset=utf-8",
    "application/merge-patch+json", "APPLICATION/JSON", None, "text/plain",
    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml",
    "json", ";;;", "application/json; charset=latin-1",
]
HEADERS: list[dict[str, str]] = [
    {}, {}, {"Accept": "text/html"}, {"Accept": "*/*"}, {"Authorization": "Bearer nope"},
    {"X-Sluice-Token": "x" * 1000}, {"X-Forwarded-For": "1.2.3.4"}, {"Cookie": "a=b"},
    {"Origin": "http://evil.example"}, {"X-Junk": "\t" + "a" * 8000}, {"Range": "bytes=0-1"},
    {"Expect": "100-continue"}, {"Accept-Encoding": "gzip, br, zstd"}, {"Host": "evil"},
]


# -- the app and what it answers ----------------------------------------------------------

@pytest.fixture
def state(fake: Any) -> Sluiced:
    return fake[0]


@pytest.fixture
def server(fake: Any) -> FakeSluiced:
    return fake[1]


@pytest.fixture
def app(fake: Any, sockdir: Path) -> Any:
    return create_app("t", str(sockdir / "t.sock"), timeout=0.5)


@pytest.fixture
def api(app: Any) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def routes(app: Any) -> list[tuple[str, str, Any]]:
    """(method, path, route) of every route of the app; a websocket's method is WS
    and a mount's path ends in {path}."""
    out = []
    for r in app.routes:
        if isinstance(r, APIRoute):
            out += [(m, r.path, r) for m in sorted(r.methods)]
        elif isinstance(r, WebSocketRoute):
            out.append(("WS", r.path, r))
        elif isinstance(r, Mount):
            out.append(("GET", r.path + "/{path}", r))
        else:  # /openapi.json, /docs, /redoc
            out += [(m, r.path, r) for m in sorted(getattr(r, "methods", None) or ["GET"])]
    return out


def not_json_ok(method: str, path: str, status: int) -> bool:
    """Answers that are rightly not JSON: a HEAD, and the 2xx of what is not an API
    object (metrics, the event stream, the dashboard and its files, the docs)."""
    if method == "HEAD":
        return True
    return 200 <= status < 300 and (path in ("/metrics", f"{PREFIX}/events", "/", "/docs",
                                             "/redoc", "/docs/oauth2-redirect")
                                    or path.startswith("/static/"))


PYDANTIC_WORDS = re.compile(r"Input should|Field required|should have (at least|at most)|"
                            r"Unable to parse|valid (integer|string|list|dictionary|boolean)")


def check(r: Any, what: str, upstream: bool = False) -> None:
    """A 2xx or a 4xx with {"detail": one line of text}, never a 5xx (unless
    ``upstream``: sluiced failed) or a traceback."""
    if not upstream:
        assert r.status_code < 500, f"{what}: {r.status_code} {r.text[:300]}"
    assert "Traceback" not in r.text and 'File "' not in r.text, what
    method, path = what.split(" ", 2)[:2]
    if not_json_ok(method, path.split("?")[0], r.status_code):
        return
    assert r.headers["content-type"] == "application/json", f"{what}: {r.headers}"
    body = r.json()
    if r.status_code >= 400:
        assert isinstance(body, dict) and list(body) == ["detail"], f"{what}: {body}"
        detail = body["detail"]
        assert isinstance(detail, str) and len(detail) >= 10, f"{what}: {body}"
        assert detail not in ("Not Found", "Method Not Allowed", "Bad Request",
                              "There was an error parsing the body"), what
        assert len(detail) < 2000, f"{what}: {len(detail)} characters"
        # pydantic's own words say neither which value was wrong nor what to give (a
        # 502 is sluiced's answer the API could not read: it names the field)
        assert r.status_code == 502 or not PYDANTIC_WORDS.search(detail), f"{what}: {body}"


def still_usable(api: TestClient, server: FakeSluiced, state: Sluiced, what: str) -> None:
    r = api.get(f"{PREFIX}/status")
    assert (r.status_code, r.json()) == (200, {**STATUS, "rx_enabled": state.rx_enabled}), \
        f"after {what}: {r.text[:300]}"
    # The API never sent sluiced a line it could not read (the fake records
    # those raw; jansson would have answered -32700 or -32600).
    raw = [q for q in server.requests if not isinstance(q, dict)]
    assert raw == [], f"after {what}: {raw[:1]!r:.300}"


# -- the fuzz -----------------------------------------------------------------------------

def mutate(rng: random.Random, v: Any, depth: int = 0) -> Any:
    """v with one thing changed: a field dropped, added, or of another value."""
    if isinstance(v, dict) and v and depth < 3 and rng.random() < 0.5:
        k = rng.choice(sorted(v))
        return {**v, k: mutate(rng, v[k], depth + 1)}
    if isinstance(v, dict):
        op = rng.randrange(3)
        if op == 0 and v:
            k = rng.choice(sorted(v))
            return {x: y for x, y in v.items() if x != k}
        if op == 1:
            return {**v, rng.choice(["x", "", "\x00", "é" * 70, "replicas", "hops"]):
                    rng.choice(VALUES)}
    if isinstance(v, list) and v and rng.random() < 0.5:
        i = rng.randrange(len(v))
        return v[:i] + [rng.choice(VALUES)] + v[i + 1:]
    return rng.choice(VALUES)


def body_for(rng: random.Random, template: Any, max_body: int) -> tuple[bytes | None, str]:
    """A body and how it was made (for the failure message)."""
    r = rng.random()
    if r < 0.45 and template is not None:
        return json.dumps(mutate(rng, template)).encode(), "mutated"
    if r < 0.6:
        return json.dumps(rng.choice(VALUES)).encode(), "value"
    if r < 0.8:
        return rng.choice(RAW_BODIES), "raw"
    if r < 0.85:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))), "random bytes"
    if r < 0.87:
        return b'{"hops":["' + b"a" * max_body + b'"]}', "over max_body"
    if r < 0.92 and template is not None:
        return json.dumps(template).encode(), "template"
    return None, "none"


def path_for(rng: random.Random, path: str, params: dict[str, str]) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        r = rng.random()
        v = params[name] if r < 0.3 and name in params else rng.choice(PATH_VALUES)
        if "%" in v and rng.random() < 0.5:
            return v  # already (mis)encoded: sent as is
        return quote(v, safe="" if rng.random() < 0.8 else "/")
    return re.sub(r"\{(\w+)(?::\w+)?\}", value, path)


def query_for(rng: random.Random, route: Any, template: dict[str, str]) -> str:
    names = [f.alias for f in getattr(getattr(route, "dependant", None), "query_params", [])]
    q: list[tuple[str, str]] = []
    if rng.random() < 0.4:
        q += list(template.items())
    for _ in range(rng.randrange(4)):
        name = rng.choice(names + ["limt", "x", "", "\x00", "token", "a" * 300]
                          if rng.random() < 0.2 or not names else names)
        q.append((name, rng.choice(QUERY_VALUES)))
    return "?" + urlencode(q) if q else rng.choice(["", "", "?", "?&", "?=", "?a", "?%zz=%"])


def test_fuzz_every_route(app: Any, api: TestClient, state: Sluiced,
                          server: FakeSluiced) -> None:
    rng = random.Random(SEED)
    seen: dict[int, int] = {}
    fuzzed = routes(app)
    assert len([p for _, p, _ in fuzzed if p.startswith(PREFIX)]) >= len(TEMPLATES)
    for method, path, route in fuzzed:
        if method == "WS":
            continue  # test_fuzz_websocket
        key = (method, path.removeprefix(PREFIX))
        params, query, template = TEMPLATES.get(key, ({}, {}, None))
        for _ in range(PER_ROUTE):
            m = method if rng.random() < 0.8 else rng.choice(METHODS)
            url = path_for(rng, path, params) + query_for(rng, route, query)
            body, how = body_for(rng, template, 1 << 20)
            headers = dict(rng.choice(HEADERS))
            ctype = rng.choice(CONTENT_TYPES)
            if ctype is not None and body is not None:
                headers["Content-Type"] = ctype
            what = f"{m} {url[:200]} [{how} body {body[:80]!r} {ctype}]" if body is not None \
                else f"{m} {url[:200]}"
            r = api.request(m, url, content=body, headers=headers)
            check(r, what)
            seen[r.status_code] = seen.get(r.status_code, 0) + 1
        still_usable(api, server, state, f"{method} {path}")
    assert state.crashes == []
    # The fuzz reached the handlers as well as the checks in front of them.
    for status in (200, 400, 404, 405, 413, 415, 422):
        assert seen.get(status, 0) > 3, seen


def test_fuzz_websocket(app: Any, api: TestClient, state: Sluiced,
                       server: FakeSluiced) -> None:
    rng = random.Random(SEED)
    for method, path, _ in routes(app):
        if method != "WS":
            continue
        for _ in range(20):
            q = rng.choice(QUERY_VALUES + ["1"])
            try:
                with api.websocket_connect(f"{path}?{urlencode({'max_events': q})}") as ws:
                    got = ws.receive_json()
                    assert set(got) == {"kind", "ts", "data"}, got
            except WebSocketDisconnect as e:
                assert e.code == 1008, (q, e.code)  # refused: a bad max_events
            check(api.get(path), f"GET {path}")
        still_usable(api, server, state, f"WS {path}")


# -- errors from sluiced, on every route --------------------------------------------------

def _shape(path: str) -> str:
    return re.sub(r"\{\w+\}", "{}", path)


def endpoint_methods() -> dict[tuple[str, str], str]:
    """(HTTP method, path with {} for parameters) -> the control-socket method it
    calls (from SOCKET_METHODS)."""
    out = {("GET", "/metrics"): "stats"}
    for method, endpoints in SOCKET_METHODS.items():
        for e in endpoints.split(", "):
            verb, _, path = e.partition(" ")
            if verb in ("GET", "PUT", "POST", "DELETE"):
                out[(verb, _shape(PREFIX + path.split(" ")[0]))] = method
    return out


def valid_request(method: str, path: str) -> tuple[str, Any]:
    params, query, body = TEMPLATES[(method, path.removeprefix(PREFIX))] \
        if path.startswith(PREFIX) else ({}, {}, None)
    url = re.sub(r"\{(\w+)\}", lambda m: quote(params[m.group(1)], safe=""), path)
    return url + ("?" + urlencode(query) if query else ""), body


# Routes that call no method of sluiced (the policy compiler runs in the API).
LOCAL = {("POST", f"{PREFIX}/graphs/compile")}


def test_every_route_has_a_template(app: Any) -> None:
    """A new route needs a valid request in TEMPLATES (the error checks below use it)."""
    calls = endpoint_methods()
    for method, path, _ in routes(app):
        if path.startswith(PREFIX) and method != "WS":
            assert (method, path.removeprefix(PREFIX)) in TEMPLATES, (method, path)
            assert (method, _shape(path)) in calls or (method, path) in LOCAL, (method, path)


@pytest.mark.parametrize("fail,status,detail", [
    ((-32602, "param 'x': bad value"), 422, "x: bad value"),
    ((-32000, "no such thing 3; see x.list"), 404, "no such thing 3; see x.list"),
    ((-32000, "the chain is not complete: start its NFs"), 409,
     "the chain is not complete: start its NFs"),
    ((-32601, "method 'm' not found"), 501,
     "method 'm' not found (sluiced is older than this API)"),
    ((-32600, "request line longer than 65536 bytes"), 413,
     "sluiced refused {m}: request line longer than 65536 bytes"),
    ((-32600, "not a request object"), 502,
     "sluiced answered {m}: not a request object (JSON-RPC error -32600)"),
    ((-32700, "parse error at column 3"), 502,
     "sluiced answered {m}: parse error at column 3 (JSON-RPC error -32700)"),
    ((-1, "odd"), 502, "sluiced answered {m}: odd (JSON-RPC error -1)"),
    ("close", 503, "{m}: sluiced closed the connection without answering" + LOST
     + " (the next request connects anew)"),
    (b"this is not json\n", 502, "{m}: sluiced sent a line that is not JSON "),
    ("silence", 504, "{m}: no answer from sluiced within 0.5 s"),
])
def test_sluiced_errors_on_every_route(app: Any, api: TestClient, state: Sluiced,
                                       server: FakeSluiced, fail: Any, status: int,
                                       detail: str) -> None:
    calls = endpoint_methods()
    for method, path, _ in routes(app):
        if (method, _shape(path)) not in calls:
            continue
        m = calls[(method, _shape(path))]
        if fail == "silence" and m != "status":
            continue  # one is enough (0.5 s each)
        url, body = valid_request(method, path)
        state.fail[m] = fail
        r = api.request(method, url, json=body)
        del state.fail[m]
        what = f"{method} {url} with sluiced failing {fail!r}"
        check(r, what, upstream=True)
        want = detail.format(m=m)
        if m == "subscribe" and fail == "close":
            want = "subscribe: sluiced closed the connection without answering" + LOST
        elif m == "subscribe" and isinstance(fail, bytes):
            assert r.status_code == 502 and r.json()["detail"].startswith(
                "subscribe: no valid answer from sluiced ("), what
            continue
        assert r.status_code == status, f"{what}: {r.text}"
        if detail.endswith(" "):
            assert r.json()["detail"].startswith(want), f"{what}: {r.text}"
        else:
            assert r.json() == {"detail": want}, what
        # Usable again at once, on the same route.
        r = api.request(method, url, json=body)
        assert r.status_code in (200, 201, 404, 409, 422), f"{what}, then: {r.text}"
    still_usable(api, server, state, f"sluiced failing {fail!r}")


# -- targeted cases -----------------------------------------------------------------------

J = {"Content-Type": "application/json"}


def test_invalid_json_is_400_with_where(api: TestClient, server: FakeSluiced) -> None:
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": [fw]}', headers=J)
    assert (r.status_code, r.json()) == (400, {
        "detail": "the body is not valid JSON (Expecting value at line 1 column 11): PUT "
                  "/api/v1/chain takes a JSON object with hops (/docs describes it)"})
    r = api.post(f"{PREFIX}/services/fw/scale", content=b'{"replicas": NaN}', headers=J)
    assert (r.status_code, r.json()) == (400, {
        "detail": "the body is not valid JSON (NaN is not JSON (a number must be finite)): "
                  "POST /api/v1/services/{service}/scale takes a JSON object with replicas "
                  "(/docs describes it)"})
    assert server.requests == []


@pytest.mark.parametrize("body,kind", [(b"[1]", "an array"), (b'"x"', "a string"),
                                       (b"7", "a number"), (b"null", "null"),
                                       (b"true", "a boolean")])
def test_body_not_an_object(api: TestClient, body: bytes, kind: str) -> None:
    r = api.post(f"{PREFIX}/rules", content=body, headers=J)
    assert (r.status_code, r.json()) == (422, {
        "detail": f"the body is {kind}, not a JSON object: POST /api/v1/rules takes a JSON "
                  f"object with proto, src, dst, sport, dport, in_port, graph, priority "
                  f"(/docs describes it)"})


def test_missing_body_and_fields(api: TestClient) -> None:
    r = api.put(f"{PREFIX}/chain", headers=J)
    assert (r.status_code, r.json()) == (422, {
        "detail": "the body is missing: PUT /api/v1/chain takes a JSON object with hops "
                  "(/docs describes it)"})
    r = api.put(f"{PREFIX}/chain", json={})
    assert (r.status_code, r.json()) == (422, {
        "detail": 'hops: missing: this field is required; give an array of hops, e.g. '
                  '["firewall", "port:out"]'})


def test_unknown_fields_are_refused(api: TestClient, server: FakeSluiced) -> None:
    unknown = "unknown field: leave it out (this object takes"
    for path, body, field in [
            ("/services/fw/scale", {"replicas": 2, "replica": 3}, "replica"),
            ("/chain", {"hops": ["fw"], "version": 3}, "version")]:
        r = api.request("PUT" if path == "/chain" else "POST", PREFIX + path, json=body)
        takes = {"replica": "replicas); did you mean 'replicas'?", "version": "hops)"}[field]
        assert (r.status_code, r.json()) == (422, {"detail": f"{field}: {unknown} {takes}"})
    r = api.put(f"{PREFIX}/services/fw/lb", json={"mode": "rr", "x": 1})
    assert (r.status_code, r.json()) == (422, {"detail": f"x: {unknown} mode)"})
    assert server.requests == []


REPLICAS = "a whole number of instances from 0 to 65535, e.g. 2"


@pytest.mark.parametrize("value,msg", [
    (True, f"expected {REPLICAS}, got a boolean (true)"),
    ("2", f"expected {REPLICAS}, got a string ('2')"),
    (1.5, f"expected {REPLICAS}, got a number (1.5)"),
    (-1, f"-1 is out of range (less than 0): give {REPLICAS}"),
    (65536, f"65536 is out of range (more than 65535): give {REPLICAS}"),
    (None, f"expected {REPLICAS}, got null"),
    ([2], f"expected {REPLICAS}, got an array"),
])
def test_scale_counts(api: TestClient, server: FakeSluiced, value: Any, msg: str) -> None:
    r = api.post(f"{PREFIX}/services/fw/scale", json={"replicas": value})
    assert (r.status_code, r.json()) == (422, {"detail": f"replicas: {msg}"})
    assert server.requests == []


def test_scale_counts_sluiced_takes(api: TestClient, server: FakeSluiced) -> None:
    for n, status in [(0, 200), (2.0, 200), (64, 200), (65, 409), (65535, 409)]:
        r = api.post(f"{PREFIX}/services/fw/scale", json={"replicas": n})
        assert r.status_code == status, (n, r.text)
    assert [q["params"]["replicas"] for q in server.requests] == [0, 2, 64, 65, 65535]


def test_booleans_are_not_ports_or_protocols(api: TestClient, server: FakeSluiced) -> None:
    # a number, or a protocol's name / a port range as text; said as sluice rule add says it
    accepts = {
        "proto": "tcp, udp, icmp, icmp6, icmpv6, sctp, gre, esp, ah, any or a number 0-255",
        "sport": "a port 0-65535 or a range N-M such as 1024-65535",
        "dport": "a port 0-65535 or a range N-M such as 1024-65535",
    }
    for field in ("proto", "sport", "dport"):
        r = api.post(f"{PREFIX}/rules", json={"graph": "default", field: True})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == (f"{field}: expected {accepts[field]}, got a boolean "
                                      f"(true)"), r.text
    r = api.post(f"{PREFIX}/rules", json={"graph": "default", "priority": False})
    assert (r.status_code, r.json()) == (422, {
        "detail": "priority: expected an integer from -1000000 to 1000000, got a boolean "
                  "(false)"})
    # numbers as text are numbers: sent as numbers, as the CLI sends them
    r = api.post(f"{PREFIX}/rules", json={"graph": "default", "proto": "17", "dport": "53"})
    assert r.status_code == 201, r.text
    assert server.requests[-1]["params"] == {"graph": "default", "priority": 0,
                                             "proto": 17, "dport": 53}


def test_huge_numbers(api: TestClient, server: FakeSluiced) -> None:
    r = api.post(f"{PREFIX}/services/fw/scale", content=b'{"replicas": ' + b"9" * 5000 + b"}",
                 headers=J)
    assert (r.status_code, r.json()) == (422, {
        "detail": "the body has a number of 5000 digits: no field of this API takes one "
                  "that large"})
    r = api.get(f"{PREFIX}/flows?limit=" + "9" * 5000)
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.limit: expected a whole number from 0 to 100000, got "
                  "'999999999999999999999999999999999999999999999999999999...9'"})
    r = api.get(f"{PREFIX}/flows/" + "9" * 5000)
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.flow: 5000 characters, more than the 255 it takes: give a flow id, "
                  "or a flow key URL-encoded (`GET /api/v1/flows` lists them)"})
    r = api.get(f"{PREFIX}/flows/" + "9" * 255)
    assert (r.status_code, r.json()) == (422, {
        "detail": "flow: id 99999999999999999999... is out of range (0-4294967295): give an "
                  "id from GET /api/v1/flows, or the flow's key"})
    r = api.delete(f"{PREFIX}/flows/4294967296")
    assert r.status_code == 422
    r = api.get(f"{PREFIX}/flows/4294967295")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no flow with id 4294967295; see `GET /api/v1/flows`"})
    assert [q["params"] for q in server.requests] == [{"id": 4294967295}]


@pytest.mark.parametrize("query,detail", [
    ("limit=-1", "query.limit: -1 is out of range (less than 0): give a whole number from 0 "
                 "to 100000"),
    ("limit=100001", "query.limit: 100001 is out of range (more than 100000): give a whole "
                     "number from 0 to 100000"),
    ("limit=1.5", "query.limit: expected a whole number from 0 to 100000, got '1.5'"),
    ("limit=x", "query.limit: expected a whole number from 0 to 100000, got 'x'"),
    ("service=fw&instance=65536", "query.instance: 65536 is out of range (more than 65535): "
                                  "give an instance id from 0 to 65535 (`GET /api/v1/nfs` "
                                  "lists them)"),
    ("instance=1", "query.instance: give service too (instance picks an instance of that "
                   "service), e.g. ?service=firewall&instance=2"),
    ("in_port=port:in", "query.in_port: 'port:in' is not a port name: give the port's name "
                        "alone, in_port=in"),
    ("limt=5", "unknown query parameter 'limt': GET /api/v1/flows takes dport, dst, graph, "
               "in_port, instance, limit, proto, service, sport, src"),
])
def test_flow_list_query(api: TestClient, query: str, detail: str) -> None:
    r = api.get(f"{PREFIX}/flows?{query}")
    assert (r.status_code, r.json()) == (422, {"detail": detail})


def test_unknown_query_parameter(api: TestClient, server: FakeSluiced) -> None:
    r = api.post(f"{PREFIX}/rx/pause?force=1")
    assert (r.status_code, r.json()) == (422, {
        "detail": "unknown query parameter 'force': POST /api/v1/rx/pause takes none"})
    assert server.requests == []
    r = api.get(f"{PREFIX}/flows?limit=0&graph=")
    assert r.status_code == 200
    assert server.requests[-1]["params"] == {"limit": 0}


def test_not_utf8_and_content_type(api: TestClient) -> None:
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": ["f\xffw"]}', headers=J)
    assert (r.status_code, r.json()) == (400, {
        "detail": "the body is not UTF-8 (byte 0xff at offset 12): send JSON encoded as UTF-8"})
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": ["fw"]}',
                headers={"Content-Type": "text/plain"})
    assert (r.status_code, r.json()) == (415, {
        "detail": "the body must be JSON, sent with 'Content-Type: application/json' "
                  "(Content-Type was 'text/plain')"})
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": ["fw"]}')
    assert (r.status_code, r.json()) == (415, {
        "detail": "the body must be JSON, sent with 'Content-Type: application/json' "
                  "(Content-Type was none)"})
    r = api.put(f"{PREFIX}/chain", content=b'\xef\xbb\xbf{"hops": ["fw"]}', headers=J)
    assert (r.status_code, r.json()) == (200, {"version": 2})


def test_deep_json(api: TestClient) -> None:
    msg = ("the body's JSON is nested more than 32 levels deep; PUT /api/v1/chain takes a "
           "JSON object with hops (/docs describes it)")
    for depth in (33, 100000):
        body = b'{"hops":' + b"[" * depth + b"]" * depth + b"}"
        r = api.put(f"{PREFIX}/chain", content=body, headers=J)
        assert (r.status_code, r.json()) == (400, {"detail": msg}), depth
    body = b'{"hops":' + b"[" * 31 + b"]" * 31 + b"}"
    r = api.put(f"{PREFIX}/chain", content=body, headers=J)
    assert (r.status_code, r.json()) == (422, {
        "detail": "hops.0: expected a hop as a string: a service, port:NAME or drop, got an "
                  "array"})


def test_body_size_limit(fake: Any, sockdir: Path) -> None:
    api = TestClient(create_app("t", str(sockdir / "t.sock"), max_body=100))
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": [' + b'"fw", ' * 30 + b'"fw"]}',
                headers=J)
    assert (r.status_code, r.json()) == (413, {
        "detail": "the body is 196 bytes, more than this API takes (100 bytes): send a "
                  "smaller one"})

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked
        yield b'{"hops": ['
        yield b'"fw", ' * 30
        yield b'"fw"]}'
    r = api.put(f"{PREFIX}/chain", content=chunks(), headers=J)
    assert (r.status_code, r.json()) == (413, {
        "detail": "the body is more than 100 bytes, more than this API takes (100 bytes): "
                  "send a smaller one"})
    assert fake[1].requests == []
    r = api.put(f"{PREFIX}/chain", json={"hops": ["fw"] * 5})
    assert (r.status_code, r.json()) == (200, {"version": 2})
    # The default: 1 MiB.
    api = TestClient(create_app("t", str(sockdir / "t.sock")))
    r = api.put(f"{PREFIX}/chain", content=b" " * (1 << 20) + b"{}", headers=J)
    assert r.status_code == 413
    assert r.json()["detail"] == ("the body is 1048578 bytes, more than this API takes "
                                  "(1048576 bytes): send a smaller one")


def test_too_long_for_sluiceds_control_socket(api: TestClient, server: FakeSluiced,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # sluiced's limit is its --control-line-kb: sluiced refuses a longer line
    # (-32600) and closes the connection; the API says 413 with sluiced's
    # words, and the next request connects anew.
    monkeypatch.setattr(apifake, "LINE_MAX", 64 * 1024)
    r = api.put(f"{PREFIX}/graphs/g", json={"nodes": {"fw": ["x" * 70000]}})
    assert (r.status_code, r.json()) == (413, {
        "detail": "sluiced refused graph.apply: request line longer than 65536 bytes "
                  "(--control-line-kb 64): send a smaller request or raise the option; "
                  "closing"})
    r = api.put(f"{PREFIX}/chain", json={"hops": ["fw", "drop"]})
    assert (r.status_code, r.json()) == (200, {"version": 2})
    # Below the limit, a long request is sluiced's to take.
    r = api.put(f"{PREFIX}/graphs/g", json={"nodes": {"fw": ["x" * 60000]}})
    assert r.status_code != 413, r.json()


@pytest.mark.parametrize("method,path,body,where", [
    ("GET", "/graphs/a%00b", None, "name"),
    ("DELETE", "/graphs/%00", None, "name"),
    ("GET", "/flows/tcp%00", None, "key"),
    ("PUT", "/services/f%00w/lb", {"mode": "rr"}, "service"),
    ("PUT", "/chain", {"hops": ["fw", "d\x00rop"]}, "hops.1"),
    ("PUT", "/graphs/g", {"nodes": {"f\x00w": ["drop"]}}, "nodes (a key)"),
    ("GET", "/flows?graph=%00", None, "graph"),
])
def test_nul_never_reaches_sluiced(api: TestClient, server: FakeSluiced, method: str,
                                   path: str, body: Any, where: str) -> None:
    r = api.request(method, PREFIX + path, json=body)
    assert (r.status_code, r.json()) == (422, {
        "detail": f"{where}: contains a NUL character (\\u0000), which sluiced does not "
                  f"take: leave it out"})
    assert server.requests == []


def test_lone_surrogate_never_reaches_sluiced(api: TestClient, server: FakeSluiced) -> None:
    r = api.put(f"{PREFIX}/chain", content=b'{"hops": ["fw\\udc00"]}', headers=J)
    assert (r.status_code, r.json()) == (422, {
        "detail": "hops.0: is not valid Unicode (a lone surrogate \\udc00): send UTF-8 text"})
    assert server.requests == []


def test_path_parameters(api: TestClient, server: FakeSluiced) -> None:
    hint = ": the API is under /api/v1 (/docs lists the endpoints; a name in a path cannot " \
           "contain '/', not even as %2F)"
    r = api.get(f"{PREFIX}/graphs/a%2Fb")
    assert (r.status_code, r.json()) == (404, {"detail": "no endpoint GET /api/v1/graphs/a/b"
                                                         + hint})
    r = api.get(f"{PREFIX}/graphs/%2E%2E")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named '..'; see `GET /api/v1/graphs`"})
    r = api.delete(f"{PREFIX}/rules/-1")
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.rule_id: -1 is out of range (less than 0): give a rule id from 0 to "
                  "4294967295 (`GET /api/v1/rules` lists them)"})
    r = api.post(f"{PREFIX}/nfs/1%00/stop")
    assert (r.status_code, r.json()) == (422, {
        "detail": "path.instance: expected an instance id from 0 to 65535 (`GET /api/v1/nfs` "
                  "lists them), got '1\\x00'"})
    r = api.get(f"{PREFIX}/graphs/%ff%fe")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no graph named '\ufffd\ufffd'; see `GET /api/v1/graphs`"})
    assert [q["params"] for q in server.requests] == [{"name": ".."}, {"name": "\ufffd\ufffd"}]


def test_unknown_paths_and_methods(api: TestClient) -> None:
    r = api.get(f"{PREFIX}/nope")
    assert (r.status_code, r.json()) == (404, {
        "detail": "no endpoint GET /api/v1/nope: the API is under /api/v1 (/docs lists the "
                  "endpoints; a name in a path cannot contain '/', not even as %2F)"})
    r = api.patch(f"{PREFIX}/chain")
    assert (r.status_code, r.json()) == (405, {
        "detail": "PATCH /api/v1/chain: method not allowed here; use GET or PUT"})
    assert r.headers["allow"] == "GET, PUT"
    r = api.request("BREW", "/metrics")
    assert (r.status_code, r.json()) == (405, {
        "detail": "BREW /metrics: method not allowed here; use GET"})
    r = api.get(f"{PREFIX}/events/ws")
    assert (r.status_code, r.json()) == (404, {
        "detail": "/api/v1/events/ws is a websocket: connect to it with a websocket client "
                  "(ws://...)"})


def test_an_internal_error_is_json_without_a_traceback(app: Any, api: TestClient) -> None:
    def boom(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("secret detail\nTraceback")
    app.state.sluiced.call = boom
    r = api.get(f"{PREFIX}/status")
    assert (r.status_code, r.json()) == (500, {
        "detail": "internal error of the API on GET /api/v1/status (RuntimeError): this is a "
                  "bug, please report it with the request"})


def test_long_names(api: TestClient, server: FakeSluiced) -> None:
    too_long = "path.{}: 256 characters, more than the 255 it takes: give at most 255"
    for method, path, body, field in [
            ("GET", "/graphs/{}", None, "name"), ("PUT", "/graphs/{}", {"nodes": {}}, "name"),
            ("DELETE", "/graphs/{}", None, "name"), ("GET", "/flows/{}", None, "flow"),
            ("PUT", "/services/{}/lb", {"mode": "rr"}, "service"),
            ("POST", "/services/{}/scale", {"replicas": 1}, "service")]:
        r = api.request(method, PREFIX + path.format("n" * 256), json=body)
        want = too_long.format(field)
        if field == "flow":
            want = ("path.flow: 256 characters, more than the 255 it takes: give a flow id, or "
                    "a flow key URL-encoded (`GET /api/v1/flows` lists them)")
        assert (r.status_code, r.json()) == (422, {"detail": want}), path
    r = api.get(f"{PREFIX}/flows?graph=" + "g" * 256)
    assert (r.status_code, r.json()) == (422, {
        "detail": "query.graph: 256 characters, more than the 255 it takes: give at most 255"})
    assert server.requests == []
    r = api.get(f"{PREFIX}/graphs/" + "n" * 255)
    assert (r.status_code, r.json()) == (404, {"detail": f"no graph named '{'n' * 255}'; see "
                                                         f"`GET /api/v1/graphs`"})


# -- over a real server: what only raw HTTP can send ---------------------------------------

def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP/1.1 exchange: (status, headers, body); fails rather than hangs."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_raw_http_over_uvicorn(fake: Any, sockdir: Path) -> None:
    import socket

    from sluice.api import ApiServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ApiServer(create_app("t", str(sockdir / "t.sock"), max_body=1000),
                       "127.0.0.1", port)
    server.start()
    head = b"PUT /api/v1/chain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" \
           b"Content-Type: application/json\r\n"
    try:
        # Refused by its Content-Length, before the rest (never sent) is waited for.
        status, headers, body = _raw(port, head + b"Content-Length: 5000\r\n\r\n{}")
        assert (status, headers["content-type"], json.loads(body)) == (
            413, "application/json", {"detail": "the body is 5000 bytes, more than this API "
                                                "takes (1000 bytes): send a smaller one"})
        # Chunked, without a length: refused once more than max_body arrived.
        chunk = b'"fw",' * 100
        req = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
            b"%x\r\n%s\r\n" % (len(c), c) for c in [b'{"hops":[', chunk, chunk, b'"fw"]}']) \
            + b"0\r\n\r\n"
        status, _, body = _raw(port, req)
        assert (status, json.loads(body)) == (413, {
            "detail": "the body is more than 1000 bytes, more than this API takes (1000 "
                      "bytes): send a smaller one"})
        # Dot segments and NUL, as a client that does not normalize sends them.
        status, _, body = _raw(port, b"GET /api/v1/graphs/.. HTTP/1.1\r\nHost: x\r\n"
                                     b"Connection: close\r\n\r\n")
        assert (status, json.loads(body)) == (404, {"detail": "no graph named '..'; see "
                                                              "`GET /api/v1/graphs`"})
        status, _, body = _raw(port, b"GET /api/v1/graphs/%00/../x HTTP/1.1\r\nHost: x\r\n"
                                     b"Connection: close\r\n\r\n")
        assert (status, json.loads(body)) == (404, {
            "detail": "no endpoint GET /api/v1/graphs/\x00/../x: the API is under /api/v1 "
                      "(/docs lists the endpoints; a name in a path cannot contain '/', not "
                      "even as %2F)"})
        assert fake[1].requests == [{"jsonrpc": "2.0", "id": 1, "method": "graph.get",
                                     "params": {"name": ".."}}]
        status, _, body = _raw(port, b"GET /api/v1/status HTTP/1.1\r\nHost: x\r\n"
                                     b"Connection: close\r\n\r\n")
        assert (status, json.loads(body)) == (200, STATUS)
    finally:
        server.stop()


@pytest.mark.parametrize("length,status,detail", [
    (b"9" * 5000, 413, "the body is " + "9" * 40 + "... bytes, more than this API takes "
                       "(1000 bytes): send a smaller one"),
    (b"abc", 400, "Content-Length 'abc' is not a number of bytes"),
    (b"-1", 400, "Content-Length '-1' is not a number of bytes"),
])
def test_body_limit_content_length(length: bytes, status: int, detail: str) -> None:
    """What a server other than uvicorn (whose parser refuses these first) may pass on."""
    import asyncio

    from sluice.api import BodyLimit

    sent: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app was called")

    async def receive() -> Any:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(msg: Any) -> None:
        sent.append(msg)

    scope = {"type": "http", "method": "PUT", "path": "/api/v1/chain",
             "headers": [(b"content-length", length)]}
    asyncio.run(BodyLimit(app, 1000)(scope, receive, send))
    assert sent[0]["status"] == status
    assert json.loads(sent[1]["body"]) == {"detail": detail}
