"""JSON found in model output as promptfoo 0.123.1 finds it (``extractJsonObjects``): every
balanced ``{...}`` span, read by js-yaml in JSON mode after ``//`` comments become YAML ``#``
comments, so JavaScript object literals (``{name: 'x'}``) count as JSON there while ``is-json``
(``JSON.parse``) rejects them."""

from __future__ import annotations

import re
from typing import Any

from pytest_weval.blueprint.loader import load_source
from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import JS_WHITESPACE

__all__ = ["extract_json_objects", "js_trim_end", "load_yaml_value", "slash_comments_to_hash"]

MAX_JSON_LENGTH = 100_000


def js_trim_end(text: str) -> str:
    """``String.prototype.trimEnd()``."""
    return text.rstrip(JS_WHITESPACE)


def load_yaml_value(text: str) -> Any:
    """One YAML (or JSON) document, as js-yaml's ``load`` reads it; ``ValueError`` when it cannot
    be read. An empty document is None."""
    if text.strip() == "":
        return None
    try:
        source = load_source(text, fmt="yaml", path="<value>", what="value")
    except (WevalError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    return source.documents[0] if source.documents else None


_LETTER = re.compile(r"[a-zA-Z]")


def slash_comments_to_hash(text: str) -> str:
    """promptfoo's ``convertSlashCommentsToHash``: ``//`` comments outside quotes (and not part of
    a URL) become ``#`` comments, line by line."""
    return "\n".join(_line_comments_to_hash(line) for line in text.split("\n"))


def _line_comments_to_hash(line: str) -> str:
    state = "normal"
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        nxt = line[i + 1] if i + 1 < n else ""
        prev = line[i - 1] if i > 0 else ""
        if state == "normal":
            if ch == "'" and not _LETTER.match(prev):
                state = "single"
                out.append(ch)
            elif ch == '"':
                state = "double"
                out.append(ch)
            elif ch == "/" and nxt == "/":
                start = 0
                for j in range(i - 1, -1, -1):
                    if line[j].isspace():
                        start = j + 1
                        break
                if "://" in line[start : i + 2]:
                    out.append(ch)
                    i += 1
                    continue
                slashes = 2
                while i + slashes < n and line[i + slashes] == "/":
                    slashes += 1
                return "".join(out) + "#" * (slashes // 2) + line[i + slashes :]
            else:
                out.append(ch)
        elif state == "single":
            out.append(ch)
            # promptfoo tests the next character with /[a-zA-Z]/; at the end of the line that is
            # `undefined`, which the test reads as the word "undefined": a letter.
            if ch == "'" and not _escaped(line, i) and nxt != "" and not _LETTER.match(nxt):
                state = "normal"
        else:
            out.append(ch)
            if ch == '"' and not _escaped(line, i):
                state = "normal"
        i += 1
    return "".join(out)


def _escaped(line: str, index: int) -> bool:
    count, i = 0, index - 1
    while i >= 0 and line[i] == "\\":
        count += 1
        i -= 1
    return count % 2 == 1


def extract_json_objects(text: str) -> list[Any]:
    """Every object promptfoo's ``extractJsonObjects`` finds in ``text``, in order."""
    found: list[Any] = []
    n = len(text)
    i = 0
    while i < n:
        if text[i] != "{":
            i += 1
            continue
        opened, closed = 1, 0
        j = i + 1
        limit = min(i + MAX_JSON_LENGTH, n)
        next_i = i + 1
        while j < limit and opened > closed:
            if text[j] == "{":
                opened += 1
            if text[j] == "}":
                closed += 1
            j += 1
            if opened == closed or j == n or j == i + MAX_JSON_LENGTH:
                candidate = text[i:j]
                if opened > closed:
                    candidate += "}" * (opened - closed)
                try:
                    parsed = load_yaml_value(slash_comments_to_hash(candidate))
                except ValueError:
                    if opened == closed:
                        break
                    continue
                if isinstance(parsed, dict | list):
                    found.append(parsed)
                    next_i = j
                    break
        i = next_i
    return found
