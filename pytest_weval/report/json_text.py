"""The text ``json.dumps(value, indent=2, ensure_ascii=...)`` writes, in pieces, written faster.

With an indent the standard library's encoder runs in pure Python, one generator per nested
value and one yield per token: a 16,000-item run's Weval JSON took it about a second and a half
of CPU. ``indented_pieces`` writes the same characters (the strings through the library's own C
escaping) with one plain recursive call per value, and yields only between the members of the
outer levels, so a file of megabytes is still never whole in memory.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pydantic_core

from pytest_weval.errors import WevalError

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


def _js_float_text(value: float) -> str:
    # js_data's numbers: integral floats as ints, NaN and the infinities as null
    if value != value or value in (_INFINITY, -_INFINITY):
        return "null"
    if value.is_integer() and abs(value) < 2**53:
        return int.__repr__(int(value))
    return float.__repr__(value)


def _true_false(value: bool) -> str:
    return "true" if value else "false"


def _null(value: None) -> str:
    return "null"


class _Writer:
    # ``js``: the text of ``json.dumps(js_data(value), indent=2)`` (report/weval_json.py) for
    # ``value``, without making js_data's copy first.
    def __init__(self, ensure_ascii: bool, js: bool = False):
        self.string: Callable[[str], str] = (
            json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
        )
        self.js = js
        self.ascii = ensure_ascii
        self.float_text = _js_float_text if js else _float_text
        # the scalars by exact type, written without a call of ``write`` each
        self.scalars: dict[type, Callable[[Any], str]] = {
            str: self.string,
            int: int.__repr__,
            float: self.float_text,
            bool: _true_false,
            type(None): _null,
        }

    def key(self, key: Any) -> str:
        if self.js:  # js_data's keys: str() of any other than a str
            return self.string(key if type(key) is str else str(key))
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
        kind = type(value)
        scalar = self.scalars.get(kind)
        if scalar is not None:
            out.append(scalar(value))
        elif kind is dict:
            if self.js and not _STRINGS.issuperset(map(type, value)):
                value = _js_keys(value)
            self._members(value.items(), "{", "}", depth, out)
        elif kind is list or kind is tuple:
            self._members(value, "[", "]", depth, out)
        elif isinstance(value, str):
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
            out.append(self.float_text(value))
        elif isinstance(value, (list, tuple)):
            self._members(value, "[", "]", depth, out)
        elif isinstance(value, dict):
            self._members((_js_keys(value) if self.js else value).items(), "{", "}", depth, out)
        elif self.js and isinstance(value, Mapping):  # js_data makes a dict of it, keys str()'d
            self._members([(str(k), v) for k, v in value.items()], "{", "}", depth, out)
        else:
            raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")

    def _members(self, members: Iterable[Any], opening: str, closing: str, depth: int, out: list[str]) -> None:
        """A list's members, or a dict's (key, member) pairs when ``opening`` is ``{``."""
        inner = "\n" + _INDENT * (depth + 1)
        separator = opening + inner
        scalars = self.scalars
        string = self.string
        keyed = opening == "{"
        empty = True
        for member in members:
            empty = False
            if keyed:
                key, member = member
                separator += (string(key) if type(key) is str else self.key(key)) + ": "
            scalar = scalars.get(type(member))
            if scalar is not None:
                out.append(separator + scalar(member))
            else:
                out.append(separator)
                self.write(member, depth + 1, out)
            separator = "," + inner
        if empty:
            out.append(opening + closing)
        else:
            out.append("\n" + _INDENT * depth + closing)

    def pieces(self, value: Any, depth: int) -> Iterator[str]:
        if self.js and isinstance(value, Mapping) and not _STRINGS.issuperset(map(type, value)):
            value = _js_keys(value)
        elif self.js and not isinstance(value, (list, tuple, dict)) and isinstance(value, Mapping):
            value = dict(value)
        if depth >= _STREAMED_DEPTH or not isinstance(value, (list, tuple, dict)) or not value:
            out: list[str] = []
            self.write(value, depth, out)
            yield "".join(out)
            return
        inner = "\n" + _INDENT * (depth + 1)
        separator = inner
        keyed = isinstance(value, dict)
        members: Iterable[Any] = value.items() if isinstance(value, dict) else value
        yield "{" if keyed else "["
        if depth + 1 == _STREAMED_DEPTH and self.js and not self.ascii:
            # the members, whole, by pydantic's serialiser a batch at a time
            for batch in _batches(members):
                text = _serialised(dict(batch) if keyed else batch, depth)
                if text is not None:  # its opening bracket and its closing one's line left out
                    yield separator[: -len(inner)] + text[1 : len(text) - len(_INDENT * depth) - 2]
                    separator = "," + inner
                    continue
                for member in batch:
                    yield from self._member(member, keyed, separator, depth)
                    separator = "," + inner
        else:
            for member in members:
                yield from self._member(member, keyed, separator, depth)
                separator = "," + inner
        yield "\n" + _INDENT * depth + ("}" if keyed else "]")

    def _member(self, member: Any, keyed: bool, separator: str, depth: int) -> Iterator[str]:
        if keyed:
            key, member = member
            yield separator + self.key(key) + ": "
        else:
            yield separator
        yield from self.pieces(member, depth + 1)


_STRINGS = frozenset({str})


def _js_keys(value: Mapping[Any, Any]) -> dict[str, Any]:
    """js_data's dict of a mapping: each key str()'d (two keys alike then are one, the later's
    value kept, as js_data keeps it)."""
    return {str(k): v for k, v in value.items()}


_BATCH = 256  # members of a streamed level serialised at once: few calls, a small text each


def _batches(members: Iterable[Any]) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for member in members:
        batch.append(member)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class _Unsafe(WevalError):
    """A value pydantic's serialiser could write otherwise than json.dumps (never leaves this module)."""


_PLAIN = frozenset({str, int, bool, type(None)})


def _js_safe(value: Any) -> Any:
    """js_data's copy of ``value``, for pydantic's serialiser; ``_Unsafe`` for what it could
    write otherwise than json.dumps: a float below 1e-4 or from 1e16 (which it spells
    ``0.00001`` for ``1e-05``, ``1e16`` for ``1e+16``), a key not a string, a subclass of a
    JSON type or any other object (json.dumps's errors are the writer's to raise)."""
    kind = type(value)
    if kind is dict:
        if not _STRINGS.issuperset(map(type, value)):
            raise _Unsafe
        return {k: v if type(v) in _PLAIN else _js_safe(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else _js_safe(v) for v in value]
    if kind is float:
        if value != value or value in (_INFINITY, -_INFINITY):
            return None
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        if 1e-4 <= abs(value) < 1e16:
            return value
    raise _Unsafe


def _serialised(value: Any, depth: int) -> str | None:
    """``json.dumps(js_data(value), indent=2)`` nested ``depth`` levels deep, written by
    pydantic's serialiser, three times as fast as the writer above with ``js_data`` included:
    the same escapes, the same shortest floats in the range ``_js_safe`` lets through, non-ASCII
    as it is. None for what it could write otherwise, or cannot write (a lone surrogate)."""
    try:
        text = pydantic_core.to_json(_js_safe(value), indent=2).decode("utf-8")
    except (_Unsafe, ValueError, TypeError, OverflowError):
        return None
    # a JSON text has no newline but between its tokens
    return text.replace("\n", "\n" + _INDENT * depth) if depth else text


def indented_pieces(value: Any, *, ensure_ascii: bool, js: bool = False) -> Iterator[str]:
    """``json.dumps(value, indent=2, ensure_ascii=ensure_ascii)``, in pieces whose joining is
    that text (a cycle is a RecursionError here, not json's ValueError). ``js``: of
    ``js_data(value)`` (report/weval_json.py: numbers as JavaScript writes them)."""
    return _Writer(ensure_ascii, js).pieces(value, 0)
