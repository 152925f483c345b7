"""Policies (issue 30): POST /graphs/compile (a policy in, its compiled graph
out) and PUT /policies/{name} (compiled, then applied with its rules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.graph import same_rule, to_rpc
from ...core.parallel import DECLARATIONS, Compiled, Ops, compile_data, service_table
from ...core.policy import PolicyError
from ...runtime.client import rule_build_seconds
from ..bodies import name_path
from ..errors import PREFIX, ApiError, _rest_note
from ..models import _ERRORS, CompiledPolicy, PolicyApplied, PolicyBody
from ..sluiced import Sluiced, SluicedDep
from .table import Routes

router = Routes()
_ERRORS_422 = {**_ERRORS, 422: {"model": _ERRORS[409]["model"], "description": (
    "The policy is wrong (the compiler's messages, one a line: the key, the policy, the "
    "problem), or sluiced refused its graph or rules (its message).")}}


def compile_body(data: dict[str, Any], table: Mapping[str, Ops] = DECLARATIONS) -> Compiled:
    """The policy of a body compiled; ApiError 422 with the compiler's lines
    (``nfs[1]: policy 'edge': ...``) if it is wrong."""
    try:
        return compile_data({"policy": data}, "", table)
    except PolicyError as e:
        raise ApiError(422, "\n".join(m.removeprefix(": ").removeprefix("policy.")
                                      for m in e.issues)) from None


def compiled_json(c: Compiled) -> dict[str, Any]:
    return {**c.to_json(), "explain": c.explain()}


@router.post(f"{PREFIX}/graphs/compile", response_model=CompiledPolicy, responses=_ERRORS_422,
             tags=["graphs"])
def graph_compile(body: PolicyBody) -> Any:
    """Compile a policy into a service graph with parallel groups (what `sluice
    graph compile --json` prints, and its --explain lines). Nothing is sent to
    sluiced. A wrong policy is 422 with the compiler's messages."""
    return compiled_json(compile_body(body.data()))


@router.put(f"{PREFIX}/policies/{{name}}", response_model=PolicyApplied,
            responses=_ERRORS_422, tags=["graphs"])
def policy_apply(sluiced: SluicedDep, body: PolicyBody, name: str = name_path()) -> Any:
    """Compile a policy and apply it: its graph (named by the path) is created or
    replaced like PUT /graphs/{name} (parallel groups sent flattened), then the
    rules of its match the node does not have yet are added in one batch. A
    service of the node has the operations of its NFs' program (GET /nfs)."""
    data = body.data()
    if "name" in data and data["name"] != name:
        raise ApiError(422, f"name: {data['name']!r} is not the path's {name!r}: leave it "
                            f"out or give the same (PUT {PREFIX}/policies/{name})")
    nfs = sluiced.call("nf.list")
    table = service_table((str(n.get("service")), str(n.get("prog")))
                          for n in (nfs if isinstance(nfs, list) else []) if isinstance(n, dict))
    c = compile_body({**data, "name": name}, table)
    res = _rest_note(sluiced.call("graph.apply", **to_rpc(c.graph)))
    return {"graph": res, "rules": add_rules(sluiced, list(c.rules)),
            "compiled": compiled_json(c)}


def add_rules(sluiced: Sluiced, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rules`` the node has not (same graph, priority, match) added in one
    call; each one's id and whether it was added."""
    if not rules:
        return []
    have = sluiced.call("rule.list", offset=0, limit=100000).get("rules", [])
    out: list[dict[str, Any]] = []
    new = []
    for r in rules:
        old = next((x for x in have if same_rule(x, r)), None)
        out.append({"id": old.get("id") if old else None, "added": old is None, **r})
        if old is None:
            new.append(r)
    if new:
        res = sluiced.call("rule.add", wait=rule_build_seconds(len(have) + len(new)),
                           rules=new)
        ids = iter(range(int(res["first_id"]), int(res["first_id"]) + len(new)))
        for x in out:
            if x["added"]:
                x["id"] = next(ids)
    return out
