"""JavaScript value semantics, for plain Python data: the one module every layer uses.

The reference runs on Node, so the blueprint parser, the point functions, the judge-reply parser
and the reports test and print values the JavaScript way: ``typeof``, truthiness (``||``,
``??``, ``if (x)``), ``String()``, ``JSON.stringify`` (and json-stable-stringify for hashes),
``Number.prototype.toString``/``toFixed``, ``===``, property order of objects, the ``\\s``
whitespace set, ``trim()`` and ``String.prototype.replace`` substitution patterns. Blueprint data
arrives as plain Python values (dict, list, str, int, float, bool, None, date); a key missing
from a dict plays JS ``undefined``, and ``ABSENT`` stands for it where a value must be passed.

Pure, and at the bottom of the import graph: it imports nothing from the package.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from json.encoder import encode_basestring  # the C escaper when available; ensure_ascii=False
from typing import Any, TypeGuard

__all__ = [
    "ABSENT",
    "JS_WHITESPACE",
    "clamp01",
    "count_words",
    "is_number",
    "js_json",
    "js_key_order",
    "js_min",
    "js_nullish",
    "js_number_str",
    "js_or",
    "js_property_key",
    "js_string",
    "js_trim",
    "js_typeof",
    "replace_all_literal",
    "stable_stringify",
    "strict_equal",
    "strip_ws",
    "to_fixed",
    "truthy",
    "utf16_slice",
]


class _Absent:
    """JS `undefined`: a key that is not there."""

    _instance: _Absent | None = None

    def __new__(cls) -> _Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Any = _Absent()

# ECMAScript WhiteSpace + LineTerminator (what `\s` and `trim()` use): Unicode Zs, the ASCII
# controls \t\n\v\f\r, U+2028/U+2029 and U+FEFF. Python's str.split()/strip() also treat
# U+001C-U+001F and U+0085 as whitespace and miss U+FEFF, so they cannot be used.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``String.prototype.trim()``."""
    return text.strip(JS_WHITESPACE)


def is_number(value: Any) -> TypeGuard[int | float]:
    """``typeof value === 'number'`` (bool is its own JS type)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def truthy(value: Any) -> bool:
    """JS ToBoolean: undefined, null, false, 0, NaN and '' are false; every object is true."""
    if value is None or value is False or value is ABSENT:
        return False
    if value is True:
        return True
    if isinstance(value, str):
        return value != ""
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True  # lists and dicts, even empty ones, are objects


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
    if callable(value):
        return "function"
    return "object"  # null, arrays, objects, dates


def js_number_str(value: float | int) -> str:
    """Number.prototype.toString(): `1` not `1.0`, `1e+21`, `1e-7`, `0.000001`.

    Python's repr and JS both print the shortest digits that round-trip; only the layout
    (where the exponent starts, how it is written) differs.
    """
    if type(value) is float and 1e-4 <= abs(value) < 1e16:
        # Where Python's repr writes digits without an exponent, JS writes the same ones (both
        # the shortest that round-trip), but for repr's ".0" on a whole number: every score and
        # threshold of a run's reports takes this path.
        text = float.__repr__(value)
        return text[:-2] if text.endswith(".0") else text
    return _number_layout(value)


def _number_layout(value: float | int) -> str:
    """``js_number_str`` for any number: the digits of repr laid out as ECMA-262 says."""
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
    index_keys = [
        k for k in obj if isinstance(k, str) and k[:1].isdigit() and _ARRAY_INDEX.fullmatch(k) and int(k) < 2**32 - 1
    ]
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
    # TypeError (what the encoder itself raises for a value it cannot write) tells _fast_json
    # to take the slow path; this module imports nothing, so no WevalError of its own here.
    if isinstance(value, datetime.date):
        return _date_json(value)
    raise TypeError


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
    except (TypeError, ValueError):
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


_NON_WS_RUN = re.compile("[^" + re.escape(JS_WHITESPACE) + "]+")
_WS_RUN = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


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


@functools.lru_cache(maxsize=4096)
def to_fixed(value: float, digits: int = 2) -> str:
    """``Number.prototype.toFixed(digits)``: the exact binary value rounded half away from zero
    (0.125 -> "0.13", while 0.425, stored as 0.42499..., gives "0.42").

    Cached: a run's scores and averages take few values, and each was two ``Decimal``
    operations an item (0 and -0.0, equal keys, give the same text; NaN is never found)."""
    if math.isnan(value):
        return "NaN"
    if abs(value) >= 1e21 or math.isinf(value):
        return js_number_str(value)
    if value == 0:
        value = 0.0  # (-0).toFixed(2) is "0.00"; (-0.001).toFixed(2) stays "-0.00"
    quantum = Decimal(1).scaleb(-digits)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


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
