"""What the agent-file loader needs everywhere: where each part was written, located problems,
files named by a file (fixtures, prompts, case lists) found and read safely, and the values every
part reads alike (text, numbers, spellings, weights).

A ``Problem`` is one case's mistake: the loader catches it at the case and keeps it as the
case's ``problem`` text (the other cases still load). A ``BlueprintError`` is the file's.
"""

from __future__ import annotations

import dataclasses
import glob
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.loader import RawSource
from pytest_weval.blueprint.locate import Locator
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.errors import WevalError
from pytest_weval.formats.model import Dialect


class Problem(WevalError):
    """A mistake in one case (or in a default every case inherits), with where and what to do."""

    def __init__(self, message: str, location: Location, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def text(self) -> str:
        """``path:line:column (field): message`` and the hint, as a ``BlueprintError`` reads."""
        return str(BlueprintError(self.message, self.location, self.hint))


class Where:
    """Locations in one source: a YAML file, or one line of a JSONL file (``line_offset`` is
    the lines before it)."""

    def __init__(self, source: RawSource, line_offset: int = 0):
        self._locator = Locator(source)
        self.path = source.path
        self.line_offset = line_offset

    def _shift(self, location: Location) -> Location:
        if self.line_offset and location.line:
            return location.model_copy(update={"line": location.line + self.line_offset})
        if not location.line and self.line_offset:
            return location.model_copy(update={"line": self.line_offset + 1})
        return location

    def at(self, obj: Any, field: str | None = None) -> Location:
        return self._shift(self._locator.at(obj, field))

    def key(self, obj: Any, key: str, field: str | None = None) -> Location:
        return self._shift(self._locator.key(obj, key, field))

    def item(self, seq: Any, index: int, field: str | None = None) -> Location:
        return self._shift(self._locator.item(seq, index, field))


def join_field(prefix: str, name: str | int) -> str:
    """``assert[0]`` + ``weight`` -> ``assert[0].weight``; an int is a list index."""
    if isinstance(name, int):
        return f"{prefix}[{name}]"
    return f"{prefix}.{name}" if prefix else name


RegexCheck = Callable[[str], "str | None"]  # a pattern -> why it is not valid ECMAScript, or None


def no_regex_check(pattern: str) -> str | None:
    return None


@dataclasses.dataclass(frozen=True)
class Context:
    """One eval file being loaded: its folder, the rootdir, its dialect, the source being read."""

    file_dir: Path  # absolute folder of the eval file: relative paths start here
    rootdir: Path  # absolute; files named by a file must stay below it
    dialect: Dialect
    where: Where
    max_file_mb: float = 20.0
    check_regex: RegexCheck = no_regex_check  # load_agent_suite's

    def with_where(self, where: Where) -> Context:
        return dataclasses.replace(self, where=where)

    # --- located problems ------------------------------------------------------------------

    def problem_at(self, obj: Any, field: str, message: str, hint: str | None = None) -> Problem:
        return Problem(message, self.where.at(obj, field), hint)

    def problem_key(self, obj: Any, key: str, field: str, message: str, hint: str | None = None) -> Problem:
        return Problem(message, self.where.key(obj, key, field), hint)

    def problem_item(self, seq: Any, index: int, field: str, message: str, hint: str | None = None) -> Problem:
        return Problem(message, self.where.item(seq, index, field), hint)

    # --- paths -----------------------------------------------------------------------------

    @property
    def boundary(self) -> Path:
        """The folder nothing named by the file may leave: the rootdir, or the file's own
        folder for a file outside the rootdir."""
        return self.rootdir if is_within(self.file_dir, self.rootdir) else self.file_dir

    def display(self, path: Path) -> str:
        return display_path(path, self.rootdir)

    def search_dirs(self, *, ancestors: bool) -> list[Path]:
        """The eval file's folder, then (``ancestors``) each folder above it up to the boundary."""
        dirs = [self.file_dir]
        if ancestors:
            current = self.file_dir
            while current != self.boundary and current.parent != current:
                current = current.parent
                dirs.append(current)
        return dirs

    def find_file(self, written: str, *, ancestors: bool) -> tuple[Path | None, str | None]:
        """The file a path written in the eval file names (AgentV's search: the file's folder,
        then its ancestors up to the rootdir; a leading ``/`` means the rootdir; ``file://``
        is dropped). Returns (path, None) or (None, why not found)."""
        raw = written[len("file://") :] if written.startswith("file://") else written
        if not raw.strip():
            return None, "the path is empty"
        if raw.startswith("/"):
            candidates = [self.boundary / raw.lstrip("/")]
        else:
            candidates = [folder / raw for folder in self.search_dirs(ancestors=ancestors)]
        outside = None
        for candidate in candidates:
            resolved = candidate.resolve()
            if not is_within(resolved, self.boundary):
                outside = outside or resolved
                continue
            if resolved.is_file():
                return resolved, None
        if outside is not None and outside.is_file():
            return (
                None,
                f"it resolves to {outside}, outside the rootdir {self.boundary}; a file may only name files below it",
            )
        inside = [c.resolve() for c in candidates if is_within(c.resolve(), self.boundary)]
        if not inside:
            return None, f"it resolves outside the rootdir {self.boundary}; a file may only name files below it"
        tried = ", ".join(self.display(c) for c in inside[:4])
        return None, f"no such file (looked for {tried}{', ...' if len(inside) > 4 else ''})"

    def find_glob(self, written: str) -> list[Path]:
        """Files a ``file://`` glob names, relative to the eval file's folder, sorted."""
        raw = written[len("file://") :] if written.startswith("file://") else written
        pattern = str(self.boundary / raw.lstrip("/")) if raw.startswith("/") else str(self.file_dir / raw)
        found = sorted(Path(p).resolve() for p in glob.glob(pattern, recursive=True))
        return [p for p in found if p.is_file() and is_within(p, self.boundary)]

    def find_dir(self, written: str) -> tuple[Path | None, str | None]:
        """A folder named relative to the eval file's folder (a leading ``/`` is the rootdir)."""
        resolved = (
            self.boundary / written.lstrip("/") if written.startswith("/") else self.file_dir / written
        ).resolve()
        if not is_within(resolved, self.boundary):
            return None, f"it resolves to {resolved}, outside the rootdir {self.boundary}"
        if not resolved.is_dir():
            return None, f"no such folder ({self.display(resolved)})"
        return resolved, None

    def read_text(self, path: Path) -> tuple[str | None, str | None]:
        """A fixture's text: UTF-8 (a BOM dropped), CRLF as LF, at most ``max_file_mb``.
        Returns (text, None) or (None, why not)."""
        limit = int(self.max_file_mb * 1024 * 1024)
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror or exc})"
        if len(data) > limit:
            return None, f"is larger than {self.max_file_mb:g} MB"
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        return text.replace("\r\n", "\n"), None


