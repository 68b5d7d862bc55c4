"""The JavaScript value rules every layer shares, for plain Python data.

The reference runs on Node, so the blueprint parser, the point functions and the judge-reply
parser all test values the JavaScript way: ``typeof value === 'number'``, truthiness (``||``,
``if (x)``) and ``String.prototype.trim()``. A key missing from a dict plays JS ``undefined``;
``ABSENT`` stands for it where a value must be passed around.

Pure: imports nothing from the package. The rest of the JS semantics lives with its one user:
``blueprint/js.py`` (``String()``, ``JSON.stringify``, ``||`` and ``??`` for the parser) and
``scoring/jsvalues.py`` (``toFixed``, ``===``, ``\\s``, ``replace`` for the point functions).
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

__all__ = ["ABSENT", "JS_WHITESPACE", "is_number", "js_trim", "truthy"]


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
