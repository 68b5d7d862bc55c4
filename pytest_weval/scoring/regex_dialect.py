"""Regex patterns written for Python or PCRE, in functions that run them as JavaScript.

Weval's `$matches` family compiles each pattern with `new RegExp(pattern, flags)` (flags "" or
"i", never "u"). Two kinds of trouble:

* V8 rejects the pattern (`(?i)`, `(?P<name>`, possessive `a++`, atomic `(?>...)`): the point
  errors on every response, so the item errors. `check_pattern_syntax` says so; we add what
  the author probably meant.
* V8 accepts it but reads it differently (no `u` flag, Annex B identity escapes): `\\A` and
  `\\Z` match the letters A and Z, `\\p{L}` matches the text `p{L}`, `[[:alpha:]]` is a
  character class of `[:alph` followed by `]`, a `/.../i` literal matches its slashes, and
  `\\b` is an ASCII word boundary next to accented letters.
"""

from __future__ import annotations

import re

# Escapes PCRE/Python give a meaning that JavaScript (without the u flag) does not: there,
# each matches its letter.
_LITERAL_ESCAPES = {
    "A": "start of text (JavaScript: use ^)",
    "Z": "end of text (JavaScript: use $)",
    "z": "end of text (JavaScript: use $)",
    "G": "the end of the previous match",
    "K": "keep-out",
    "Q": "start of a quoted span",
    "E": "end of a quoted span",
    "R": "any line break (JavaScript: use \\r?\\n)",
    "X": "an extended grapheme cluster",
    "h": "horizontal whitespace (JavaScript: use [ \\t])",
    "H": "non-horizontal-whitespace",
    "e": "the escape character (JavaScript: use \\x1b)",
    "a": "the bell character (JavaScript: use \\x07)",
    "p": "a Unicode property (JavaScript needs the u flag, which these functions never set)",
    "P": "a negated Unicode property (JavaScript needs the u flag, which these functions never set)",
}

_INLINE_FLAGS = re.compile(r"\(\?([aiLmsux]+)(?:-[imsx]+)?[):]")
_PY_NAMED = re.compile(r"\(\?P[<=>]")
_ATOMIC = re.compile(r"\(\?>")
_COMMENT = re.compile(r"\(\?#")
_CONDITIONAL = re.compile(r"\(\?\(")
_SLASH_LITERAL = re.compile(r"^/.+/[dgimsuvy]*$", re.DOTALL)
_POSIX_CLASS = re.compile(r"\[:\^?(alpha|digit|alnum|upper|lower|space|punct|word|xdigit|cntrl|print|graph|blank):\]")
# `\b` next to a non-ASCII letter: JavaScript's \b sees only [A-Za-z0-9_] as word characters.
_ASCII_BOUNDARY_AT_LETTER = re.compile(r"(?<!\\)\\b(?=[^\x00-\x7f])|[^\x00-\x7f]\\b")


def dialect_problems(pattern: str, flags: str = "") -> list[str]:
    """What in `pattern` is Python/PCRE syntax, each as a sentence saying what to write instead.

    Empty when the pattern reads the same in JavaScript as its author presumably meant."""
    problems: list[str] = []
    inline = _INLINE_FLAGS.search(pattern)
    if inline:
        letters = inline.group(1)
        advice = []
        if "i" in letters and "i" in flags:
            advice.append("remove it: this function already matches case-insensitively")
        elif "i" in letters:
            advice.append(
                "for case-insensitive matching use $imatches (or $not_imatches, $imatches_all_of -> $imatch_all_of)"
            )
        if "s" in letters:
            advice.append("for '.' across lines use [\\s\\S]")
        if "m" in letters:
            advice.append("JavaScript's ^ and $ cannot be switched to per-line here")
        if "x" in letters:
            advice.append("JavaScript has no verbose mode: remove the spaces and comments")
        problems.append(
            f"inline flags '{inline.group(0)[:-1]})' are Python/PCRE syntax, not JavaScript"
            + (": " + "; ".join(advice) if advice else "")
        )
    if _PY_NAMED.search(pattern):
        problems.append(
            "'(?P<name>...)' is Python syntax: JavaScript writes named groups '(?<name>...)' "
            "and back-references '\\k<name>'"
        )
    if _ATOMIC.search(pattern):
        problems.append("atomic groups '(?>...)' do not exist in JavaScript")
    if _COMMENT.search(pattern):
        problems.append("'(?#...)' comments do not exist in JavaScript")
    if _CONDITIONAL.search(pattern):
        problems.append("conditional groups '(?(...)...)' do not exist in JavaScript")
    if _SLASH_LITERAL.match(pattern) and len(pattern) > 2:
        problems.append(
            "the pattern is written as a /.../ literal: in a blueprint the slashes (and any "
            "flags after them) are part of the pattern and must appear in the text; write "
            "the bare pattern, and use $imatches for the i flag"
        )
    problems.extend(_scan(pattern, flags))
    return problems