def display_path(path: Path, rootdir: Path) -> str:
    """``path`` as messages show it: relative to the rootdir when below it, else as it is."""
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return path.as_posix()


def is_within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


# --- values ----------------------------------------------------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite_number(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)


def text_value(value: Any) -> str | None:
    """A scalar written where text is expected: strings as they are, numbers as written."""
    if isinstance(value, str):
        return value
    if is_number(value):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    return None


def first_text(mapping: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The first of ``keys`` whose value is non-empty text (aliases, in order), else ""."""
    for key in keys:
        text = text_value(mapping.get(key))
        if text and text.strip():
            return text
    return ""


def describe(value: Any) -> str:
    """What a wrong value is, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if is_number(value):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_SPELLING = re.compile(r"[-\s]+")


def snake_spelling(written: str) -> str:
    """A type or mode as written (``LLM-Judge``, ``any order``) in snake case (``llm_judge``,
    ``any_order``): lower case, each run of ``-`` and spaces one ``_`` (v2.14 kebab-case)."""
    return _SPELLING.sub("_", written.strip().lower())


def parse_weight(ctx: Context, raw: dict[str, Any], field: str) -> float:
    """``weight``: a finite number >= 0, 1 when absent (0 keeps an evaluator as information)."""
    weight = raw.get("weight")
    if weight is None:
        return 1.0
    if not finite_number(weight) or weight < 0:
        why = (
            "must be a number"
            if not is_number(weight)
            else "must be finite"
            if not finite_number(weight)
            else "must be >= 0"
        )
        raise ctx.problem_key(
            raw,
            "weight",
            join_field(field, "weight"),
            f"`weight` {why} (got {describe(weight)})",
            hint="write a number >= 0, e.g. `weight: 2` (0 keeps it as information only)",
        )
    return float(weight)
