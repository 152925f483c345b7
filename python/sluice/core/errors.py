"""Error text: the one place that turns a schema or YAML problem into the
line a user reads (core layer: no I/O, no sluice imports).

Every problem is said as ``key.path: what is wrong and what to do``; a
value is shown by its kind (``a string ('x')``, ``a list``), never as a
repr that could be as big as the input (a YAML alias bomb). The deployment
loader, the graph checker and the placement input reader call
``pydantic_issues``; its ``words`` and ``kind`` arguments let a caller
with another vocabulary (the REST API says "an object", not "a mapping")
reuse the walk with its own names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

Loc = tuple[int | str, ...]


class SluiceError(Exception):
    """Base of the errors this package reports to users (one clear line)."""


# -- values and names, as messages say them ------------------------------------------

def kind_of(v: Any) -> str:
    """What a parsed YAML/JSON value is: ``a number (3)``, ``a mapping``."""
    if isinstance(v, bool):
        return f"a boolean ({str(v).lower()})"
    if isinstance(v, int | float):
        return f"a number ({v})"
    if isinstance(v, str):
        return f"a string ({show_value(v)})"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a mapping"
    if v is None:
        return "nothing (null)"
    return type(v).__name__


def show_value(v: Any, limit: int = 60) -> str:
    """A value as a message shows it: a scalar's repr cut to ``limit``
    characters, a list or mapping by its kind (a YAML alias bomb would make
    its repr as big as the bomb)."""
    if isinstance(v, list | dict | tuple | set):
        return kind_of(v)
    text = repr(v)
    return text if len(text) <= limit else f"{text[:limit - 5]}...{text[-2:]}"


def did_you_mean(word: str, options: Iterable[str], prefix: str = "") -> str:
    """``; did you mean 'X'?`` for the closest of ``options``, or nothing."""
    m = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean '{prefix}{m[0]}'?" if m else ""


def list_words(names: Iterable[str]) -> str:
    """Names joined by commas, ``none`` for none."""
    names = list(names)
    return ", ".join(names) if names else "none"


def loc_text(loc: Loc) -> str:
    """A pydantic location as a key path: ``nfs[1].program``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


# -- pydantic errors ---------------------------------------------------------------------

def unwrap(tp: Any) -> Any:
    """The first non-None argument of an annotation, down to a plain type."""
    while get_origin(tp) is not None:
        args = [a for a in get_args(tp) if a is not type(None)]
        if not args:
            return tp
        tp = args[0]
    return tp


