"""A fake sluiced for the REST API tests: tests/python/test_client.py's
FakeSluiced (a JSON-RPC Unix-socket server thread) with a handler that
answers every method of docs/control-socket.md with canned results."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location(
    "_sluice_fake_server", Path(__file__).resolve().parents[1] / "python" / "test_client.py")
assert _spec is not None and _spec.loader is not None
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)


class FakeSluiced(_mod.FakeSluiced):  # type: ignore[misc,name-defined]
    def _conn(self, conn: Any) -> None:
        # The API may close a subscription while events are still being sent.
        with contextlib.suppress(OSError):
            super()._conn(conn)


STATUS = {
    "node": "t", "version": "0.1.0", "pid": 4242, "mode": "shared", "handoff": "direct",
    "uptime_s": 12.5, "rx_enabled": True, "max_nfs": 64, "max_services": 32,
    "ring_size": 4096, "burst": 32, "n_nfs": 2, "n_services": 2, "n_ports": 2,
    "io_threads": 1, "methods": ["status", "nf.list", "stats"],
    "mbufs": {"size": 8191, "in_use": 100},
}
NFS = [
    {"instance": 0, "service": "fw", "service_id": 0, "prog": "/b/sluice-firewall",
     "pid": 100, "state": "running", "mode": "shared", "access": 1,
     "rx_ring": {"count": 3, "size": 4096}, "tx_ring": {"count": 0, "size": 4096}},
    {"instance": 1, "service": "mon", "service_id": 1, "prog": "/b/sluice-monitor",
     "pid": 101, "state": "running", "mode": "shared", "access": 1,
     "rx_ring": {"count": 0, "size": 4096}, "tx_ring": {"count": 1, "size": 4096}},
]
PORTS = [
    {"id": 0, "name": "in", "device": "net_pcap0", "started": True, "link_up": True,
     "rx_queues": 1, "tx_queues": 3},
    {"id": 1, "name": "out", "device": "net_null0", "started": True, "link_up": False,
     "rx_queues": 1, "tx_queues": 3},
]
SERVICES = [
    {"id": 0, "name": "fw", "lb": "flow", "instances": [0]},
    {"id": 1, "name": "mon", "lb": "rr", "instances": [1]},
]


def _drops(**kw: int) -> dict[str, int]:
    d = dict.fromkeys(["nf_verdict", "ring_full", "no_instance", "invalid_dest",
                       "end_of_chain", "nf_lost", "tx_full", "port_down"], 0)
    d.update(kw)
    return d


STATS = {
    "tsc_hz": 2400000000,
    "ports": [
        {"id": 0, "name": "in", "rx_pkts": 1000, "rx_bytes": 64000, "tx_pkts": 0,
         "tx_bytes": 0, "rx_stalls": 2, "drops": _drops(no_instance=5)},
        {"id": 1, "name": "out", "rx_pkts": 0, "rx_bytes": 0, "tx_pkts": 900,
         "tx_bytes": 57600, "rx_stalls": 0, "drops": _drops(tx_full=1)},
    ],
    "nfs": [
        {"instance": 0, "service": "fw", "state": "running", "rx_pkts": 995,
         "rx_bytes": 63680, "tx_pkts": 950, "tx_bytes": 60800,
         "drops": _drops(nf_verdict=45), "rx_ring": {"count": 3, "size": 4096},
         "cycles": 199000, "cycles_per_pkt": 200.0, "sleeps": 7, "stalls": 0, "bursts": 40},
        {"instance": 1, "service": "mon", "state": "running", "rx_pkts": 950,
         "rx_bytes": 60800, "tx_pkts": 901, "tx_bytes": 57664,
         "drops": _drops(ring_full=49), "rx_ring": {"count": 0, "size": 4096},
         "cycles": 95000, "cycles_per_pkt": 100.0, "sleeps": 0, "stalls": 1, "bursts": 30},
    ],
    "services": [
        {"id": 0, "name": "fw", "instances": [0], "rx_pkts": 995, "tx_pkts": 950,
         "drops": _drops(nf_verdict=45)},
        {"id": 1, "name": "mon", "instances": [1], "rx_pkts": 950, "tx_pkts": 901,
         "drops": _drops(ring_full=49)},
    ],
    "drops_total": 100,
}
EVENTS = [
    {"kind": "nf.up", "ts": 1700000000.5,
     "data": {"instance": 2, "service": "fw", "pid": 7, "prog": "sluice-firewall"}},
    {"kind": "chain.set", "ts": 1700000001.25, "data": {"version": 3, "hops": ["fw", "drop"]}},
]


class Sluiced:
    """The state behind the fake: the handler mimics sluiced's answers and errors."""

    def __init__(self) -> None:
        self.chain = {"version": 1, "hops": ["fw", "mon", "port:out"]}
        self.rx_enabled = True
        self.services = copy.deepcopy(SERVICES)
        self.fail: dict[str, Any] = {}  # method -> error object or action to return

    def handler(self, req: Any) -> Any:
        if not isinstance(req, dict):
            return {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32700, "message": "parse error at column 1"}}
        rid, method, p = req.get("id"), req.get("method"), req.get("params") or {}

        def ok(result: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "result": result}

        def err(code: int, message: str) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}

        if method in self.fail:
            f = self.fail[method]
            return err(*f) if isinstance(f, tuple) else f
        if method == "status":
            return ok({**STATUS, "rx_enabled": self.rx_enabled})
        if method == "nf.list":
            return ok(NFS)
        if method == "port.list":
            return ok(PORTS)
        if method == "service.list":
            return ok(self.services)
        if method == "stats":
            return ok(STATS)
        if method == "chain.get":
            return ok(self.chain)
        if method == "chain.set":
            hops = p.get("hops")
            if not isinstance(hops, list):
                return err(-32602, "param 'hops' (array of strings) is missing")
            names = {s["name"] for s in self.services} | {"drop", "port:in", "port:out"}
            for i, h in enumerate(hops):
                if h not in names:
                    return err(-32000, f"chain hop {i + 1} '{h}': no service or port named "
                                       f"'{h}'; use a name from service.list or port.list")
            self.chain = {"version": self.chain["version"] + 1, "hops": hops}
            return ok({"version": self.chain["version"]})
        if method == "nf.stop":
            i = p.get("instance")
            if not isinstance(i, int):
                return err(-32602, "param 'instance' (integer) is missing")
            if i not in (0, 1):
                return err(-32000, f"no running NF instance {i}; nf.list shows them")
            return ok({"instance": i, "state": "stopping"})
        if method == "lb.set":
            mode = p.get("mode")
            if mode not in ("flow", "rr"):
                return err(-32602, f"param 'mode' '{mode}': use flow or rr")
            svc = next((s for s in self.services if s["name"] == p.get("service")), None)
            if svc is None:
                return err(-32000, f"no service {p.get('service')}; service.list shows "
                                   f"the services")
            svc["lb"] = mode
            return ok({"service": svc["name"], "mode": mode})
        if method == "rx.pause":
            self.rx_enabled = False
            return ok({"rx_enabled": False})
        if method == "rx.resume":
            self.rx_enabled = True
            return ok({"rx_enabled": True})
        if method == "subscribe":
            return [ok({"subscribed": True})] + [
                {"jsonrpc": "2.0", "method": "event", "params": e} for e in EVENTS] + ["close"]
        return err(-32601, f"method '{method}' not found; 'status' lists the methods")


@pytest.fixture
def sockdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="slapi", dir="/tmp"))  # short: sun_path has 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fake(sockdir: Path) -> Iterator[tuple[Sluiced, Any]]:
    """(state, server): a fake sluiced listening on sockdir/t.sock."""
    state = Sluiced()
    srv = FakeSluiced(sockdir / "t.sock", handler=state.handler)
    try:
        yield state, srv
    finally:
        srv.close()
