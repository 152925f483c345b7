"""Rules that send new flows to graphs: /rules, /rule-batches."""

from __future__ import annotations

from typing import Any

from fastapi import Path as PathParam
from fastapi import Query

from ...runtime.client import rule_build_seconds
from ..errors import PREFIX
from ..models import (
    _ERRORS,
    _ERRORS_404,
    Rule,
    RuleAdd,
    RuleBatch,
    RuleList,
    RuleRemoved,
    RulesAdded,
)
from ..sluiced import SluicedDep
from .table import Routes

router = Routes()


@router.get(f"{PREFIX}/rules", response_model=RuleList, responses=_ERRORS, tags=["rules"])
def rules(sluiced: SluicedDep,
          offset: int = Query(0, ge=0, le=4294967295,
                              description="Rules to skip (a page's start)."),
          limit: int = Query(10000, ge=0, le=100000,
                             description="At most this many rules.")) -> Any:
    """The rules that send new flows to graphs, highest priority first, a page
    at a time (truncated says whether more follow)."""
    return sluiced.call("rule.list", offset=offset, limit=limit)


@router.post(f"{PREFIX}/rules", response_model=Rule, status_code=201,
             responses=_ERRORS_404, tags=["rules"])
def rule_add(sluiced: SluicedDep, body: RuleAdd) -> Any:
    """Add a rule: new flows that match go to its graph (404 if there is no such
    graph). Existing flows keep theirs until deleted or aged out."""
    return sluiced.call("rule.add", **body.model_dump(exclude_none=True))


@router.post(f"{PREFIX}/rule-batches", response_model=RulesAdded, status_code=201,
             responses=_ERRORS_404, tags=["rules"])
def rules_add(sluiced: SluicedDep, body: RuleBatch) -> Any:
    """Add many rules at once: sluiced builds its classifier once for all of them
    (one POST /rules each rebuilds it every time). All or none; a refused rule is
    named rules[N] in the error (404 if its graph does not exist)."""
    return sluiced.call("rule.add", wait=rule_build_seconds(len(body.rules)),
                        rules=[r.model_dump(exclude_none=True) for r in body.rules])


@router.delete(f"{PREFIX}/rules/{{rule_id}}", response_model=RuleRemoved,
               responses=_ERRORS_404, tags=["rules"])
def rule_remove(sluiced: SluicedDep,
                rule_id: int = PathParam(..., ge=0, le=4294967295)) -> Any:
    """Remove a rule."""
    return sluiced.call("rule.remove", id=rule_id)
