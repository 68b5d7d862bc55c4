"""The text ``json.dumps(value, indent=2, ensure_ascii=...)`` writes, in pieces, written faster.

With an indent the standard library's encoder runs in pure Python, one generator per nested
value and one yield per token: a 16,000-item run's Weval JSON took it about a second and a half
of CPU. ``indented_pieces`` writes the same characters (the strings through the library's own C
escaping) with one plain recursive call per value, and yields only between the members of the
outer levels, so a file of megabytes is still never whole in memory.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable, Iterator
from typing import Any

_INDENT = "  "
# Members of values this deep or deeper are written whole before anything is yielded: a
# summary's items or a comparison file's prompts are a member at depth 1 or 2.
_STREAMED_DEPTH = 2
_INFINITY = float("inf")


def _float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


class _Writer:
    def __init__(self, ensure_ascii: bool):
        self.string: Callable[[str], str] = (
            json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
        )

    def key(self, key: Any) -> str:
        # The order and the conversions of json.encoder's _iterencode_dict.
        if isinstance(key, str):
            pass
        elif isinstance(key, float):
            key = _float_text(key)
        elif key is True:
            key = "true"
        elif key is False:
            key = "false"
        elif key is None:
            key = "null"
        elif isinstance(key, int):
            key = int.__repr__(key)
        else:
            raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
        return self.string(key)

    def write(self, value: Any, depth: int, out: list[str]) -> None:
        """Appends ``value``'s text, nested ``depth`` levels deep, to ``out``."""
        if isinstance(value, str):
            out.append(self.string(value))
        elif value is None:
            out.append("null")
        elif value is True:
            out.append("true")
        elif value is False:
            out.append("false")
        elif isinstance(value, int):
            out.append(int.__repr__(value))
        elif isinstance(value, float):
            out.append(_float_text(value))
        elif isinstance(value, (list, tuple)):
            if not value:
                out.append("[]")
                return
            inner = "\n" + _INDENT * (depth + 1)
            out.append("[")
            separator = inner
            for member in value:
                out.append(separator)
                self.write(member, depth + 1, out)
                separator = "," + inner
            out.append("\n" + _INDENT * depth + "]")
        elif isinstance(value, dict):
            if not value:
                out.append("{}")
                return
            inner = "\n" + _INDENT * (depth + 1)
            out.append("{")
            separator = inner
            for key, member in value.items():
                out.append(separator + self.key(key) + ": ")
                self.write(member, depth + 1, out)
                separator = "," + inner
            out.append("\n" + _INDENT * depth + "}")
        else:
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")

    def pieces(self, value: Any, depth: int) -> Iterator[str]:
        if depth >= _STREAMED_DEPTH or not isinstance(value, (list, tuple, dict)) or not value:
            out: list[str] = []
            self.write(value, depth, out)
            yield "".join(out)
            return
        inner = "\n" + _INDENT * (depth + 1)
        separator = inner
        if isinstance(value, dict):
            yield "{"
            for key, member in value.items():
                yield separator + self.key(key) + ": "
                yield from self.pieces(member, depth + 1)
                separator = "," + inner
            yield "\n" + _INDENT * depth + "}"
        else:
            yield "["
            for member in value:
                yield separator
                yield from self.pieces(member, depth + 1)
                separator = "," + inner
            yield "\n" + _INDENT * depth + "]"


def indented_pieces(value: Any, *, ensure_ascii: bool) -> Iterator[str]:
    """``json.dumps(value, indent=2, ensure_ascii=ensure_ascii)``, in pieces whose joining is
    that text (a cycle is a RecursionError here, not json's ValueError)."""
    return _Writer(ensure_ascii).pieces(value, 0)
