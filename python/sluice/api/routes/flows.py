"""The flow table: /flows (filtered lists and deletes), /flows/{flow}."""

from __future__ import annotations

from typing import Any

from fastapi import Path as PathParam
from fastapi import Query

from ...core.graph import match_params
from ..bodies import NAME_MAX
from ..errors import PREFIX, ApiError, _short
from ..models import (
    _ERRORS_404,
    _MATCH_FIELDS,
    _PORTS_DOC,
    Flow,
    FlowList,
    FlowsDeleted,
    _match_problem,
)
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()

# Where sluiced's params come from in these requests, for its messages (_param_said).
_QUERY = {k: f"query.{k}" for k in ("graph", "service", "instance", "proto", "src",
                                      "dst", "sport", "dport", "in_port")}
_PATH_FLOW = {"key": "path.flow", "id": "path.flow"}


def flow_filters(graph: str | None, service: str | None, instance: int | None,
                 proto: str | None, src: str | None, dst: str | None,
                 sport: str | None, dport: str | None,
                 in_port: str | None) -> dict[str, Any]:
    if instance is not None and not service:
        raise ApiError(422, "query.instance: give service too (instance picks an "
                            "instance of that service), e.g. ?service=firewall&"
                            "instance=2")
    f = {"graph": graph, "service": service, "instance": instance, "proto": proto,
         "src": src, "dst": dst, "sport": sport, "dport": dport, "in_port": in_port}
    # An empty filter (?graph=, as an HTML form sends it) is no filter.
    f = {k: v for k, v in f.items() if v is not None and v != ""}
    # Checked as sluice flow list checks them (match_params), sent as given.
    _, problems = match_params({k: v for k, v in f.items()
                                if k in (*_MATCH_FIELDS, "in_port")})
    if problems:
        raise ApiError(422, "\n".join(f"query.{k}: {_match_problem(k, f[k], m, True)}"
                                      for k, m in problems))
    return f


def _filter(description: str) -> Any:
    return Query(None, max_length=NAME_MAX, description=description)


_both = "matched against both directions"
_f_graph = _filter("Flows of this graph.")
_f_service = _filter("Flows pinned to an instance of this service.")
_f_instance = Query(None, ge=0, le=65535,
                    description="... to this instance of it (needs service).")
_f_proto = _filter("tcp, udp, icmp, ... or a number.")
_f_src = _filter(f"Prefix or address; {_both}.")
_f_dst = _filter(f"Prefix or address; {_both}.")
_f_sport = _filter(f"{_PORTS_DOC}; {_both}.")
_f_dport = _filter(f"{_PORTS_DOC}; {_both} (so dport=80 finds replies from port 80 too).")
_f_in_port = _filter("Flows whose first packet came in on this port.")


@router.get(f"{PREFIX}/flows", response_model=FlowList, responses=_ERRORS_404,
            tags=["flows"])
def flows(sluiced: SluicedDep,
          limit: int = Query(100, ge=0, le=100000,
                             description="At most this many flows."),
          graph: str | None = _f_graph, service: str | None = _f_service,
          instance: int | None = _f_instance, proto: str | None = _f_proto,
          src: str | None = _f_src, dst: str | None = _f_dst,
          sport: str | None = _f_sport, dport: str | None = _f_dport,
          in_port: str | None = _f_in_port) -> Any:
    """Flows in the table that pass the filters (404 if the graph or service
    filtered on does not exist)."""
    return sluiced.call("flow.list", limit=limit, fields=_QUERY, **flow_filters(
        graph, service, instance, proto, src, dst, sport, dport, in_port))


@router.delete(f"{PREFIX}/flows", response_model=FlowsDeleted, responses=_ERRORS_404,
               tags=["flows"])
def flows_delete(sluiced: SluicedDep,
                 all_: bool = Query(False, alias="all",
                                    description="Every flow (without filters)."),
                 graph: str | None = _f_graph, service: str | None = _f_service,
                 instance: int | None = _f_instance, proto: str | None = _f_proto,
                 src: str | None = _f_src, dst: str | None = _f_dst,
                 sport: str | None = _f_sport, dport: str | None = _f_dport,
                 in_port: str | None = _f_in_port) -> Any:
    """Delete the flows that pass the filters, or all=true; each is classified
    again on its next packet. Without either, 422."""
    params = flow_filters(graph, service, instance, proto, src, dst, sport, dport,
                          in_port)
    if all_:
        params["all"] = True
    elif not params:
        raise ApiError(422, f"DELETE {PREFIX}/flows needs filters (query parameters "
                            f"{', '.join(sorted(_QUERY))}) or all=true: "
                            f"`DELETE {PREFIX}/flows?all=true` deletes every flow, "
                            f"`DELETE {PREFIX}/flows/{{flow}}` one")
    return sluiced.call("flow.delete", fields=_QUERY, **params)


def flow_ref(flow: str) -> dict[str, Any]:
    """A flow in a path: an id (digits) or a key."""
    if not (flow.isascii() and flow.isdigit()):
        return {"key": flow}
    if len(flow) > 10 or int(flow) > 4294967295:
        raise ApiError(422, f"flow: id {_short(flow, 20)} is out of range "
                            f"(0-4294967295): give an id from GET {PREFIX}/flows, or "
                            f"the flow's key")
    return {"id": int(flow)}


_flow_path = PathParam(..., max_length=NAME_MAX,
                       description="The flow's id (from GET /flows) or its key, e.g. "
                                   "'tcp 10.0.0.1:1234 > 10.0.0.2:80' (URL-encoded).")


@router.get(f"{PREFIX}/flows/{{flow}}", response_model=Flow, responses=_ERRORS_404,
            tags=["flows"])
def flow_get(sluiced: SluicedDep, flow: str = _flow_path) -> Any:
    """One flow."""
    return sluiced.call("flow.get", fields=_PATH_FLOW, **flow_ref(flow))


@router.delete(f"{PREFIX}/flows/{{flow}}", response_model=FlowsDeleted,
               responses=_ERRORS_404, tags=["flows"])
def flow_delete(sluiced: SluicedDep, flow: str = _flow_path) -> Any:
    """Delete one flow; its next packet is classified again."""
    return sluiced.call("flow.delete", fields=_PATH_FLOW, **flow_ref(flow))
