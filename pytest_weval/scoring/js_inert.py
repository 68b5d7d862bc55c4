"""Which ``$js`` scripts cannot change the sandbox's built-ins, read from their source.

The sandbox (``jsbox.py``) compares every built-in with its start-up record before a script
runs, so that one script cannot poison the next; the comparison walks thousands of property
descriptors, ~0.5 ms, more than the run of a one-line script. It is only needed after a script
that could have changed something: a script judged inert here leaves the built-ins as it found
them, so the script after it skips the comparison (one after any other script still makes it).

The judgement is a whitelist, conservative by construction: a script is inert when its tokens
(read as JavaScript reads them, longest punctuator first) are only

* string literals, and template literals without ``${``;
* number literals;
* the punctuators below, which assign nothing (no ``=``, ``+=``, ``++``, ``--``, ``delete``)
  and define no function (no ``=>``) and reach no property by a computed name (no ``[``), and
  a ``/`` that can only be a division;
* the names in ``NAMES``, whatever their position: globals whose every reachable member in
  ``NAMES`` is a function that changes no object it is given (so it can safely be passed as a
  callback too), the fields of ``context``, a result's ``score`` and ``explain``, and keywords
  that only read.

Without an assignment, a function of its own or a computed member, such a script can only call
built-ins from that list on strings, numbers, fresh objects and ``context``; none of them
writes to an object that existed before the script. Anything else (a ``/`` that could start a
comment or a regular expression, a backslash, a character outside ASCII outside a string, an
unterminated string) makes the script not inert, which only costs the comparison.
"""

from __future__ import annotations

import functools
import re

NAMES = frozenset(
    {
        # the script's inputs and what it may read from them
        "r",
        "response",
        "context",
        "messages",
        "modelId",
        "role",
        "content",
        # a result object's fields
        "score",
        "explain",
        # keywords and constants that only read
        "true",
        "false",
        "null",
        "undefined",
        "NaN",
        "Infinity",
        "typeof",
        "in",
        "return",
        # global functions and namespaces
        "Math",
        "JSON",
        "Number",
        "String",
        "Boolean",
        "parseInt",
        "parseFloat",
        "isNaN",
        "isFinite",
        # String.prototype, and Array.prototype's that read only
        "length",
        "includes",
        "indexOf",
        "lastIndexOf",
        "startsWith",
        "endsWith",
        "toLowerCase",
        "toUpperCase",
        "trim",
        "trimStart",
        "trimEnd",
        "split",
        "slice",
        "substring",
        "charAt",
        "charCodeAt",
        "at",
        "match",
        "search",
        "replace",
        "replaceAll",
        "padStart",
        "padEnd",
        "repeat",
        "concat",
        "localeCompare",
        "normalize",
        "join",
        # Math, JSON and Number
        "min",
        "max",
        "abs",
        "round",
        "floor",
        "ceil",
        "pow",
        "sqrt",
        "sign",
        "trunc",
        "log",
        "exp",
        "PI",
        "parse",
        "stringify",
        "isInteger",
        "toFixed",
    }
)

# Every JavaScript punctuator, longest first, so that the match is the one JavaScript makes.
_PUNCTUATORS = sorted(
    [
        ">>>=",
        "...",
        "===",
        "!==",
        "**=",
        "<<=",
        ">>=",
        ">>>",
        "&&=",
        "||=",
        "??=",
        "=>",
        "==",
        "!=",
        "<=",
        ">=",
        "&&",
        "||",
        "??",
        "?.",
        "++",
        "--",
        "**",
        "<<",
        ">>",
        "+=",
        "-=",
        "*=",
        "/=",
        "%=",
        "&=",
        "|=",
        "^=",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        ";",
        ",",
        "<",
        ">",
        "+",
        "-",
        "*",
        "/",
        "%",
        "&",
        "|",
        "^",
        "!",
        "~",
        "?",
        ":",
        "=",
        ".",
        "@",
        "#",
    ],
    key=len,
    reverse=True,
)
_ALLOWED_PUNCTUATORS = frozenset(
    [
        "(",
        ")",
        "{",
        "}",
        ",",
        ";",
        "?",
        ":",
        ".",
        "?.",
        "!",
        "~",
        "<",
        ">",
        "<=",
        ">=",
        "==",
        "!=",
        "===",
        "!==",
        "+",
        "-",
        "*",
        "%",
        "**",
        "&",
        "|",
        "^",
        "<<",
        ">>",
        ">>>",
        "&&",
        "||",
        "??",
    ]
)
_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\n\v\f]+)
    | (?P<string>'(?:[^'\\\r\n]|\\[^\r\n])*'|"(?:[^"\\\r\n]|\\[^\r\n])*")
    | (?P<template>`[^`\\$]*(?:(?:\\[^\r\n]|\$(?!\{))[^`\\$]*)*`)
    | (?P<number>(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?
                  |\.\d[\d_]*(?:[eE][+-]?\d+)?)n?(?![\w$.]))
    | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
    | (?P<punctuator>"""
    + "|".join(re.escape(p) for p in _PUNCTUATORS)
    + ")",
    re.VERBOSE,
)


# After these names a ``/`` starts a regular expression, not a division.
_BEFORE_AN_OPERAND = frozenset({"typeof", "in", "return"})


@functools.lru_cache(maxsize=1024)
def is_inert(src: str) -> bool:
    """True when running ``src`` cannot change the sandbox's built-ins (see the module doc)."""
    position, last = 0, ""
    while position < len(src):
        token = _TOKEN.match(src, position)
        if token is None:
            return False
        kind, text = token.lastgroup, token.group()
        if kind == "name" and text not in NAMES:
            return False
        if (
            kind == "punctuator"
            and text not in _ALLOWED_PUNCTUATORS
            and not (text == "/" and _divides(src, token, last))
        ):
            return False
        position = token.end()
        if kind != "space":
            last = text if kind in ("name", "punctuator") else "operand"
    return True


def _divides(src: str, token: re.Match[str], last: str) -> bool:
    """True when this ``/`` is certainly a division: it follows an operand (a literal, a name
    that is no keyword, or a ``)``, which closes a call or a parenthesis: no ``if``, ``for`` or
    ``while`` is allowed) and starts no comment. Anywhere else it could start a regular
    expression, whose text this reading would take for code."""
    after_operand = last == "operand" or last == ")" or (last in NAMES and last not in _BEFORE_AN_OPERAND)
    return after_operand and src[token.end() : token.end() + 1] not in ("/", "*")
