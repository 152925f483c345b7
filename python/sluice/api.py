"""REST API and Prometheus metrics of a Sluice node (docs/api.md).

``create_app(node)`` returns a FastAPI app that serves what the control
socket of sluiced offers (docs/control-socket.md) as JSON over HTTP, events
as server-sent events, and the statistics as Prometheus metrics::

    uvicorn.run(create_app("demo"), host="127.0.0.1", port=8080)

Every error body is ``{"detail": "..."}``: sluiced's own message for the
errors it reports, else one line saying what went wrong and what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

from fastapi import Body, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from . import __version__
from .client import (
    Client,
    ConnectError,
    ConnectionLost,
    RpcError,
    RpcTimeout,
    SluiceError,
    socket_path_for,
)

PREFIX = "/api/v1"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# -32000 messages that say the thing named in the URL does not exist.
_NOT_FOUND = re.compile(r"^no (such |service |running NF instance )")


# -- response models (the result shapes of docs/control-socket.md) -----------------------

class _Model(BaseModel):
    # sluiced may add fields; they are passed on rather than dropped.
    model_config = ConfigDict(extra="allow")


class Error(BaseModel):
    detail: str = Field(description="What went wrong (sluiced's message when it is its error).")


class Mbufs(_Model):
    size: int
    in_use: int


class Status(_Model):
    node: str
    version: str
    pid: int
    mode: str
    handoff: str
    uptime_s: float
    rx_enabled: bool
    max_nfs: int
    max_services: int
    ring_size: int
    burst: int
    n_nfs: int
    n_services: int
    n_ports: int
    io_threads: int
    methods: list[str]
    mbufs: Mbufs


class Ring(_Model):
    count: int
    size: int


class Nf(_Model):
    instance: int
    service: str
    service_id: int
    prog: str
    pid: int
    state: str
    mode: str
    access: int
    rx_ring: Ring
    tx_ring: Ring


class Port(_Model):
    id: int
    name: str
    device: str
    started: bool
    link_up: bool
    rx_queues: int
    tx_queues: int


class Service(_Model):
    id: int
    name: str
    lb: str = Field(description="Load balancing across instances: flow or rr.")
    instances: list[int]


class PortStats(_Model):
    id: int
    name: str
    rx_pkts: int
    rx_bytes: int
    tx_pkts: int
    tx_bytes: int
    rx_stalls: int
    drops: dict[str, int] = Field(description="Drops by reason.")


class NfStats(_Model):
    instance: int
    service: str
    state: str
    rx_pkts: int
    rx_bytes: int
    tx_pkts: int
    tx_bytes: int
    drops: dict[str, int] = Field(description="Drops by reason.")
    rx_ring: Ring
    cycles: int
    cycles_per_pkt: float
    sleeps: int = 0
    stalls: int = 0
    bursts: int = 0


class ServiceStats(_Model):
    id: int
    name: str
    instances: list[int]
    rx_pkts: int
    tx_pkts: int
    drops: dict[str, int] = Field(description="Drops by reason.")


class Stats(_Model):
    tsc_hz: int
    ports: list[PortStats]
    nfs: list[NfStats]
    services: list[ServiceStats]
    drops_total: int


class Chain(_Model):
    version: int
    hops: list[str]


class ChainSet(BaseModel):
    hops: list[str] = Field(description="Services, port:NAME or drop, in order, "
                                        "as in the deployment file.",
                            examples=[["firewall", "monitor", "port:out"]])


class ChainVersion(_Model):
    version: int


class NfStopping(_Model):
    instance: int
    state: str


class LbSet(BaseModel):
    mode: Literal["flow", "rr"] = Field(
        description="flow (a flow always goes to the same instance) or rr (round robin).",
        examples=["flow"])


class LbResult(_Model):
    service: str
    mode: str


class RxState(_Model):
    rx_enabled: bool


# -- errors -------------------------------------------------------------------------------

class ApiError(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


def http_error(e: SluiceError) -> ApiError:
    """The HTTP status and detail of an error of the client."""
    if isinstance(e, RpcError):
        if e.code == -32602:
            return ApiError(422, e.message)
        if e.code == -32000:
            return ApiError(404 if _NOT_FOUND.match(e.message) else 409, e.message)
        if e.code == -32601:
            return ApiError(501, f"{e.message} (sluiced is older than this API)")
        return ApiError(502, f"sluiced answered {e.method}: {e.message} "
                             f"(JSON-RPC error {e.code})")
    if isinstance(e, ConnectError):
        return ApiError(503, str(e))
    if isinstance(e, RpcTimeout):
        return ApiError(504, str(e))
    if isinstance(e, ConnectionLost):
        return ApiError(502, str(e))
    return ApiError(502, str(e))


_ERRORS = {
    s: {"model": Error, "description": d} for s, d in {
        400: "The body could not be read (not JSON, or not UTF-8).",
        401: "Missing or wrong token (only when the API was started with one).",
        409: "sluiced cannot do it now (its message says why).",
        422: "Bad parameters.",
        502: "sluiced answered something unexpected or closed the connection.",
        503: "sluiced is not running (or its socket may not be used).",
        504: "sluiced did not answer in time.",
    }.items()
}
_ERRORS_404 = {**_ERRORS, 404: {"model": Error, "description": "No such NF or service."}}


# -- sluiced ------------------------------------------------------------------------------

class Sluiced:
    """One connection to sluiced shared by the request threads."""

    def __init__(self, node: str, socket_path: str | Path | None, timeout: float = 5.0):
        self.client = Client(node, socket_path, timeout=timeout)
        self.lock = threading.Lock()

    @property
    def socket_path(self) -> Path:
        return self.client.socket_path

    def call(self, method: str, **params: Any) -> Any:
        with self.lock:
            try:
                return self.client.call(method, **params)
            except SluiceError as e:
                raise http_error(e) from None

    def close(self) -> None:
        with self.lock:
            self.client.close()


# -- metrics ------------------------------------------------------------------------------

class StatsCollector:
    """Prometheus collector: one ``stats`` call per scrape."""

    def __init__(self, sluiced: Sluiced):
        self.sluiced = sluiced

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        st = self.sluiced.call("stats")
        yield from stats_metrics(st)


def _drop_items(d: Any) -> list[tuple[str, int]]:
    return sorted((str(k), int(v)) for k, v in (d or {}).items())


def stats_metrics(st: dict[str, Any]) -> list[Any]:
    """The metric families of one ``stats`` result (docs/api.md lists them)."""
    def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
        return CounterMetricFamily(name, doc, labels=labels)

    def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=labels)

    p_rx = counter("sluice_port_rx_packets", "Packets read from the port.", ["port"])
    p_tx = counter("sluice_port_tx_packets", "Packets sent on the port.", ["port"])
    p_rxb = counter("sluice_port_rx_bytes", "Bytes read from the port.", ["port"])
    p_txb = counter("sluice_port_tx_bytes", "Bytes sent on the port.", ["port"])
    p_st = counter("sluice_port_rx_stalls", "Times reading the port stalled.", ["port"])
    p_dr = counter("sluice_port_drops", "Packets that entered through the port and were "
                   "dropped before the first NF, plus TX drops on it, by reason.",
                   ["port", "reason"])
    for p in st.get("ports", []):
        lab = [str(p["name"])]
        p_rx.add_metric(lab, p["rx_pkts"])
        p_tx.add_metric(lab, p["tx_pkts"])
        p_rxb.add_metric(lab, p["rx_bytes"])
        p_txb.add_metric(lab, p["tx_bytes"])
        p_st.add_metric(lab, p.get("rx_stalls", 0))
        for reason, v in _drop_items(p.get("drops")):
            p_dr.add_metric(lab + [reason], v)

    nl = ["service", "instance"]
    n_rx = counter("sluice_nf_rx_packets", "Packets the NF instance received.", nl)
    n_tx = counter("sluice_nf_tx_packets", "Packets the NF instance handed on.", nl)
    n_rxb = counter("sluice_nf_rx_bytes", "Bytes the NF instance received.", nl)
    n_txb = counter("sluice_nf_tx_bytes", "Bytes the NF instance handed on.", nl)
    n_cyc = counter("sluice_nf_cycles", "TSC cycles the NF instance spent on packets.", nl)
    n_dr = counter("sluice_nf_drops", "Packets the NF instance dropped or could not hand "
                   "on, by reason.", nl + ["reason"])
    n_occ = gauge("sluice_nf_ring_occupancy", "Packets waiting in the NF instance's "
                  "rx ring.", nl)
    n_size = gauge("sluice_nf_ring_size", "Capacity of the NF instance's rx ring.", nl)
    n_cpp = gauge("sluice_nf_cycles_per_packet", "TSC cycles per packet of the NF "
                  "instance (cumulative average).", nl)
    n_up = gauge("sluice_nf_running", "1 when the NF instance is running, else 0.", nl)
    for n in st.get("nfs", []):
        lab = [str(n["service"]), str(n["instance"])]
        n_rx.add_metric(lab, n["rx_pkts"])
        n_tx.add_metric(lab, n["tx_pkts"])
        n_rxb.add_metric(lab, n["rx_bytes"])
        n_txb.add_metric(lab, n["tx_bytes"])
        n_cyc.add_metric(lab, n.get("cycles", 0))
        for reason, v in _drop_items(n.get("drops")):
            n_dr.add_metric(lab + [reason], v)
        ring = n.get("rx_ring") or {}
        n_occ.add_metric(lab, ring.get("count", 0))
        n_size.add_metric(lab, ring.get("size", 0))
        n_cpp.add_metric(lab, n.get("cycles_per_pkt", 0.0))
        n_up.add_metric(lab, 1 if n.get("state") == "running" else 0)

    s_rx = counter("sluice_service_rx_packets", "Packets the service's instances received "
                   "(including instances that have left).", ["service"])
    s_tx = counter("sluice_service_tx_packets", "Packets the service's instances handed on.",
                   ["service"])
    s_dr = counter("sluice_service_drops", "Packets dropped at the service, by reason.",
                   ["service", "reason"])
    s_inst = gauge("sluice_service_instances", "Live instances of the service.", ["service"])
    for s in st.get("services", []):
        lab = [str(s["name"])]
        s_rx.add_metric(lab, s["rx_pkts"])
        s_tx.add_metric(lab, s["tx_pkts"])
        for reason, v in _drop_items(s.get("drops")):
            s_dr.add_metric(lab + [reason], v)
        s_inst.add_metric(lab, len(s.get("instances", [])))

    total = counter("sluice_drops", "All packets dropped on the node.", [])
    total.add_metric([], st.get("drops_total", 0))
    return [p_rx, p_tx, p_rxb, p_txb, p_st, p_dr, n_rx, n_tx, n_rxb, n_txb, n_cyc, n_dr,
            n_occ, n_size, n_cpp, n_up, s_rx, s_tx, s_dr, s_inst, total]


# -- auth ---------------------------------------------------------------------------------

class TokenAuth:
    """ASGI middleware: every HTTP request must carry the token."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self._ok(scope):
            await self.app(scope, receive, send)
            return
        resp = JSONResponse(
            {"detail": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                       "or 'X-Sluice-Token: TOKEN'"},
            status_code=401, headers={"WWW-Authenticate": "Bearer"})
        await resp(scope, receive, send)

    def _ok(self, scope: Any) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, cred = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(cred.strip(),
                                                                        self.token):
                    return True
            elif name == b"x-sluice-token" and hmac.compare_digest(value.strip(), self.token):
                return True
        return False


