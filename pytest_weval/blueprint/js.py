"""JavaScript value semantics the reference relies on, for plain Python data.

The reference parser is TypeScript: it tests values with `||`, `??` and `typeof`, prints them
with `String()` and `JSON.stringify`, and hashes JSON text. Blueprint data arrives here as
plain Python values (dict, list, str, int, float, bool, None, date), and a key missing from a
dict plays JS `undefined` (`pytest_weval.jsvalues.ABSENT`, with `truthy`, `is_number` and
`js_trim`).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from decimal import Decimal
from json.encoder import encode_basestring  # the C escaper when available; ensure_ascii=False
from typing import Any

from pytest_weval.jsvalues import ABSENT, truthy

__all__ = [
    "js_json",
    "js_key_order",
    "js_nullish",
    "js_number_str",
    "js_or",
    "js_property_key",
    "js_string",
    "js_typeof",
    "stable_stringify",
]


def js_or(*values: Any) -> Any:
    """`a || b || c`: the first truthy operand, else the last one."""
    for value in values:
        if truthy(value):
            return value
    return values[-1]


def js_nullish(*values: Any) -> Any:
    """`a ?? b ?? c`: the first operand that is neither undefined nor null, else the last."""
    for value in values:
        if value is not None and value is not ABSENT:
            return value
    return values[-1]


def js_typeof(value: Any) -> str:
    if value is ABSENT:
        return "undefined"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"  # null, arrays, objects, dates


def js_number_str(value: float | int) -> str:
    """Number.prototype.toString(): `1` not `1.0`, `1e+21`, `1e-7`, `0.000001`.

    Python's repr and JS both print the shortest digits that round-trip; only the layout
    (where the exponent starts, how it is written) differs.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if -(2**53) < value < 2**53:
            return str(value)
        value = float(value)  # JS holds every number as a double
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # also -0
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    # Position of the decimal point relative to the digit string (ECMA-262 Number::toString n).
    n = len(digit_tuple) + int(exponent)
    k = len(digits)
    prefix = "-" if sign else ""
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return prefix + body


def _date_json(value: datetime.date) -> str:
    """Date.prototype.toJSON(): UTC, milliseconds, `Z`."""
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.timezone.utc)
    elif value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def js_string(value: Any) -> str:
    """String(value), as template literals print values in the reference's messages."""
    if value is ABSENT:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return js_number_str(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or v is ABSENT else js_string(v) for v in value)
    if isinstance(value, datetime.date):
        return _date_json(value)
    return "[object Object]"


def js_property_key(key: Any) -> str:
    """The property name a YAML key becomes in a JS object (keys are always strings there)."""
    return key if isinstance(key, str) else js_string(key)


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


def js_key_order(obj: dict) -> list:
    """Own-property order of a JS object: array-index keys ascending, then insertion order."""
    index_keys = [k for k in obj if k[:1].isdigit() and _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1]
    if not index_keys:
        return list(obj)
    index_keys.sort(key=int)
    first = set(index_keys)
    return index_keys + [k for k in obj if k not in first]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_str(text: str) -> str:
    out = encode_basestring(text)
    if _LONE_SURROGATE.search(out):  # well-formed JSON.stringify escapes lone surrogates
        out = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out


def _utf16_key(text: str) -> bytes:
    """Sort key equal to JS default string order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _serialize(value: Any, sort_keys: bool, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_json_str(value))
    elif isinstance(value, (int, float)):
        out.append(js_number_str(value) if value == value and value not in (math.inf, -math.inf) else "null")
    elif isinstance(value, dict):
        keys = sorted(value, key=_utf16_key) if sort_keys else js_key_order(value)
        out.append("{")
        first = True
        for key in keys:
            item = value[key]
            if item is ABSENT:
                continue
            if not first:
                out.append(",")
            first = False
            out.append(_json_str(key))
            out.append(":")
            _serialize(item, sort_keys, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _serialize(None if item is ABSENT else item, sort_keys, out)
        out.append("]")
    elif isinstance(value, datetime.date):
        out.append(_json_str(_date_json(value)))
    elif isinstance(value, (set, frozenset)):
        _serialize({js_property_key(k): None for k in value}, sort_keys, out)
    elif isinstance(value, (bytes, bytearray)):
        _serialize({str(i): b for i, b in enumerate(value)}, sort_keys, out)  # a Uint8Array
    else:
        out.append(_json_str(str(value)))


def _json_default(value: Any) -> Any:
    if value is ABSENT:
        raise _NeedsSlowPath
    if isinstance(value, datetime.date):
        return _date_json(value)
    raise _NeedsSlowPath


class _NeedsSlowPath(Exception):
    pass


_encode_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_json_default).encode
_encode_sorted = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=_json_default, sort_keys=True
).encode
# Output of the C encoder that is not JS's: float layout (1.0, 1e-05, NaN, Infinity), ints past
# 2^53, array-index keys (JS lists them first), lone surrogates, and (sorted) keys whose UTF-16
# order differs from code-point order.
# Either a run of strings and punctuation (kept as is), or one number or NaN/Infinity token.
_TOKEN = re.compile(r'((?:"[^"\\]*(?:\\.[^"\\]*)*"|[^"0-9NI-])+)|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|NaN|-?Infinity')
_INDEX_KEY = re.compile(r'[{,]"(?:0|[1-9]\d*)":')
_ASTRAL_OR_HIGH = re.compile("[\ue000-\U0010ffff]")


def _js_token(match: re.Match[str]) -> str:
    token = match.group()
    if match.group(1) is not None:
        return token
    if token in ("NaN", "Infinity", "-Infinity"):
        return "null"
    if "." not in token and "e" not in token and len(token) < 16:
        return token
    return js_number_str(int(token) if token.lstrip("-").isdigit() else float(token))


def _fast_json(value: Any, sort_keys: bool) -> str | None:
    """The C encoder's text fixed up to JSON.stringify's, or None where that is not safe."""
    try:
        text = (_encode_sorted if sort_keys else _encode_compact)(value)
    except (_NeedsSlowPath, TypeError, ValueError):
        return None
    if _INDEX_KEY.search(text):
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, which JSON.stringify escapes
        return None
    if sort_keys and _ASTRAL_OR_HIGH.search(text):
        return None
    return _TOKEN.sub(_js_token, text)


def js_json(value: Any) -> str:
    """JSON.stringify(value): compact, insertion order, JS numbers; `undefined` for ABSENT."""
    if value is ABSENT:
        return "undefined"
    fast = _fast_json(value, False)
    if fast is not None:
        return fast
    out: list[str] = []
    _serialize(value, False, out)
    return "".join(out)


def stable_stringify(value: Any) -> str:
    """json-stable-stringify: JSON.stringify with the keys of every object sorted."""
    fast = _fast_json(value, True)
    if fast is not None:
        return fast
    out: list[str] = []
    _serialize(value, True, out)
    return "".join(out)
