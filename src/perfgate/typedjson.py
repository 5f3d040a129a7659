"""JSON read back against the types perfgate declares for it: one checker for every file a
door reads (results.json records, steps.json, bisect.json, the history's rows).

A value is checked against a type annotation: str, int (never a bool), float (an int is one;
finite unless asked otherwise), bool, None, X | None, Literal[...], list[X], tuple[X, ...],
dict[str, X], a TypedDict (its required keys present, each known key checked; keys it does
not declare are left alone: readers never look at them), a dataclass (as the TypedDict of its
fields), Any, and Annotated[X, rule] where rule(value) says what is wrong or None. The first
mismatch is one line naming the field's path ("runs[2].steps[0][1]"), what was expected and
the value (cut). Nesting is bounded (MAX_DEPTH) before anything walks it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from perfgate.charset import one_line

MAX_DEPTH = 64  # results.json nests about 8 deep; JSON 100,000 deep is an attack, not data
Rule = Callable[[Any], "str | None"]


class Mismatch(ValueError):
    """A value that is not of its declared type: where, what was expected, what was found."""

    def __init__(self, path: str, expected: str, value: Any) -> None:
        self.path, self.expected, self.value = path, expected, value
        where = f"field {path!r}: " if path else ""
        super().__init__(f"{where}expected {expected}, not {shown(value)}")


def shown(value: Any, limit: int = 60) -> str:
    """A value for an error line: its JSON-ish repr, one line, cut to about limit chars."""
    if isinstance(value, dict):
        text = "an object" if value else "{}"
    elif isinstance(value, list):
        text = f"a list of {len(value)}" if value else "[]"
    else:
        text = repr(value)
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def depth(value: Any) -> int:
    """How deep a JSON value nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, d + 1)
            if d + 1 > MAX_DEPTH:
                return d + 1
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return deepest


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Mismatch when value nests deeper than limit."""
    d = depth(value)
    if d > limit:
        raise Mismatch("", f"at most {limit} levels of nesting", f"<{d} or more levels>")


# JSON's scalars by the Python type that declares them (a bool is never a number here)
_SCALARS: dict[Any, Callable[[Any], bool]] = {
    type(None): lambda v: v is None,
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
}


def _hints(tp: Any) -> dict[str, Any]:
    return typing.get_type_hints(tp, include_extras=True)


def _name(tp: Any) -> str:
    """The type in words, for the error line."""
    origin = typing.get_origin(tp)
    if tp is type(None):
        return "null"
    if tp in (int, float, str, bool):
        return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}[tp]
    if origin is typing.Annotated:
        return _name(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list, tuple, Sequence):
        return "a list"
    if origin in (dict, Mapping) or typing.is_typeddict(tp) or dataclasses.is_dataclass(tp):
        return "an object"
    return "a value"


def check(value: Any, tp: Any, path: str = "", finite: bool = True) -> None:
    """Mismatch unless value fits tp (see the module doc); finite=False lets floats be NaN or
    infinite (steps.json records a NaN step as a finding)."""
    if tp is Any:
        return
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *rules = typing.get_args(tp)
        check(value, base, path, finite)
        for rule in rules:
            why = rule(value) if callable(rule) else None
            if why:
                raise Mismatch(path, why, value)
        return
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                check(value, a, path, finite)
                return
            except Mismatch as e:
                errors.append(e)
        # one alternative of the right kind says best what is wrong inside it
        inner = [e for e in errors if e.path != path]
        if len(inner) == 1:
            raise inner[0]
        raise Mismatch(path, _name(tp), value)
    tp = type(None) if tp is None else tp
    if tp in _SCALARS:
        if not _SCALARS[tp](value):
            raise Mismatch(path, _name(tp), value)
        if tp is float and finite and not math.isfinite(value):
            raise Mismatch(path, "a finite number", value)
        return
    if origin is Literal:
        if value not in typing.get_args(tp) or isinstance(value, bool):
            raise Mismatch(path, _name(tp), value)
        return
    if origin in (list, Sequence, tuple):
        if not isinstance(value, list):
            raise Mismatch(path, _name(tp), value)
        args = typing.get_args(tp)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise Mismatch(path, f"a list of {len(args)}", value)
            for i, (item, a) in enumerate(zip(value, args, strict=True)):
                check(item, a, f"{path}[{i}]", finite)
            return
        item_tp = args[0] if args else Any
        if item_tp is not Any:
            for i, item in enumerate(value):
                check(item, item_tp, f"{path}[{i}]", finite)
        return
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise Mismatch(path, _name(tp), value)
        args = typing.get_args(tp)
        value_tp = args[1] if len(args) == 2 else Any
        for k, item in value.items():
            if not isinstance(k, str):
                raise Mismatch(path, "an object with string keys", value)
            if value_tp is not Any:
                check(item, value_tp, _join(path, k), finite)
        return
    if typing.is_typeddict(tp):
        _check_fields(value, _hints(tp), tp.__required_keys__, path, finite)
        return
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        required = {
            f.name
            for f in dataclasses.fields(tp)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        _check_fields(value, {f.name: hints[f.name] for f in dataclasses.fields(tp)}, required,
                      path, finite)  # fmt: skip
        return
    raise TypeError(f"typedjson cannot check {tp!r}")  # a declaration perfgate got wrong


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_fields(
    value: Any, hints: Mapping[str, Any], required: Any, path: str, finite: bool
) -> None:
    if not isinstance(value, dict):
        raise Mismatch(path, "an object", value)
    for key in sorted(required):
        if key not in value:
            raise Mismatch(_join(path, key), "a value (the field is required)", "<missing>")
    for key, tp in hints.items():
        if key in value:
            check(value[key], tp, _join(path, key), finite)


# --- rules for Annotated ------------------------------------------------------------------


def positive(value: Any) -> str | None:
    """A number above 0."""
    return None if value is None or value > 0 else "a number above 0"


def non_negative(value: Any) -> str | None:
    """A number of at least 0."""
    return None if value is None or value >= 0 else "a number of at least 0"


def fraction(value: Any) -> str | None:
    """A number in (0, 1)."""
    return None if value is None or 0 < value < 1 else "a fraction in (0, 1)"


def at_most(bound: float) -> Rule:
    """A number of at most bound."""
    return lambda v: None if v is None or abs(v) <= bound else f"a number of at most {bound:g}"
