"""JavaScript value semantics the point functions depend on, in plain Python.

The reference runs on Node, so scores, messages and cache keys follow JS rules where Python's
differ: number formatting, ``toFixed``, ``Math.min``/``Math.max`` with NaN, ``typeof``, strict
equality, property order of objects, the ``\\s`` whitespace set and ``String.prototype.replace``
substitution patterns. ``typeof x === 'number'``, truthiness and ``trim()``, which the parser and
the judges share, are in ``pytest_weval.jsvalues``.
"""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pytest_weval.blueprint.js import js_number_str
from pytest_weval.jsvalues import JS_WHITESPACE, is_number

_NON_WS_RUN = re.compile("[^" + re.escape(JS_WHITESPACE) + "]+")
_WS_RUN = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


def typeof(value: Any) -> str:
    """JS ``typeof`` of a JSON-shaped Python value (None is JS null: 'object')."""
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if callable(value):
        return "function"
    return "object"


def strict_equal(a: Any, b: Any) -> bool:
    """JS ``===`` on JSON-shaped values: types must agree (so ``1 !== '1'`` and ``1 !== true``),
    numbers compare by value (NaN never equal), objects by identity."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if is_number(a) and is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    return a is b


def clamp01(value: float) -> float:
    """``Math.max(0, Math.min(1, v))``: NaN stays NaN (Python's min/max would drop it)."""
    if math.isnan(value):
        return math.nan
    return 0.0 if value < 0 else 1.0 if value > 1 else float(value)


def js_min(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a <= b else b


# ``Number.prototype.toString()`` lives with the parser, which needs it for ids and hashes.
number_to_string = js_number_str


def to_fixed(value: float, digits: int = 2) -> str:
    """``Number.prototype.toFixed(digits)``: the exact binary value rounded half away from zero
    (0.125 -> "0.13", while 0.425, stored as 0.42499..., gives "0.42")."""
    if math.isnan(value):
        return "NaN"
    if abs(value) >= 1e21 or math.isinf(value):
        return number_to_string(value)
    if value == 0:
        value = 0.0  # (-0).toFixed(2) is "0.00"; (-0.001).toFixed(2) stays "-0.00"
    quantum = Decimal(1).scaleb(-digits)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


def to_js_string(value: Any) -> str:
    """``String(value)`` / template-literal conversion of a JSON-shaped value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return number_to_string(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if v is None else to_js_string(v) for v in value)
    return "[object Object]"


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def own_keys(obj: dict[str, Any]) -> list[str]:
    """``Object.keys`` order: integer-like keys ascending first, then the rest as inserted."""
    keys = list(obj.keys())
    index_keys = [k for k in keys if isinstance(k, str) and _is_array_index(k)]
    if not index_keys:
        return keys
    rest = [k for k in keys if not (isinstance(k, str) and _is_array_index(k))]
    return sorted(index_keys, key=int) + rest


def json_stringify(value: Any) -> str:
    """``JSON.stringify`` of a JSON-shaped value: compact, JS key order and JS numbers (used for
    request bodies and cache keys, which must match the reference byte for byte)."""
    parts: list[str] = []
    _stringify_into(value, parts)
    return "".join(parts)


def _stringify_into(value: Any, out: list[str]) -> None:
    if value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif is_number(value):
        out.append("null" if isinstance(value, float) and not math.isfinite(value) else number_to_string(value))
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _stringify_into(item, out)
        out.append("]")
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key in own_keys(value):
            if not first:
                out.append(",")
            first = False
            out.append(_quote(str(key)))
            out.append(":")
            _stringify_into(value[key], out)
        out.append("}")
    else:
        out.append(_quote(str(value)))


def _quote(text: str) -> str:
    # json.dumps(ensure_ascii=False) escapes exactly what JSON.stringify escapes (", \\, controls
    # as \b\f\n\r\t or \u00xx); lone surrogates it would pass through, JS writes \udxxx.
    quoted = json.dumps(text, ensure_ascii=False)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        quoted = "".join(f"\\u{ord(ch):04x}" if "\ud800" <= ch <= "\udfff" else ch for ch in quoted)
    return quoted


def count_words(text: str) -> int:
    """``(text.match(/\\S+/g) || []).length`` with the JS whitespace set."""
    return sum(1 for _ in _NON_WS_RUN.finditer(text))


def strip_ws(text: str) -> str:
    """``text.replace(/\\s+/g, '')``."""
    return _WS_RUN.sub("", text)


def replace_all_literal(subject: str, needle: str, replacement: str) -> str:
    """``subject.replace(/<needle>/g, replacement)`` with JS GetSubstitution patterns in
    ``replacement``: ``$$``, ``$&``, ``$```, ``$'`` (a model response containing ``$&`` is not
    copied literally by the reference, so neither is it here)."""
    if needle not in subject:
        return subject
    special = "$" in replacement
    pieces: list[str] = []
    pos = 0
    while True:
        at = subject.find(needle, pos)
        if at < 0:
            break
        pieces.append(subject[pos:at])
        if special:
            pieces.append(_substitute(replacement, subject, at, at + len(needle)))
        else:
            pieces.append(replacement)
        pos = at + len(needle)
        if not needle:  # an empty needle matches between every character
            if pos >= len(subject):
                break
            pieces.append(subject[pos])
            pos += 1
    pieces.append(subject[pos:])
    return "".join(pieces)


def _substitute(replacement: str, subject: str, start: int, end: int) -> str:
    out: list[str] = []
    i = 0
    n = len(replacement)
    while i < n:
        ch = replacement[i]
        if ch == "$" and i + 1 < n:
            nxt = replacement[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "&":
                out.append(subject[start:end])
                i += 2
                continue
            if nxt == "`":
                out.append(subject[:start])
                i += 2
                continue
            if nxt == "'":
                out.append(subject[end:])
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def utf16_slice(text: str, stop: int) -> str:
    """``text.slice(0, stop)`` counting UTF-16 code units, as JS does."""
    if len(text) <= stop // 2:
        return text
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * stop:
        return text
    return units[: 2 * stop].decode("utf-16-le", "surrogatepass")
