"""A 422's words: one line per problem of a request, ``field.path: what is
wrong; what to give``."""

from __future__ import annotations

import re
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from ..core.deploy import kind_of, show_value
from ..core.graph import did_you_mean
from .models import _FLOW_TAGS, REQUEST_TYPES

# What pydantic adds to an error's loc for a member of a union, not a field.
_PYDANTIC_TAG = re.compile(r"^((function-(before|after|wrap|plain)|literal|list|dict|nullable|"
                           r"tagged-union|union)\[.*\]|constrained-\w+|int|str|bool|float)$")

# What each field takes, said in a 422 (`replicas: expected a whole number ...`): by
# its path, a list index or a node name as *; a rule of a batch is said as a rule.
_TAKES = {
    "hops": 'an array of hops, e.g. ["firewall", "port:out"]',
    "hops.*": "a hop as a string: a service, port:NAME or drop",
    "nodes": 'an object of each service\'s next hops, e.g. {"fw": ["mon", "drop"], '
             '"mon": ["port:out"]}',
    "nodes.*": 'an array of next hops, the default first, e.g. ["port:out"]',
    "nodes.*.*": "a next hop as a string: a service of the graph, port:NAME or drop",
    "entry": "the name of a node of the graph (or leave entry out: the first node)",
    "mode": "flow, queue or rr",
    "replicas": "a whole number of instances from 0 to 65535, e.g. 2",
    "rules": 'an array of rules, e.g. [{"graph": "web", "proto": "tcp", "dport": 80}]',
    "rules.*": 'a rule, e.g. {"graph": "web", "proto": "tcp", "dport": 80}',
    "graph": 'the name of a graph as a string, e.g. "web" (`GET /api/v1/graphs` lists them)',
    "service": 'the name of a service as a string, e.g. "firewall" (`GET /api/v1/services` '
               'lists them)',
    "to": "one of the service's next hops as a string: a service, port:NAME or drop",
    "key": 'a string of 1 to 63 characters, e.g. "threshold"',
    "value": 'a string of at most 255 characters, e.g. "1000"',
    "flow": '{"key": "tcp 10.0.0.1:1234 > 10.0.0.2:80"} for one flow or {"match": {...}} '
            'for every flow that matches ({"match": {}}: all)',
    "flow.key": 'a flow key, e.g. "tcp 10.0.0.1:1234 > 10.0.0.2:80" (`GET /api/v1/flows` '
                'lists them)',
    "flow.match": "an object of match fields (proto, src, dst, sport, dport, in_port); {} "
                  "for every flow",
    "query.limit": "a whole number from 0 to 100000",
    "query.offset": "a whole number from 0 to 4294967295",
    "query.instance": "an instance id from 0 to 65535 (`GET /api/v1/nfs` lists them)",
    "query.max_events": "a whole number of events, 1 or more",
    "query.all": "true or false",
    "path.instance": "an instance id from 0 to 65535 (`GET /api/v1/nfs` lists them)",
    "path.rule_id": "a rule id from 0 to 4294967295 (`GET /api/v1/rules` lists them)",
    "path.request_id": "a request id from 1 to 4294967295 (`GET /api/v1/flow-requests` "
                       "lists them)",
    "path.flow": "a flow id, or a flow key URL-encoded (`GET /api/v1/flows` lists them)",
}

# What pydantic's type errors expected, for a field _TAKES does not name.
_TYPE_NAMES = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "int_parsing_size": "an integer", "string_type": "a string", "list_type": "an array",
    "dict_type": "an object", "bool_type": "true or false", "bool_parsing": "true or false",
    "float_type": "a number", "float_parsing": "a number", "model_type": "an object",
    "model_attributes_type": "an object", "literal_error": "",
}


def _json_kind(v: Any) -> str:
    """What a JSON value is, in JSON's words: ``a string ('x')``, ``an array``."""
    if isinstance(v, (list, dict)) or v is None:
        return "an array" if isinstance(v, list) else "an object" if isinstance(v, dict) else "null"
    return kind_of(v)


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _model_at(tp: Any, loc: list[Any]) -> type[BaseModel] | None:
    """The model of a request whose key ``loc`` (an error's loc after ``body``,
    tags of unions included) ends at: for the fields it takes."""
    for part in loc[:-1]:
        tp = _unwrap(tp)
        args = [_unwrap(a) for a in get_args(tp) if a is not type(None)]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is list:
            tp = args[0]
        elif get_origin(tp) is dict:
            tp = args[-1]
        elif part in REQUEST_TYPES:  # FlowRequest: the member the body's type names
            tp = dict(zip(REQUEST_TYPES, args, strict=True))[part]
        elif part in _FLOW_TAGS:  # FlowRef: the member the body's flow is
            tp = dict(zip(_FLOW_TAGS, args, strict=True))[part]
        elif args and not _PYDANTIC_TAG.match(str(part)):
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _takes(where: list[Any]) -> str | None:
    """What the field at ``where`` (a cleaned loc) takes, from _TAKES."""
    parts = [str(x) for x in where]
    if parts and parts[0] == "nodes" and len(parts) > 1:
        parts[1] = "*"
    key = ".".join("*" if p.isdigit() and i else p for i, p in enumerate(parts))
    for prefix in ("rules.*.", "flow.match."):  # a rule of a batch, a request's match
        if key.startswith(prefix) and key not in _TAKES:
            key = key[len(prefix):]
    return _TAKES.get(key)


