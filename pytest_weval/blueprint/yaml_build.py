"""One pass over libyaml's event stream: safety checks, objects and line marks together.

Walking the events is what docs/rulings.md, ruling 2 asks for before any object is built (nesting depth,
alias expansion), and building plain objects from those same events in Python costs less
than a second pass through PyYAML's composer and constructor. Blueprints use a small part of
YAML; anything outside it here (explicit tags such as `!!binary`, `<<` merge keys, a mapping
used as a key) makes the builder stand aside, and the file is then loaded by
`BlueprintLoader` (the same dialect) once the checks have passed.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import ScalarNode

from pytest_weval.jsvalues import js_property_key

from .model import BlueprintError, Location
from .yaml_dialect import (
    BOOL_TAG,
    FLOAT_TAG,
    INT_TAG,
    NULL_TAG,
    STR_TAG,
    TIMESTAMP_TAG,
    TRUE_WORDS,
    BlueprintLoader,
    DuplicateKeyError,
    Marks,
    float_from_yaml,
    int_from_yaml,
    plain_scalar_tag,
)

MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"

MAX_DEPTH = 1000
# An alias may repeat a subtree, but the document, expanded, may not grow past both limits:
# a file without aliases never exceeds the ratio; a billion-laughs file does within a few lines.
ALIAS_EXPANSION_FLOOR = 1_000_000
ALIAS_EXPANSION_RATIO = 10

_NO_KEY = object()  # a mapping waiting for its next key
_UNBUILT = object()  # a value the builder leaves to the full loader


class _Frame:
    """A mapping or sequence being filled."""

    __slots__ = ("anchor", "children", "container", "expanded_at_start", "is_map", "key")

    def __init__(self, container: Any, is_map: bool, children: Any, anchor: str | None, expanded: int):
        self.container = container
        self.is_map = is_map
        self.key: Any = _NO_KEY
        self.children = children  # key -> (line, column) for a mapping; [(line, column)] for a list
        self.anchor = anchor
        self.expanded_at_start = expanded


def _plain_value(value: str, mark: yaml.Mark, loader: BlueprintLoader) -> Any:
    """A plain (unquoted) scalar as js-yaml reads it; _UNBUILT if the builder cannot."""
    tag = plain_scalar_tag(value)
    if tag == STR_TAG:
        return value
    if tag == NULL_TAG:
        return None
    if tag == BOOL_TAG:
        return value in TRUE_WORDS
    if tag == INT_TAG:
        return int_from_yaml(value)
    if tag == FLOAT_TAG:
        return float_from_yaml(value)
    if tag == TIMESTAMP_TAG:
        return loader.construct_yaml_timestamp(ScalarNode(tag, value, mark, mark))
    return _UNBUILT  # `<<`: merge keys are left to the full loader


def depth_error(path: str, line: int, column: int) -> BlueprintError:
    """The one wording of a too-deep document, whichever check found it: ours (the event
    stream, JSON brackets) or PyYAML's own limit (6.0.4's scanner stops near 1,000 levels)."""
    return BlueprintError(
        f"nesting is deeper than {MAX_DEPTH} levels",
        Location(path=path, line=line, column=column),
        hint="a blueprint needs a few levels; this looks like a generated or broken file",
    )


def _depth_error(path: str, mark: yaml.Mark) -> BlueprintError:
    return depth_error(path, mark.line + 1, mark.column + 1)


def _alias_error(path: str, mark: yaml.Mark, anchor: str, expanded: int | None, events: int) -> BlueprintError:
    where = Location(path=path, line=mark.line + 1, column=mark.column + 1)
    if expanded is None:
        return BlueprintError(
            f"the alias *{anchor} refers to a collection that contains it (a cycle)",
            where,
            hint="an alias may only repeat something already complete",
        )
    return BlueprintError(
        f"aliases expand this document to more than {expanded:,} nodes from {events:,} written ones (an alias bomb?)",
        where,
        hint="write the repeated parts out, or repeat less through aliases",
    )


def build_yaml_documents(text: str, path: str) -> tuple[list[Any], Marks] | None:
    """The non-null documents and their marks; None if the text needs the full loader.

    Raises BlueprintError for depth or alias problems, yaml.YAMLError for syntax errors
    (DuplicateKeyError for a repeated key).
    """
    loader = BlueprintLoader(text, record_marks=False)
    check_event, get_event = loader.check_event, loader.get_event
    builder = _Builder(path, loader)
    try:
        while check_event():
            # Dispatched on its exact class (cheaper than isinstance in this loop), which mypy
            # does not narrow on; each branch reads only the attributes its event kinds have.
            event: Any = get_event()
            kind = event.__class__
            builder.events += 1
            if kind is ScalarEvent:
                builder.scalar(event)
            elif kind is AliasEvent:
                builder.alias(event)
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                builder.start(event, kind is MappingStartEvent)
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                builder.end()
            elif kind is DocumentStartEvent:
                builder.anchor_objects.clear()
                builder.anchor_sizes.clear()
                builder.root = None
            elif kind is DocumentEndEvent and builder.root is not None:
                builder.documents.append(builder.root)
    finally:
        loader.dispose()
    return (builder.documents, builder.marks) if builder.building else None


class _Builder:
    """The documents built from the event stream so far, and the checks that go on over all of
    it: depth, and aliases (cycles, and how far they expand the document)."""

    def __init__(self, path: str, loader: BlueprintLoader):
        self.path = path
        self.loader = loader
        self.documents: list[Any] = []
        self.marks: Marks = {}
        self.stack: list[_Frame] = []
        self.top: _Frame | None = None  # stack[-1]
        self.anchor_objects: dict[str, Any] = {}
        self.anchor_sizes: dict[str, int | None] = {}  # expanded node count; None while still open
        self.events = 0
        self.expanded = 0
        self.building = True  # False once the document needs the full loader; the checks go on
        self.root: Any = None

    def scalar(self, event: Any) -> None:
        anchor = event.anchor
        mark = event.start_mark
        self.expanded += 1
        if anchor is not None:
            self.anchor_sizes[anchor] = 1
        if not self.building:
            return
        tag = event.tag
        if tag is None:
            obj = _plain_value(event.value, mark, self.loader) if event.implicit[0] else event.value
        elif tag == STR_TAG or tag == "!":
            obj = event.value
        else:
            obj = _UNBUILT  # an explicit tag
        if obj is _UNBUILT:
            self.building = False
            return
        if anchor is not None:
            self.anchor_objects[anchor] = obj
        self.place(obj, mark)

    def alias(self, event: Any) -> None:
        anchor = event.anchor
        mark = event.start_mark
        size = self.anchor_sizes.get(anchor, 0)
        if size is None:
            raise _alias_error(self.path, mark, anchor, None, self.events)
        self.expanded += size
        if self.expanded > ALIAS_EXPANSION_FLOOR and self.expanded > ALIAS_EXPANSION_RATIO * self.events:
            raise _alias_error(self.path, mark, anchor, self.expanded, self.events)
        if not self.building:
            return
        if anchor not in self.anchor_objects:
            self.building = False  # undefined: the full loader words the error
            return
        self.place(self.anchor_objects[anchor], mark)

    def place(self, obj: Any, mark: yaml.Mark) -> None:
        """Place a value in the collection being filled."""
        top = self.top
        if top is None:
            self.root = obj
        elif not top.is_map:
            top.container.append(obj)
            top.children.append((mark.line + 1, mark.column + 1))
        elif top.key is _NO_KEY:
            if isinstance(obj, (dict, list)):
                self.building = False  # a collection as a key
                return
            key = obj if type(obj) is str else js_property_key(obj)
            if key in top.container:
                raise DuplicateKeyError(key, top.children[key][0], mark)
            top.children[key] = (mark.line + 1, mark.column + 1)
            top.key = key
        else:
            top.container[top.key] = obj
            top.key = _NO_KEY

    def start(self, event: Any, is_map: bool) -> None:
        mark = event.start_mark
        if len(self.stack) >= MAX_DEPTH:
            raise _depth_error(self.path, mark)
        anchor = event.anchor
        if anchor is not None:
            self.anchor_sizes[anchor] = None
        container: Any = {} if is_map else []
        children: Any = {} if is_map else []
        top = self.top
        if self.building:
            if event.tag not in (None, "!", MAP_TAG if is_map else SEQ_TAG):
                self.building = False  # e.g. !!set, !!omap
            elif top is None:
                self.root = container
            elif not top.is_map:
                top.container.append(container)
                top.children.append((mark.line + 1, mark.column + 1))
            elif top.key is _NO_KEY:
                self.building = False  # a collection as a key
            else:
                top.container[top.key] = container
                top.key = _NO_KEY
            if self.building:
                self.marks[id(container)] = (mark.line + 1, mark.column + 1, children)
                if anchor is not None:
                    self.anchor_objects[anchor] = container
        self.top = _Frame(container, is_map, children, anchor, self.expanded)
        self.stack.append(self.top)
        self.expanded += 1

    def end(self) -> None:
        frame = self.stack.pop()
        self.top = self.stack[-1] if self.stack else None
        if frame.anchor is not None:
            self.anchor_sizes[frame.anchor] = self.expanded - frame.expanded_at_start
