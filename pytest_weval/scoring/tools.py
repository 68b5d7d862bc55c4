"""Tool-trace point functions (docs/functions.md, 'Tool-trace functions').

The trace is ``PointContext.tool_calls`` when that is a list, else the ``TOOL_CALL {json}``
lines of the subject text (the only source in the reference's pipeline).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pytest_weval.jsvalues import is_number, js_key_order, js_string, js_trim, strict_equal, strip_ws, truthy
from pytest_weval.scoring import jsbox
from pytest_weval.scoring.types import FnError, PointFunctionThrew, RawResult

_MARKER = "TOOL_CALL "
_LINES = re.compile(r"\r?\n")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse rejects NaN / Infinity


def parse_strict_json(text: str) -> Any:
    """``JSON.parse``: Python's json minus its NaN/Infinity extension."""
    return json.loads(text, parse_constant=_reject_constant)


def trace_from_text(text: str) -> list[dict[str, Any]]:
    """``extractToolCallsFromText``: one call per ``TOOL_CALL {...}`` line with a string name."""
    if not text:
        return []
    calls: list[dict[str, Any]] = []
    for raw in _LINES.split(text):
        line = js_trim(raw)
        if not line.startswith(_MARKER):
            continue
        try:
            parsed = parse_strict_json(js_trim(line[len(_MARKER) :]))
        except (ValueError, RecursionError):
            continue  # malformed lines are skipped
        if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
            calls.append({"name": parsed["name"], "arguments": parsed.get("arguments")})
    return calls


def _name_of(call: Any) -> Any:
    return call.get("name") if isinstance(call, dict) else None


def tool_called(args: Any, calls: list[Any]) -> RawResult:
    if not isinstance(args, str) or not args:
        return FnError("tool_called expects a string tool name")
    return any(strict_equal(_name_of(c), args) for c in calls)


def tool_call_count_between(args: Any, calls: list[Any]) -> RawResult:
    arr = args if isinstance(args, list) else []
    low = arr[0] if len(arr) > 0 and is_number(arr[0]) else 0
    high = arr[1] if len(arr) > 1 and is_number(arr[1]) else math.inf
    name = arr[2] if len(arr) > 2 and isinstance(arr[2], str) else None
    count = sum(1 for c in calls if not name or _name_of(c) == name)
    return low <= count <= high


def tool_call_order(args: Any, calls: list[Any]) -> RawResult:
    expected = [x for x in args if isinstance(x, str)] if isinstance(args, list) else []
    if not expected:
        return FnError("tool_call_order expects an array of tool names")
    idx = 0
    for call in calls:
        if _name_of(call) == expected[idx]:
            idx += 1
            if idx == len(expected):
                return True
    return False


# -- tool_args_match -------------------------------------------------------------------------

# Properties every plain object / array inherits in JS, so `key in obj` is true for them.
_OBJECT_PROTO = frozenset(
    [
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
        "__proto__",
        "__defineGetter__",
        "__defineSetter__",
        "__lookupGetter__",
        "__lookupSetter__",
    ]
)
_ARRAY_PROTO = frozenset(
    [
        "length",
        "at",
        "concat",
        "copyWithin",
        "entries",
        "every",
        "fill",
        "filter",
        "find",
        "findIndex",
        "findLast",
        "findLastIndex",
        "flat",
        "flatMap",
        "forEach",
        "includes",
        "indexOf",
        "join",
        "keys",
        "lastIndexOf",
        "map",
        "pop",
        "push",
        "reduce",
        "reduceRight",
        "reverse",
        "shift",
        "slice",
        "some",
        "sort",
        "splice",
        "toLocaleString",
        "toReversed",
        "toSorted",
        "toSpliced",
        "toString",
        "unshift",
        "values",
        "with",
    ]
)


class _Inherited:
    """An inherited JS property (a method): an object with nothing comparable in it."""


_INHERITED = _Inherited()


def _js_in(key: str, obj: Any) -> bool:
    """``key in obj``; on a primitive JS throws, and so does this."""
    if isinstance(obj, dict):
        return key in obj or key in _OBJECT_PROTO
    if isinstance(obj, list):
        return (key.isdigit() and int(key) < len(obj)) or key in _ARRAY_PROTO or key in _OBJECT_PROTO
    if isinstance(obj, _Inherited):
        return False
    shown = "null" if obj is None else js_string(obj)
    raise PointFunctionThrew(f"Cannot use 'in' operator to search for '{key}' in {shown}")


def _js_get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict) and key in obj:
        return obj[key]
    if isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
        return obj[int(key)]
    if isinstance(obj, list) and key == "length":
        return len(obj)
    return _INHERITED


def _keys(partial: dict[str, Any] | list[Any]) -> list[str]:
    return js_key_order(partial) if isinstance(partial, dict) else [str(i) for i in range(len(partial))]


def _matches_partial(obj: Any, partial: Any, normalize_ws: bool) -> bool:
    if not isinstance(partial, (dict, list)):
        return False
    for key in _keys(partial):
        if not _js_in(key, obj):
            return False
        pv = partial[key] if isinstance(partial, dict) else partial[int(key)]
        ov = _js_get(obj, key)
        if isinstance(pv, (dict, list)):
            if not _matches_partial(ov, pv, normalize_ws):
                return False
        elif isinstance(pv, str) and isinstance(ov, str):
            if (strip_ws(ov) if normalize_ws else ov) != (strip_ws(pv) if normalize_ws else pv):
                return False
        elif not strict_equal(ov, pv):
            return False
    return True


def tool_args_match(args: Any, calls: list[Any]) -> RawResult:
    spec = args if isinstance(args, (dict, list)) else {}
    name = spec.get("name") if isinstance(spec, dict) else None
    if not truthy(name):
        return FnError("tool_args_match expects { name, where }")
    where = spec.get("where") if isinstance(spec, dict) else None
    normalize_ws = truthy(spec.get("normalizeWhitespace")) if isinstance(spec, dict) else False
    candidates = [
        c.get("arguments")
        for c in calls
        if strict_equal(_name_of(c), name) and isinstance(c, dict) and c.get("arguments") is not None
    ]
    if isinstance(where, str):
        # The reference evaluates this with `new Function` in its own process, unsandboxed and
        # unbounded; here it runs in the $js sandbox (a fix listed in docs/compatibility.md).
        return jsbox.where_matches(where, candidates)
    if isinstance(where, (dict, list)):
        return any(_matches_partial(c, where, normalize_ws) for c in candidates)
    return False
