"""A validated fast path: the common subset of ECMAScript (non-unicode) patterns, translated
to Python's ``regex`` module so ``.test()`` needs no V8 round trip (~0.25 ms each).

Only what provably means the same in both engines is translated; anything else returns None
and the pattern runs on V8. The subset:

* literal characters, ``.`` (not ``\\n \\r \\u2028 \\u2029``), ``^``, ``$`` (end of input only),
  ``\\d \\D \\w \\W \\s \\S`` as the explicit ASCII / JS-whitespace sets, ``\\b \\B`` (ASCII, with
  ``regex.ASCII``), control escapes, ``\\xHH``, ``\\uHHHH``, escaped punctuation;
* classes of those, with ranges in order; ``\\S`` in a class only beside ``\\s`` (``[\\s\\S]``);
* groups ``( )`` ``(?: )``, lookaheads, alternation, ``* + ? {n,m}`` and their lazy forms.

Out: back-references, named groups, lookbehind, Annex-B leniencies (``a{1``, ``]``, ``\\e``),
anything invalid (V8 words the error), and **a quantifier on a group that itself holds a
quantifier or an alternation**: ``(a+)+$`` is catastrophic on V8, where it must be the point
error the vectors expect, while the ``regex`` module answers it at once.

Conditions on the call: the ``i`` flag only with an ASCII pattern (JS's non-unicode
case-insensitivity never maps a non-ASCII character onto an ASCII one, which is exactly
``regex.ASCII | regex.IGNORECASE``), and a text without astral characters or surrogates
(without ``u``, JS sees UTF-16 code units; Python, code points). ``TextMatcher`` checks both.

Without back-references, whether a match exists does not depend on how an engine backtracks,
so a boolean ``.test()`` is the same in both (``tests/scoring`` checks it against V8).
"""

from __future__ import annotations

import threading
from typing import Any

import regex

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import JS_WHITESPACE

_WS = "".join(f"\\u{ord(ch):04x}" for ch in JS_WHITESPACE)
_CLASS_ESCAPES_OUT = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[A-Za-z0-9_]",
    "W": "[^A-Za-z0-9_]",
    "s": f"[{_WS}]",
    "S": f"[^{_WS}]",
}
_CLASS_ESCAPES_IN = {"d": "0-9", "D": r"\D", "w": "A-Za-z0-9_", "W": r"\W", "s": _WS}
_CONTROL = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/-")
_HEX = frozenset("0123456789abcdefABCDEF")
# Annex B's identity escapes without ``u`` (any character but ``c``): only these are vouched
# for here, the others (letters, digits, ``_``, non-ASCII) are left to V8.
_IDENTITY_ESCAPES = frozenset(" !\"#%&',:;<=>@`~")
_QUANT = regex.compile(r"\{(\d{1,6})(,(\d{1,6})?)?\}")

_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], Any] = {}
_CACHE_MAX = 8192


class _Unsupported(WevalError):
    pass


def _char(ch: str) -> str:
    if "\ud800" <= ch <= "\udfff":
        raise _Unsupported
    return regex.escape(ch)


def _hex_escape(pattern: str, i: int, width: int) -> tuple[str, int]:
    digits = pattern[i : i + width]
    if len(digits) != width or not all(c in _HEX for c in digits):
        raise _Unsupported  # Annex B reads an incomplete \x4 as "x4": leave it to V8
    return chr(int(digits, 16)), i + width


