"""A blueprint file -> its raw documents, safely (docs/format.md, 'Files and documents'; docs/rulings.md, rulings 1-2).

A file must pass these checks, each a located BlueprintError: its size (a cap in MB, before
reading), its bytes (UTF-8; a BOM is dropped), and its shape as seen in the YAML event stream,
before PyYAML's composer or anything else walks it: nesting depth (the C composer recurses
and crashes the process around 50,000 levels) and alias expansion (a "billion laughs" file is
tiny but expands exponentially once walked). The documents are read as js-yaml reads them
(yaml_dialect.py), mostly straight from those same events (yaml_build.py).

YAML syntax errors are reported in plain words with the key involved, e.g. an unquoted
`: ` inside a title.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import pytest_weval.defaults as defaults

from .model import BlueprintError, Location
from .yaml_build import MAX_DEPTH, build_yaml_documents, depth_error
from .yaml_dialect import BlueprintLoader, DuplicateKeyError, Marks, node_marks

DEFAULT_MAX_FILE_MB = defaults.MAX_FILE_MB

EMPTY_YAML = "YAML blueprint is empty or contains only null documents."


@dataclass
class RawSource:
    """What a blueprint file holds before interpretation, plus where each part was written."""

    path: str  # as shown in messages
    fmt: str  # "yaml" | "json"
    documents: list[Any]
    marks: Marks = field(default_factory=dict)  # keeps lines; the documents keep the ids valid

    def position(self, obj: Any) -> tuple[int, int]:
        entry = self.marks.get(id(obj))
        return (entry[0], entry[1]) if entry else (0, 0)

    def key_position(self, obj: Any, key: str) -> tuple[int, int]:
        entry = self.marks.get(id(obj))
        if not entry:
            return (0, 0)
        children = entry[2]
        if isinstance(children, dict) and key in children:
            return children[key]
        return (entry[0], entry[1])

    def item_position(self, seq: Any, index: int) -> tuple[int, int]:
        entry = self.marks.get(id(seq))
        if not entry:
            return (0, 0)
        children = entry[2]
        if isinstance(children, list) and 0 <= index < len(children):
            return children[index]
        return (entry[0], entry[1])


@contextmanager
def room_for_depth() -> Iterator[None]:
    """Documents may nest MAX_DEPTH levels; json's decoder and encoder and our JSON printing
    recurse once per level, on top of the caller's frames (pytest's are many)."""
    old = sys.getrecursionlimit()
    needed = 2 * MAX_DEPTH + 1000
    if old < needed:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if old < needed:
            sys.setrecursionlimit(old)


def format_of(path: str | Path) -> str:
    """`.yml`/`.yaml` are YAML; anything else is JSON, as the reference decides (docs/format.md, 'Files and documents')."""
    return "yaml" if str(path).endswith((".yml", ".yaml")) else "json"


def read_blueprint_file(
    path: str | Path,
    *,
    display_path: str | None = None,
    max_file_mb: float = DEFAULT_MAX_FILE_MB,
    what: str = "blueprint",
) -> RawSource:
    """The file's documents; ``what`` names the kind of file in the messages (a fixture file
    is read the same way, and is not a blueprint)."""
    shown = display_path or str(path)
    limit = int(max_file_mb * 1024 * 1024)
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)  # never more than the cap, even if the file grows
    if len(data) > limit:
        size = max(Path(path).stat().st_size, len(data))
        raise BlueprintError(
            f"the file is {size / 1024 / 1024:.3g} MB, more than the {max_file_mb:g} MB a {what} may be",
            Location(path=shown, field="file size"),
            hint="split the blueprint, or raise the cap with ini `weval_max_file_mb`",
        )
    return load_source(decode_blueprint_bytes(data, shown), fmt=format_of(path), path=shown, what=what)


def decode_blueprint_bytes(data: bytes, shown: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BlueprintError(
            f"the file is not valid UTF-8: byte 0x{data[exc.start]:02x} at line {line}, column {column}",
            Location(path=shown, line=line, column=column),
            hint="save the file as UTF-8",
        ) from None


def load_source(text: str, *, fmt: str, path: str, what: str = "blueprint") -> RawSource:
    if text.startswith("\ufeff"):
        text = text[1:]
    if fmt == "yaml":
        return _load_yaml(text, path, what)
    return _load_json(text, path, what)


# --- YAML --------------------------------------------------------------------------------------


def _load_yaml(text: str, path: str, what: str = "blueprint") -> RawSource:
    try:
        built = build_yaml_documents(text, path)  # also checks depth and aliases
        if built is not None:
            documents, marks = built
        else:
            documents, marks = _load_with_constructor(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, text, path, what) from None
    if not documents:
        raise BlueprintError(
            f"Failed to parse YAML blueprint: {EMPTY_YAML}"
            if what == "blueprint"
            else f"Failed to parse YAML {what}: it is empty or holds only null documents",
            Location(path=path, line=1, column=1),
            hint="add a header and prompts, or remove the file" if what == "blueprint" else None,
        )
    return RawSource(path=path, fmt="yaml", documents=documents, marks=marks)


def _load_with_constructor(text: str) -> tuple[list[Any], Marks]:
    """PyYAML's composer and constructor in our dialect, for the rare YAML the event builder
    leaves alone (explicit tags, merge keys). Only called once the checks have passed."""
    loader = BlueprintLoader(text)
    documents: list[Any] = []
    try:
        while loader.check_data():
            document = loader.get_data()
            if document is not None:
                documents.append(document)
    finally:
        loader.dispose()
    return documents, loader.marks


# Plain words (and what to do) for the messages libyaml gives most often.
_INDENT_HINT = "indent with spaces so that each key lines up with its siblings"
_QUOTE_HINT = "put the whole value in double quotes"
_YAML_PROBLEMS = (
    (
        "mapping values are not allowed",
        "an unquoted value contains ': ', which YAML reads as the start of another key",
        _QUOTE_HINT,
    ),
    (
        "could not find expected ':'",
        "a line inside a mapping is neither 'key: value' nor a continuation of the previous value",
        _INDENT_HINT,
    ),
    ("did not find expected key", "a line is indented so that it fits no mapping", _INDENT_HINT),
    (
        "did not find expected '-' indicator",
        "a line inside a list is indented so that it is not a new '- ' item",
        _INDENT_HINT,
    ),
    (
        "did not find expected ',' or ']'",
        "a [bracketed list] is not closed, or an item in it needs quotes",
        "close the bracket, or quote the items",
    ),
    (
        "did not find expected ',' or '}'",
        "a {braced mapping} is not closed, or a value in it needs quotes",
        "close the brace, or quote the values",
    ),
    ("did not find expected node content", "a value is missing where one was expected", None),
    (
        "block sequence entries are not allowed",
        "a '- ' list item is on the same line as its key",
        "start the list on the next line, indented",
    ),
    (
        "expected a comment or a line break",
        "text follows a closed quote or a block indicator on the same line",
        _QUOTE_HINT,
    ),
    ("expected <block end>", "the indentation does not match the lines above", _INDENT_HINT),
    (
        "found character '\\t' that cannot start any token",
        "a tab character; YAML indentation must use spaces",
        "replace the tab with spaces",
    ),
    ("found a tab character", "a tab character; YAML indentation must use spaces", "replace the tab with spaces"),
    (
        "found character that cannot start any token",
        "a value starts with a character YAML reserves (such as @ or `)",
        _QUOTE_HINT,
    ),
    (
        "found undefined alias",
        "an alias (*name) refers to an anchor (&name) that is not defined",
        "define the anchor first, or quote a value that starts with '*'",
    ),
    (
        "found unexpected end of stream",
        "the file ends inside a quoted string or an open bracket",
        "close the quote or bracket",
    ),
    (
        "found unknown escape character",
        "a backslash sequence YAML does not know inside a double-quoted string",
        "use single quotes, or write the backslash twice",
    ),
    ("could not determine a constructor for the tag", "an unknown tag (a value starting with '!')", _QUOTE_HINT),
    ("found duplicate anchor", "the same anchor (&name) is defined twice", "rename one of the anchors"),
    (
        "special characters are not allowed",
        "the file contains a control character that YAML does not allow",
        "remove the character",
    ),
    ("found unhashable key", "a mapping key is itself a list or mapping", "use a plain text key"),
)

_KEY_ON_LINE = re.compile(r"^\s*(?:-\s+)?([^\s:#'\"][^:#]*?|'[^']*'|\"[^\"]*\")\s*:(?:\s|$)")


# PyYAML 6.0.4's scanner has its own nesting limit, which may trip before our event-stream check.
_PYYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"


def yaml_error(exc: yaml.YAMLError, text: str, path: str, what: str = "blueprint") -> BlueprintError:
    """A PyYAML error as a located BlueprintError in plain words."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None and isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        problem = f"{exc.reason}: character #x{exc.character:04x}" if isinstance(exc.character, int) else str(exc)
    elif mark is not None:
        line, column = mark.line + 1, mark.column + 1
    else:
        line = column = 0
    if problem == _PYYAML_DEPTH_PROBLEM:
        return depth_error(path, line, column)
    words, hint = next(((w, h) for needle, w, h in _YAML_PROBLEMS if needle in problem), (None, None))
    message = "YAML syntax error: " + (f"{words} ({problem})" if words else problem)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark.line + 1 != line:
        message += f"; {context} at line {context_mark.line + 1}"
    key = _key_on_line(text, line)
    if isinstance(exc, DuplicateKeyError):
        hint = f"keep one '{exc.key}' (the reference rejects repeated keys; PyYAML would silently keep the last)"
    elif hint == _QUOTE_HINT and key:
        hint = f"quote the whole value of '{key}', e.g. {key}: \"...\""
    return BlueprintError(
        f"Failed to parse YAML {what}: {message}",
        Location(path=path, line=line, column=column, field=key),
        hint=hint,
    )