def model_at(loc: Loc, root: type[BaseModel]) -> type[BaseModel] | None:
    """The schema class under ``root`` that holds the key at ``loc`` (for
    unknown-key help)."""
    cls: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return None
        field = cls.model_fields.get(part)
        if field is None:
            return None
        cls = unwrap(field.annotation)
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a model takes, as a file writes them (aliases first)."""
    return [f.alias or k for k, f in model.model_fields.items()]


# What pydantic's type errors expected, in a YAML file's words.
TYPE_NAMES: Mapping[str, str] = {
    "int_type": "an integer", "int_parsing": "an integer", "string_type": "a string",
    "list_type": "a list", "bool_type": "true or false", "dict_type": "a mapping",
    "float_type": "a number",
}


@dataclass(frozen=True)
class TaggedUnion:
    """A list of the root model whose items are a union told apart by the
    key ``tag`` (``policies: [{on: occupancy, ...}]``): pydantic puts the
    tag's value in the error's path, which the messages leave out."""

    field: str  # the root's key holding the list
    tag: str  # the key naming the variant
    variants: Mapping[str, type[BaseModel]]  # tag value -> its model
    missing: str  # what to say when the tag is left out (before " (see DOC)")


def graph_context(loc: Loc, data: Any) -> str:
    """``graph 'NAME': node 'N': `` for a problem at graphs[i](.nodes.N...), if named."""
    if len(loc) < 2 or loc[0] != "graphs" or not isinstance(loc[1], int):
        return ""
    try:
        graph = data["graphs"][loc[1]]
        name = graph["name"]
    except (KeyError, IndexError, TypeError):
        return ""
    if not isinstance(name, str):
        return ""
    text = f"graph '{name}': "
    if len(loc) > 3 and loc[2] == "nodes" and isinstance(loc[3], str):
        text += f"node '{loc[3]}': "
    return text


def pydantic_issues(e: ValidationError, root: type[BaseModel], data: Any = None, *,
                    doc: str, unions: Iterable[TaggedUnion] = (),
                    words: Mapping[str, str] = TYPE_NAMES,
                    kind: Callable[[Any], str] = kind_of,
                    context: Callable[[Loc, Any], str] = graph_context) -> list[str]:
    """One line per schema problem: ``key.path: message``.

    ``root`` is the model that was validated and ``data`` what it was given
    (``context(loc, data)`` prefixes a message: by default the graph and
    node a problem is in). ``doc`` is the page a missing key points to;
    ``unions`` the root's lists of tagged unions; ``words`` what each of
    pydantic's type errors expected, ``kind`` how a given value is said."""
    by_field = {u.field: u for u in unions}
    out = []
    for err in e.errors(include_url=False):
        loc = tuple(err["loc"])
        union = by_field.get(str(loc[0])) if loc else None
        variant: type[BaseModel] | None = None
        if union is not None and len(loc) > 2 and loc[2] in union.variants:
            # a tagged union puts the tag in the path: policies[0].occupancy.above
            variant = union.variants[str(loc[2])]
            loc = loc[:2] + loc[3:]
        path = loc_text(loc)
        typ = err["type"]
        inp = err.get("input")
        ctx = err.get("ctx") or {}
        if typ == "union_tag_invalid" and union is not None:
            tag = str(ctx.get("tag"))
            msg = f"{ctx.get('tag')!r} is not one of: {', '.join(union.variants)}"
            out.append(f"{path}.{union.tag}: {msg}{did_you_mean(tag, union.variants)}")
            continue
        if typ == "union_tag_not_found" and union is not None:
            out.append(f"{path}.{union.tag}: missing: {union.missing} (see {doc})")
            continue
        if typ == "extra_forbidden":
            model = variant if variant is not None and len(loc) == 3 else model_at(loc, root)
            known = keys_of(model) if model else []
            msg = (f"unknown key (known keys here: {', '.join(known)})"
                   f"{did_you_mean(str(loc[-1]), known)}")
        elif typ == "missing":
            msg = f"missing: this key is required (see {doc})"
        elif typ == "model_type":
            model = model_at(loc + ("x",), root)
            keys = ", ".join(keys_of(model)) if model else "..."
            msg = f"expected a mapping with keys {keys}; got {kind(inp)}"
        elif typ in words:
            msg = f"expected {words[typ]}, got {kind(inp)}"
        elif typ == "literal_error":
            expected = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
            msg = f"{show_value(inp)} is not one of: {expected}"
        elif typ in ("greater_than_equal", "greater_than"):
            op = "at least" if typ == "greater_than_equal" else "more than"
            bound = ctx.get("ge", ctx.get("gt"))
            msg = f"must be {op} {bound}, got {show_value(inp)}"
        elif typ in ("less_than_equal", "less_than"):
            op = "at most" if typ == "less_than_equal" else "less than"
            bound = ctx.get("le", ctx.get("lt"))
            msg = f"must be {op} {bound}, got {show_value(inp)}"
        elif typ == "invalid_key":
            # the key itself ends the path: say where it is, and what it is
            path = loc_text(loc[:-1])
            msg = (f"{kind(inp)} cannot be a key: keys are names (write the key in quotes "
                   f"if it is meant as one)")
        elif typ == "sluice":
            msg = err["msg"]
        else:
            msg = f"{err['msg']} (got {kind(inp)})"
        msg = context(loc, data) + msg
        out.append(f"{path}: {msg}" if path else msg)
    return out


# -- YAML -------------------------------------------------------------------------------

def yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error without a line and column, in one line."""
    if isinstance(e, yaml.reader.ReaderError):
        char = f"#x{e.character:04x}" if isinstance(e.character, int) else repr(e.character)
        return (f"invalid YAML (character {char} at position {e.position}: {e.reason}): "
                f"remove it")
    return f"invalid YAML ({' '.join(str(e).split())})"


def yaml_error_text(e: yaml.YAMLError | RecursionError) -> str:
    """What is wrong with a YAML text, in one line, with the line and column
    when the parser knows them (the file's name is the caller's to add)."""
    if isinstance(e, RecursionError):
        return "invalid YAML (lists or mappings nested too deep to read): nest them less deeply"
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(x for x in (e.context, e.problem) if x)
        return f"{where}invalid YAML ({what})"
    return yaml_problem(e)


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.style is None \
                    and key_node.tag == "tag:yaml.org,2002:bool":
                # YAML 1.1 reads a plain `on`, `yes`, `off`... as a boolean; as a
                # key it is always meant as the word (policies say `on: message`).
                key_node.tag = "tag:yaml.org,2002:str"
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                raise yaml.constructor.ConstructorError(
                    None, None, f"a {kind} cannot be a key: keys are names (write the key "
                    f"in quotes if it is meant as one)", key_node.start_mark)
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is given twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value)} characters is too long to read: "
                f"use a smaller number", node.start_mark) from None


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", UniqueKeyLoader.construct_yaml_int)