def _escape(pattern: str, i: int, in_class: bool, syntax_only: bool = False) -> tuple[str, str, int]:
    """The escape at ``pattern[i]`` (just after the backslash) as (kind, value, next index):
    kind 'char' (value: the character), 'set' or 'assert' (value: Python regex text).
    ``syntax_only``: an identity escape of any ASCII character that is neither a letter nor a
    digit is taken too (``\\"``: valid without ``u``, though not translated)."""
    if i >= len(pattern):
        raise _Unsupported  # a trailing backslash: V8's error
    ch = pattern[i]
    sets = _CLASS_ESCAPES_IN if in_class else _CLASS_ESCAPES_OUT
    if ch in sets:
        return "set", sets[ch], i + 1
    if ch == "b" and in_class:
        return "char", "\x08", i + 1  # backspace inside a class
    if ch in "bB" and not in_class:
        return "assert", "\\" + ch, i + 1
    if ch in _CONTROL:
        return "char", _CONTROL[ch], i + 1
    if ch == "0" and not pattern[i + 1 : i + 2].isdigit():
        return "char", "\x00", i + 1
    if ch == "x":
        value, nxt = _hex_escape(pattern, i + 1, 2)
        return "char", value, nxt
    if ch == "u":
        value, nxt = _hex_escape(pattern, i + 1, 4)
        return "char", value, nxt
    if ch in _SYNTAX or (syntax_only and ch in _IDENTITY_ESCAPES):
        return "char", ch, i + 1
    raise _Unsupported  # back-references, \c, \k, \p, identity escapes of letters, \S in []


def _class(pattern: str, i: int, syntax_only: bool = False) -> tuple[str, int]:
    """Translate the class opening at ``pattern[i - 1]``; returns (text, index after ``]``)."""
    negated = pattern.startswith("^", i)
    if negated:
        i += 1
    if pattern.startswith("]", i):
        raise _Unsupported  # [] and [^]
    items: list[tuple[str, str]] = []  # (kind, value) as _escape returns them
    while True:
        if i >= len(pattern):
            raise _Unsupported  # unterminated: V8's error
        ch = pattern[i]
        if ch == "]":
            i += 1
            break
        if ch == "\\" and pattern.startswith("S", i + 1):
            items.append(("S", ""))  # only allowed beside \s, checked below
            i += 2
        elif ch == "\\":
            kind, value, i = _escape(pattern, i + 1, in_class=True, syntax_only=syntax_only)
            items.append((kind, value))
        else:
            items.append(("raw", ch))  # unescaped: only a raw "-" can make a range
            i += 1
    kinds = {kind for kind, _ in items}
    if "S" in kinds and not syntax_only:  # [\S] is valid: only its meaning is not Python's
        if ("set", _WS) not in items:
            raise _Unsupported  # [\S...] alone: Python's ASCII \S is not JS's
        # [\s\S...]: every character in both engines, whatever else the class holds.
        return ("[^\\s\\S]" if negated else "[\\s\\S]"), i
    out = ["[^" if negated else "["]
    j = 0
    while j < len(items):
        kind, value = items[j]
        if j + 2 < len(items) and items[j + 1] == ("raw", "-"):
            hi_kind, hi_value = items[j + 2]
            if kind not in ("raw", "char") or hi_kind not in ("raw", "char"):
                raise _Unsupported  # [\d-z]: Annex B makes the dash literal
            if ord(value) > ord(hi_value):
                raise _Unsupported  # out of order: V8's error
            out.append(f"{_char(value)}-{_char(hi_value)}")
            j += 3
            continue
        out.append(_char(value) if kind in ("raw", "char") else value)
        j += 1
    out.append("]")
    return "".join(out), i


def translate(pattern: str, flags: str) -> str | None:
    """The Python ``regex`` source for a JS pattern in the subset, else None."""
    if flags not in ("", "i") or (flags == "i" and not pattern.isascii()):
        return None
    try:
        source = _translate(pattern)
    except _Unsupported:
        return None
    if flags == "i" and not source.isascii():
        return None  # an escape such as \u00e9 decoded to a non-ASCII character
    return source


