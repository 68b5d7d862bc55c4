"""Locations in a source file, from the loader's marks (1-based lines and columns)."""

from __future__ import annotations

from typing import Any

from .loader import RawSource
from .model import Location

# The loader's positions are ints and the path a str: nothing to validate (model.py).
_location = Location.trusted_maker("path", "line", "column", "field")


class Locator:
    """Locations in one source file, from the loader's marks."""

    def __init__(self, source: RawSource):
        self.source = source

    def at(self, obj: Any, field: str | None = None) -> Location:
        line, column = self.source.position(obj)
        return _location(self.source.path, line, column, field)

    def key(self, obj: Any, key: str, field: str | None = None) -> Location:
        line, column = self.source.key_position(obj, key)
        return _location(self.source.path, line, column, field or key)

    def item(self, seq: Any, index: int, field: str | None = None) -> Location:
        line, column = self.source.item_position(seq, index)
        return _location(self.source.path, line, column, field)