def _key_on_line(text: str, line: int) -> str | None:
    if line <= 0:
        return None
    lines = text.split("\n", line)
    if len(lines) < line:
        return None
    match = _KEY_ON_LINE.match(lines[line - 1])
    return match.group(1).strip("'\"") if match else None


# --- JSON --------------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_depth(text: str) -> int:
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _load_json(text: str, path: str, what: str = "blueprint") -> RawSource:
    if _json_depth(text) > MAX_DEPTH:
        raise depth_error(path, 1, 1)
    try:
        document = json.loads(text, parse_constant=_json_constant)
    except json.JSONDecodeError as exc:
        raise BlueprintError(
            f"Failed to parse JSON {what}: {exc.msg}",
            Location(path=path, line=exc.lineno, column=exc.colno),
            hint="check the JSON syntax at that spot (a missing comma, quote or bracket)",
        ) from None
    except ValueError as exc:
        raise BlueprintError(
            f"Failed to parse JSON {what}: {exc}",
            Location(path=path),
            hint="JSON has no NaN or Infinity; write null or a number",
        ) from None
    return RawSource(path=path, fmt="json", documents=[document], marks=_json_marks(text, document))


def _json_marks(text: str, document: Any) -> Marks:
    """Lines for a JSON document, from the YAML composer (JSON is, nearly always, YAML too)."""
    marks: Marks = {}
    if not isinstance(document, (dict, list)):
        return marks
    loader = BlueprintLoader(text, record_marks=False)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError:
        return marks  # lines unknown (0); everything else still works
    finally:
        loader.dispose()
    if node is not None:
        node_marks(node, document, marks)
    return marks
