"""Cross-layer requests about flows, as NFs make them: /flow-requests."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body
from fastapi import Path as PathParam

from ..errors import PREFIX
from ..models import (
    _ERRORS,
    _ERRORS_404,
    FlowRequest,
    FlowRequestResult,
    KeptRequestList,
    KeptRequestRemoved,
)
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()


@router.post(f"{PREFIX}/flow-requests", response_model=FlowRequestResult,
             responses=_ERRORS_404, tags=["flows"])
def flow_request(sluiced: SluicedDep, body: Annotated[FlowRequest, Body()]) -> Any:
    """Make a request as the service's NFs make them (include/sluice/flow.h):
    skip_me, request_me, change_default (to one of its next hops) for one flow
    (key) or many (match), or a message to the service's instances. A request
    the graph does not allow is 409 with the reason; no such service is 404."""
    return sluiced.call("flow.request", **body.model_dump(exclude_none=True))


@router.get(f"{PREFIX}/flow-requests", response_model=KeptRequestList, responses=_ERRORS,
            tags=["flows"])
def flow_requests(sluiced: SluicedDep) -> Any:
    """The requests with a match kept for new flows, the oldest first."""
    return sluiced.call("flow.requests")


@router.delete(f"{PREFIX}/flow-requests/{{request_id}}", response_model=KeptRequestRemoved,
               responses=_ERRORS_404, tags=["flows"])
def flow_request_remove(sluiced: SluicedDep,
                        request_id: int = PathParam(..., ge=1, le=4294967295)) -> Any:
    """Forget a kept request: flows created from now on no longer get it; live
    flows keep what it gave them (DELETE /flows with filters resets them). 404 if
    no request has this id."""
    return sluiced.call("flow.request.remove", id=request_id)
