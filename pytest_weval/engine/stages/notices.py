"""Lines for the person watching the run (a provider started throttling, the store stopped
keeping replies): each said once, appended on the engine's loop, taken from pytest's thread."""

from __future__ import annotations


class Notices:
    def __init__(self) -> None:
        self._lines: list[str] = []
        self._said: set[str] = set()

    def once(self, tag: str, text: str) -> None:
        """Say ``text`` unless a line of this ``tag`` was said already."""
        if tag not in self._said:
            self._said.add(tag)
            self._lines.append(text)

    def said(self, tag: str) -> bool:
        return tag in self._said

    def take(self) -> list[str]:
        lines, self._lines = self._lines, []
        return lines