def known_valid(pattern: str) -> bool:
    """True when ``new RegExp(pattern, flags)`` cannot throw for ``flags`` "" or "i" (Node 20
    alike): the pattern is in the subset's grammar, which V8 accepts, read without the limits
    that only keep the translation's meaning exact (quantified groups that hold a quantifier,
    ``[\\S]``, identity escapes of punctuation, non-ASCII characters under ``i``). False says
    nothing: V8 decides. The collection-time check of a blueprint's patterns
    (``regex_js.check_pattern_syntax``) then starts no V8 for them."""
    try:
        _translate(pattern, syntax_only=True)
    except _Unsupported:
        return False
    return True


def _translate(pattern: str, syntax_only: bool = False) -> str:
    out: list[str] = []
    # One entry per open group: [start index in out, complex?, lookahead?]
    groups: list[list[Any]] = []
    last = "none"  # what a quantifier would apply to: none|atom|simple-group|complex-group|assert
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch in "*+?{":
            if ch == "{":
                m = _QUANT.match(pattern, i)
                if m is None:
                    raise _Unsupported  # a literal brace (Annex B)
                low, high = int(m.group(1)), m.group(3)
                if high is not None and int(high) < low:
                    raise _Unsupported
                token, i = m.group(0), m.end()
            else:
                token, i = ch, i + 1
            if last not in ("atom", "simple-group") and not (syntax_only and last == "complex-group"):
                raise _Unsupported  # nothing to repeat, a quantified assertion, or nesting
            if i < n and pattern[i] == "?":
                token += "?"
                i += 1
            out.append(token)
            if groups:
                groups[-1][1] = True
            last = "quantified"
            continue
        if ch == "\\":
            kind, value, i = _escape(pattern, i + 1, in_class=False, syntax_only=syntax_only)
            out.append(_char(value) if kind == "char" else value)
            last = "assert" if kind == "assert" else "atom"
            continue
        if ch == "[":
            text, i = _class(pattern, i + 1, syntax_only)
            out.append(text)
            last = "atom"
            continue
        if ch == "(":
            if pattern.startswith("(?:", i):
                out.append("(?:")
                groups.append([len(out), False, False])
                i += 3
            elif pattern.startswith("(?=", i) or pattern.startswith("(?!", i):
                out.append(pattern[i : i + 3])
                groups.append([len(out), False, True])
                i += 3
            elif pattern.startswith("(?", i):
                raise _Unsupported  # lookbehind, named groups, modifiers, invalid groups
            else:
                out.append("(")
                groups.append([len(out), False, False])
                i += 1
            last = "none"
            continue
        if ch == ")":
            if not groups:
                raise _Unsupported
            _, is_complex, is_lookahead = groups.pop()
            out.append(")")
            if groups and is_complex:
                groups[-1][1] = True
            last = "assert" if is_lookahead else ("complex-group" if is_complex else "simple-group")
            i += 1
            continue
        if ch == "|":
            out.append("|")
            if groups:
                groups[-1][1] = True
            last = "none"
            i += 1
            continue
        if ch in "^$":
            out.append("^" if ch == "^" else r"\Z")
            last = "assert"
            i += 1
            continue
        if ch == ".":
            out.append(r"[^\n\r\u2028\u2029]")
            last = "atom"
            i += 1
            continue
        if ch in "]}":
            raise _Unsupported  # literal in Annex B; rare enough for V8
        out.append(_char(ch))
        last = "atom"
        i += 1
    if groups:
        raise _Unsupported  # unterminated group: V8's error
    return "".join(out)


def compiled(pattern: str, flags: str) -> Any | None:
    """The compiled translation (cached), or None when the pattern is outside the subset."""
    key = (pattern, flags)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    source = translate(pattern, flags)
    result = None
    if source is not None:
        # VERSION0 pinned: a process-wide regex.DEFAULT_VERSION = VERSION1 would otherwise
        # turn on set operations in classes and full case folding.
        options = regex.VERSION0 | regex.ASCII | (regex.IGNORECASE if flags == "i" else 0)
        try:
            result = regex.compile(source, options)
        except regex.error:
            result = None  # our translation should always compile; V8 decides otherwise
    with _cache_lock:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()
        _cache[key] = result
    return result
