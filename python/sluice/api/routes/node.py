"""The node: /status, /nfs (NF instances), /ports, /rx."""

from __future__ import annotations

from typing import Any

from fastapi import Path as PathParam

from ..errors import PREFIX
from ..models import _ERRORS, _ERRORS_404, Nf, NfStopping, Port, RxState, Status
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()
rx_router = Routes()  # after /chain in ROUTERS, as the endpoints were always listed


@router.get(f"{PREFIX}/status", response_model=Status, responses=_ERRORS, tags=["node"])
def status(sluiced: SluicedDep) -> Any:
    """sluiced's status: node, version, mode, limits, uptime, mbufs."""
    return sluiced.call("status")


@router.get(f"{PREFIX}/nfs", response_model=list[Nf], responses=_ERRORS, tags=["nfs"])
def nfs(sluiced: SluicedDep) -> Any:
    """The NF instances registered with sluiced."""
    return sluiced.call("nf.list")


@router.post(f"{PREFIX}/nfs/{{instance}}/stop", response_model=NfStopping,
             responses=_ERRORS_404, tags=["nfs"])
def nf_stop(sluiced: SluicedDep, instance: int = PathParam(..., ge=0, le=65535)) -> Any:
    """Ask an NF instance to stop."""
    return sluiced.call("nf.stop", instance=instance)


@router.get(f"{PREFIX}/ports", response_model=list[Port], responses=_ERRORS, tags=["ports"])
def ports(sluiced: SluicedDep) -> Any:
    """The ports of the node."""
    return sluiced.call("port.list")


@rx_router.post(f"{PREFIX}/rx/pause", response_model=RxState, responses=_ERRORS, tags=["rx"])
def rx_pause(sluiced: SluicedDep) -> Any:
    """Stop reading the ports (packets in flight drain)."""
    return sluiced.call("rx.pause")


@rx_router.post(f"{PREFIX}/rx/resume", response_model=RxState, responses=_ERRORS,
             tags=["rx"])
def rx_resume(sluiced: SluicedDep) -> Any:
    """Read the ports again (fails while a service on the chain has no NF)."""
    return sluiced.call("rx.resume")
