"""Services: /services, their load balancing and scaling."""

from __future__ import annotations

from typing import Any

from fastapi import Body

from ..bodies import name_path
from ..errors import PREFIX
from ..models import _ERRORS, _ERRORS_404, LbResult, LbSet, Scale, Scaled, Service
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()
scale_router = Routes()  # last but /metrics in ROUTERS, as it was always listed


@router.get(f"{PREFIX}/services", response_model=list[Service], responses=_ERRORS,
            tags=["services"])
def services(sluiced: SluicedDep) -> Any:
    """The services, their load-balancing mode and live instances."""
    return sluiced.call("service.list")


@router.put(f"{PREFIX}/services/{{service}}/lb", response_model=LbResult,
            responses=_ERRORS_404, tags=["services"])
def lb_set(sluiced: SluicedDep, service: str = name_path(), body: LbSet = Body(...)) -> Any:
    """Set how a service spreads packets across its instances."""
    return sluiced.call("lb.set", service=service, mode=body.mode)


@scale_router.post(f"{PREFIX}/services/{{service}}/scale", response_model=Scaled,
             responses=_ERRORS_404, tags=["services"])
def nf_scale(sluiced: SluicedDep, body: Scale, service: str = name_path()) -> Any:
    """Start or stop instances so the service has this many (nf.scale)."""
    return sluiced.call("nf.scale", service=service, replicas=body.replicas)