def _problem(err: Any, body: Any = None) -> tuple[str, str]:
    """The field path and the message of one pydantic error of a request:
    ``skip_me.flow`` and what is wrong there and what to give. ``body`` is the
    type of the route's body (for the fields an object takes)."""
    kind, ctx, value = err.get("type"), err.get("ctx") or {}, err.get("input")
    raw = list(err.get("loc", ()))
    where = list(raw)
    if where[:1] == ["body"] and len(where) > 1 and where[1] in REQUEST_TYPES:
        del where[1]  # the member of FlowRequest the body's type named
    where = [x for x in where if x != "body" and x not in _FLOW_TAGS
             and not _PYDANTIC_TAG.match(str(x))]
    # a query or path value is text: shown as given; a body's value by its JSON kind
    in_url = bool(where) and where[0] in ("query", "path")
    got = show_value(value) if in_url and isinstance(value, str) else _json_kind(value)
    takes = _takes(where)
    msg = str(err.get("msg"))
    if kind == "sluice_match_fields":
        where.append(ctx.get("field", ""))  # the field to fix
    elif kind == "sluice_match":
        pass  # match_params' words (_match_field)
    elif kind == "extra_forbidden":
        model = _model_at(body, raw[1:]) if raw[:1] == ["body"] else None
        known = list(model.model_fields) if model is not None else []
        if model is not None and "type" in known:
            known.remove("type")
            known.insert(0, "type")
        fields = f" (this object takes {', '.join(known)})" if known else ""
        msg = f"unknown field: leave it out{fields}{did_you_mean(str(raw[-1]), known)}"
    elif kind == "missing":
        msg = f"missing: this field is required; give {takes}" if takes else \
            "missing: this field is required (/docs lists the fields)"
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        # FlowRequest's type (the one string discriminator of the bodies)
        where.append("type")
        types = f"{', '.join(REQUEST_TYPES[:-1])} or {REQUEST_TYPES[-1]}"
        if kind == "union_tag_not_found":
            msg = f"missing: say which request this is: {types}"
        else:
            given = value.get("type") if isinstance(value, dict) else ctx.get("tag")
            hint = did_you_mean(str(given), REQUEST_TYPES)
            shown = "null" if given is None else show_value(given)
            msg = f"{shown} is not a request type: use {types}{hint}"
    elif kind == "flow_ref":
        one = ('{"key": "tcp 10.0.0.1:1234 > 10.0.0.2:80"} for one flow or '
               '{"match": {...}} for every flow that matches ({"match": {}}: all)')
        if not isinstance(value, dict):
            msg = f"expected an object, got {_json_kind(value)}: give {one}"
        elif "key" in value:
            msg = f"give key or match, not both: {one}"
        else:
            msg = f"missing: give {one}"
    elif kind in _TYPE_NAMES:
        if takes is None:
            model = _model_at(body, raw[1:] + ["x"]) if raw[:1] == ["body"] else None
            takes = (f"an object with {', '.join(model.model_fields)}" if model is not None
                     else _TYPE_NAMES[kind] or f"one of {ctx.get('expected')}")
        hint = ""
        if kind == "literal_error" and isinstance(value, str):
            hint = did_you_mean(value, re.findall(r"'([^']*)'", str(ctx.get("expected"))))
        msg = f"expected {takes}, got {got}{hint}"
    elif kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": "less than", "greater_than": "not more than",
              "less_than_equal": "more than", "less_than": "not less than"}[kind]
        bound = next(iter(ctx.values()), "")
        shown = value if in_url else show_value(value)
        msg = f"{shown} is out of range ({op} {bound}): give {takes or 'a number in range'}"
    elif kind in ("string_too_short", "too_short"):
        msg = f"is empty: give {takes}" if takes else \
            f"{msg[0].lower()}{msg[1:]}: give more (/docs describes the field)"
    elif kind in ("string_too_long", "too_long"):
        size = len(value) if isinstance(value, (str, list)) else ctx.get("actual_length")
        unit = "characters" if kind == "string_too_long" else "items"
        most = ctx.get("max_length")
        msg = f"{size} {unit}, more than the {most} it takes: " + (
            f"give {takes}" if takes else f"give at most {most}" + (
                " (send the rest in another request)" if kind == "too_long" else ""))
    else:
        msg = f"{msg[0].lower()}{msg[1:]}, got {got}: /docs says what this field takes"
    return ".".join(str(x) for x in where), msg
