"""Locations in a source file, from the loader's marks (1-based lines and columns)."""

from __future__ import annotations

from typing import Any

from .loader import RawSource
from .model import Location


class Locator:
    """Locations in one source file, from the loader's marks."""

    def __init__(self, source: RawSource):
        self.source = source

    def at(self, obj: Any, field: str | None = None) -> Location:
        line, column = self.source.position(obj)
        return Location(path=self.source.path, line=line, column=column, field=field)

    def key(self, obj: Any, key: str, field: str | None = None) -> Location:
        line, column = self.source.key_position(obj, key)
        return Location(path=self.source.path, line=line, column=column, field=field or key)

    def item(self, seq: Any, index: int, field: str | None = None) -> Location:
        line, column = self.source.item_position(seq, index)
        return Location(path=self.source.path, line=line, column=column, field=field)
