"""Service graphs: /graphs, and /chain (the default graph written as a chain)."""

from __future__ import annotations

from typing import Any

from ..bodies import name_path
from ..errors import PREFIX, _rest_note
from ..models import (
    _ERRORS,
    _ERRORS_404,
    Chain,
    ChainSet,
    ChainVersion,
    Graph,
    GraphApplied,
    GraphList,
    GraphRemoved,
    GraphSpec,
)
from ..sluiced import SluicedDep
from .table import Routes

chain_router = Routes()
router = Routes()


@chain_router.get(f"{PREFIX}/chain", response_model=Chain, responses=_ERRORS, tags=["chain"])
def chain_get(sluiced: SluicedDep) -> Any:
    """The default chain."""
    return sluiced.call("chain.get")


@chain_router.put(f"{PREFIX}/chain", response_model=ChainVersion, responses=_ERRORS,
                  tags=["chain"])
def chain_set(sluiced: SluicedDep, body: ChainSet) -> Any:
    """Replace the default chain; returns its new version."""
    return _rest_note(sluiced.call("chain.set", hops=body.hops))


@router.get(f"{PREFIX}/graphs", response_model=GraphList, responses=_ERRORS,
            tags=["graphs"])
def graphs(sluiced: SluicedDep) -> Any:
    """Every service graph, the default chain included."""
    return sluiced.call("graph.get")


@router.get(f"{PREFIX}/graphs/{{name}}", response_model=Graph, responses=_ERRORS_404,
            tags=["graphs"])
def graph_get(sluiced: SluicedDep, name: str = name_path()) -> Any:
    """One graph: its nodes and their allowed next hops (the first is the default)."""
    return sluiced.call("graph.get", name=name)


@router.put(f"{PREFIX}/graphs/{{name}}", response_model=GraphApplied,
            responses=_ERRORS, tags=["graphs"])
def graph_apply(sluiced: SluicedDep, body: GraphSpec, name: str = name_path()) -> Any:
    """Create or replace a graph, atomically (its version goes up). The name
    default is the chain. A graph sluiced cannot use is 422 with its reason;
    one it has no room for (--max-graphs) is 409."""
    params: dict[str, Any] = {"name": name, "nodes": body.nodes}
    if body.entry is not None:
        params["entry"] = body.entry
    return _rest_note(sluiced.call("graph.apply", **params))


@router.delete(f"{PREFIX}/graphs/{{name}}", response_model=GraphRemoved,
               responses=_ERRORS_404, tags=["graphs"])
def graph_remove(sluiced: SluicedDep, name: str = name_path()) -> Any:
    """Remove a graph and its rules; its flows are classified again on their next
    packet. default cannot be removed (409)."""
    return sluiced.call("graph.remove", name=name)