def _scan(pattern: str, flags: str) -> list[str]:
    """Escapes, possessive quantifiers and POSIX classes, walking the pattern once."""
    problems: list[str] = []
    seen_escapes: set[str] = set()
    in_class = False
    i = 0
    n = len(pattern)
    prev_quantifier = False
    has_word_boundary = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in _LITERAL_ESCAPES and "u" not in flags and nxt not in seen_escapes:
                seen_escapes.add(nxt)
                if nxt in "pP" and i + 2 < n and pattern[i + 2] == "{":
                    end = pattern.find("}", i + 2)
                    written = pattern[i : end + 1] if end != -1 else pattern[i : i + 3]
                    problems.append(
                        f"'{written}' is {_LITERAL_ESCAPES[nxt]}: here it matches the "
                        f"text '{written[1:]}'; for letters in any script use $contains_word "
                        "or a character range"
                    )
                elif nxt not in "pP":
                    problems.append(
                        f"'\\{nxt}' means {_LITERAL_ESCAPES[nxt]} in Python/PCRE, but in "
                        f"JavaScript it matches the letter '{nxt}'"
                    )
            if nxt == "b" and not in_class:
                has_word_boundary = True
            i += 2
            prev_quantifier = False
            continue
        if in_class:
            if ch == "[" and _POSIX_CLASS.match(pattern, i):
                match = _POSIX_CLASS.match(pattern, i)
                assert match is not None
                problems.append(
                    f"'{match.group(0)}' is a POSIX class, which JavaScript does not have: "
                    "there it is a set of single characters (write e.g. [a-zA-Z] or \\d)"
                )
                i = match.end()
                continue
            if ch == "]":
                in_class = False
            i += 1
            continue
        if ch == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a literal in PCRE (JS: empty class)
                i += 1
            prev_quantifier = False
            continue
        if ch == "+" and prev_quantifier:
            problems.append("possessive quantifiers ('*+', '++', '?+', '{n}+') do not exist in JavaScript")
            prev_quantifier = False
            i += 1
            continue
        if ch in "*+?":
            # `+?`, `*?`, `??` are lazy quantifiers (fine); a `+` after any quantifier is possessive.
            if ch == "?" and prev_quantifier:
                prev_quantifier = False
            else:
                prev_quantifier = not (ch == "?" and i > 0 and pattern[i - 1] == "(")
            i += 1
            continue
        if ch == "{":
            close = re.match(r"\{\d+(,\d*)?\}", pattern[i:])
            if close:
                i += close.end()
                prev_quantifier = True
                continue
        prev_quantifier = False
        i += 1
    if has_word_boundary and _ASCII_BOUNDARY_AT_LETTER.search(pattern):
        problems.append(
            "'\\b' is an ASCII-only word boundary in JavaScript, so it fails next to letters "
            "such as 'á' or 'ж': use $contains_word / $icontains_word for words in any script"
        )
    return problems