def _document_token(app: FastAPI) -> None:
    """Declares the token in the OpenAPI spec (both headers work)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version,
                                 description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer"},
                "token": {"type": "apiKey", "in": "header", "name": "X-Sluice-Token"},
            }
            schema["security"] = [{"bearer": []}, {"token": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, option: str = "--host",
               token_option: str = "--token") -> None:
    """Refuses to serve beyond loopback without a token (raises SluiceError)."""
    if not token and not is_loopback(host):
        raise SluiceError(f"{option} {host} is not a loopback address: give {token_option} "
                          f"TOKEN too (clients then send 'Authorization: Bearer TOKEN')")


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) as (host, port); raises SluiceError."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SluiceError(f"--api {value!r}: give HOST:PORT, e.g. 127.0.0.1:8080")
    return host, int(port)


class ApiServer:
    """The API served by uvicorn on a background thread (``sluice up --api``)."""

    def __init__(self, app: FastAPI, host: str, port: int):
        import uvicorn

        self.host, self.port = host, port
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port,
                                                    log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self._run, name="sluice-api", daemon=True)

    def _run(self) -> None:
        with contextlib.suppress(SystemExit):  # uvicorn exits when it cannot listen
            self.server.run()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, timeout: float = 10.0) -> None:
        """Starts serving; raises SluiceError if it cannot listen."""
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise SluiceError(f"--api {self.host}:{self.port}: cannot listen there "
                                  f"(address in use, or not an address of this machine?)")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(10)


# -- events -------------------------------------------------------------------------------

async def _subscribe(path: Path) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A dedicated connection to sluiced with ``subscribe`` sent and answered."""
    reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
    try:
        writer.write(b'{"jsonrpc":"2.0","id":1,"method":"subscribe"}\n')
        await writer.drain()
        while True:
            line = await asyncio.wait_for(reader.readline(), 5.0)
            if not line:
                raise ApiError(502, "sluiced closed the connection without answering "
                                    "subscribe")
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("id") == 1:
                break
        if "error" in msg:
            err = msg["error"]
            raise http_error(RpcError(err.get("code", 0), str(err.get("message")),
                                      method="subscribe"))
    except (ValueError, OSError, asyncio.TimeoutError) as e:
        writer.close()
        raise ApiError(502, f"subscribe: no valid answer from sluiced ({e})") from None
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def _event_stream(request: Request, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter, max_events: int | None,
                        keepalive: float) -> AsyncIterator[bytes]:
    sent = 0
    try:
        yield b": subscribed\n\n"
        while max_events is None or sent < max_events:
            if await request.is_disconnected():
                return
            try:
                line = await asyncio.wait_for(reader.readline(), keepalive)
            except asyncio.TimeoutError:
                yield b": keepalive\n\n"
                continue
            except (OSError, ValueError):
                return
            if not line:
                return  # sluiced went away
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict) or msg.get("method") != "event":
                continue
            params = msg.get("params") or {}
            kind = str(params.get("kind", "event")).replace("\n", " ")
            data = json.dumps(params, separators=(",", ":"))
            yield f"event: {kind}\ndata: {data}\n\n".encode()
            sent += 1
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


# -- the app ------------------------------------------------------------------------------

def create_app(node: str, socket_path: str | Path | None = None,
               token: str | None = None, timeout: float = 5.0,
               keepalive: float = 15.0) -> FastAPI:
    """The REST API of the sluiced named ``node`` (socket ``socket_path`` if given).

    With ``token``, every request must carry it (``Authorization: Bearer``
    or ``X-Sluice-Token``), else 401.
    """
    sluiced = Sluiced(node, socket_path or socket_path_for(node), timeout)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StatsCollector(sluiced))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        sluiced.close()

    app = FastAPI(
        title="Sluice",
        lifespan=lifespan,
        version=__version__,
        description=f"REST API of the Sluice node '{node}' (docs/api.md): the control "
                    f"socket of sluiced over HTTP, events as server-sent events, and "
                    f"Prometheus metrics at /metrics.",
    )
    app.state.sluiced = sluiced
    if token:
        app.add_middleware(TokenAuth, token=token)
        _document_token(app)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, e: ApiError) -> JSONResponse:
        return JSONResponse({"detail": e.detail}, status_code=e.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, e: StarletteHTTPException) -> JSONResponse:
        headers = dict(e.headers or {})
        if e.status_code == 405:
            # Allow lists the methods of every route on this path, not just the first.
            allowed: set[str] = set()
            for route in app.routes:
                match, _ = route.matches(request.scope)
                if match != Match.NONE:
                    allowed |= set(getattr(route, "methods", None) or ())
            headers["Allow"] = ", ".join(sorted(allowed))
        return JSONResponse({"detail": e.detail}, status_code=e.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        parts = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body")
            parts.append(f"{loc}: {err.get('msg')}" if loc else str(err.get("msg")))
        return JSONResponse({"detail": "; ".join(parts) or "invalid request"},
                            status_code=422)

    @app.get(f"{PREFIX}/status", response_model=Status, responses=_ERRORS, tags=["node"])
    def status() -> Any:
        """sluiced's status: node, version, mode, limits, uptime, mbufs."""
        return sluiced.call("status")

    @app.get(f"{PREFIX}/nfs", response_model=list[Nf], responses=_ERRORS, tags=["nfs"])
    def nfs() -> Any:
        """The NF instances registered with sluiced."""
        return sluiced.call("nf.list")

    @app.post(f"{PREFIX}/nfs/{{instance}}/stop", response_model=NfStopping,
              responses=_ERRORS_404, tags=["nfs"])
    def nf_stop(instance: int = PathParam(..., ge=0, le=65535)) -> Any:
        """Ask an NF instance to stop."""
        return sluiced.call("nf.stop", instance=instance)

    @app.get(f"{PREFIX}/ports", response_model=list[Port], responses=_ERRORS, tags=["ports"])
    def ports() -> Any:
        """The ports of the node."""
        return sluiced.call("port.list")

    @app.get(f"{PREFIX}/services", response_model=list[Service], responses=_ERRORS,
             tags=["services"])
    def services() -> Any:
        """The services, their load-balancing mode and live instances."""
        return sluiced.call("service.list")

    @app.put(f"{PREFIX}/services/{{service}}/lb", response_model=LbResult,
             responses=_ERRORS_404, tags=["services"])
    def lb_set(service: str, body: LbSet = Body(...)) -> Any:
        """Set how a service spreads packets across its instances."""
        return sluiced.call("lb.set", service=service, mode=body.mode)

    @app.get(f"{PREFIX}/stats", response_model=Stats, responses=_ERRORS, tags=["stats"])
    def stats() -> Any:
        """Cumulative counters of ports, NF instances and services, drops by reason."""
        return sluiced.call("stats")

    @app.get(f"{PREFIX}/chain", response_model=Chain, responses=_ERRORS, tags=["chain"])
    def chain_get() -> Any:
        """The default chain."""
        return sluiced.call("chain.get")

    @app.put(f"{PREFIX}/chain", response_model=ChainVersion, responses=_ERRORS,
             tags=["chain"])
    def chain_set(body: ChainSet) -> Any:
        """Replace the default chain; returns its new version."""
        return sluiced.call("chain.set", hops=body.hops)

    @app.post(f"{PREFIX}/rx/pause", response_model=RxState, responses=_ERRORS, tags=["rx"])
    def rx_pause() -> Any:
        """Stop reading the ports (packets in flight drain)."""
        return sluiced.call("rx.pause")

    @app.post(f"{PREFIX}/rx/resume", response_model=RxState, responses=_ERRORS,
              tags=["rx"])
    def rx_resume() -> Any:
        """Read the ports again (fails while a service on the chain has no NF)."""
        return sluiced.call("rx.resume")

    @app.get(f"{PREFIX}/events", response_class=StreamingResponse, tags=["events"],
             responses={**_ERRORS, 200: {
                 "description": "Server-sent events: `event: KIND` and `data: "
                                "{kind, ts, data}` per sluiced event (nf.up, nf.down, "
                                "nf.freed, chain.set); comment lines as keepalive.",
                 "content": {"text/event-stream": {"schema": {
                     "type": "object", "required": ["data"],
                     "properties": {"event": {"type": "string"},
                                    "data": {"type": "string",
                                             "description": "JSON: {kind, ts, data}"}}}}}}})
    async def events(request: Request,
                     max_events: int | None = Query(
                         None, ge=1, description="Close the stream after this many "
                                                 "events (default: never).")) -> Any:
        """sluiced's events as they happen, on a connection of their own."""
        try:
            reader, writer = await _subscribe(sluiced.socket_path)
        except OSError:
            # Let the client say what is wrong (path, and what to do).
            try:
                Client(node, sluiced.socket_path, timeout=timeout).connect()
            except SluiceError as e:
                raise http_error(e) from None
            raise ApiError(503, f"cannot subscribe on {sluiced.socket_path}") from None
        return StreamingResponse(
            _event_stream(request, reader, writer, max_events, keepalive),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/metrics", tags=["metrics"], response_class=Response, responses={
        **_ERRORS, 200: {"description": "Prometheus text exposition format.",
                         "content": {"text/plain": {"schema": {"type": "string"}}}}})
    def metrics() -> Response:
        """Prometheus metrics from one ``stats`` call."""
        return Response(generate_latest(registry), media_type=METRICS_CONTENT_TYPE)

    from .web import install_dashboard

    install_dashboard(app, sluiced)  # the dashboard at / (docs/api.md, "Dashboard")
    return app
