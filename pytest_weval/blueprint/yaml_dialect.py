"""PyYAML's C loader, adjusted to read YAML as js-yaml 4 does (docs/rulings.md, ruling 1; docs/format.md, 'YAML dialect').

js-yaml's default schema is YAML 1.2 core plus merge keys and timestamps. PyYAML implements
YAML 1.1, which differs in three ways that change blueprints: `yes`/`no`/`on`/`off` are
booleans there, `1:30` is a base-60 number, and a repeated key silently wins. Here only
`true`/`false` (True/TRUE/False/FALSE) are booleans, numbers follow js-yaml's int and float
rules, and a repeated key is an error naming both lines.

Most files are built straight from the event stream by yaml_build.py, which uses the rules
defined here. `BlueprintLoader` (PyYAML's constructor in this dialect) reads the rest: explicit
tags and merge keys. Both record where every mapping and sequence starts, and where each key
and list item starts, in a side table keyed by `id()` of the built object, so that the parser
can point at a prompt, a point or a field without a second pass.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import js_property_key

# id(dict or list) -> (line, column, child marks). Child marks are {key: (line, column)} for a
# mapping and [(line, column), ...] for a sequence. Lines and columns are 1-based.
Marks = dict[int, tuple[int, int, Any]]

MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKeyError(ConstructorError, WevalError):
    """A mapping repeats a key (js-yaml rejects it; PyYAML would keep the last value)."""

    def __init__(self, key: str, first_line: int, mark: yaml.Mark):
        super().__init__(None, None, f"duplicated mapping key '{key}' (first used on line {first_line})", mark)
        self.key = key
        self.first_line = first_line


class _Resolver(yaml.resolver.BaseResolver):
    """Implicit tags of js-yaml 4's default schema (YAML 1.2 core + merge + timestamp)."""


# js-yaml int: 0b/0o/0x with `_` separators; decimal with `_`; a leading 0 is still decimal.
INT_PATTERN = re.compile(r"^[-+]?(?:0b[01_]*[01]|0x[0-9a-fA-F_]*[0-9a-fA-F]|0o[0-7_]*[0-7]|[0-9](?:[0-9_]*[0-9])?)$")
FLOAT_PATTERN = re.compile(
    r"^(?:[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))(?<!_)$"
)
TIMESTAMP_PATTERN = re.compile(
    r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
    (?:[Tt]|[ \t]+)[0-9][0-9]?
    :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
    (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    re.X,
)
NULL_WORDS = frozenset(("", "~", "null", "Null", "NULL"))
TRUE_WORDS = frozenset(("true", "True", "TRUE"))
BOOL_WORDS = TRUE_WORDS | frozenset(("false", "False", "FALSE"))

NULL_TAG = "tag:yaml.org,2002:null"
BOOL_TAG = "tag:yaml.org,2002:bool"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
STR_TAG = "tag:yaml.org,2002:str"

_Resolver.yaml_implicit_resolvers = {}
_Resolver.add_implicit_resolver(NULL_TAG, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_Resolver.add_implicit_resolver(BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Resolver.add_implicit_resolver(INT_TAG, INT_PATTERN, list("-+0123456789"))
_Resolver.add_implicit_resolver(FLOAT_TAG, FLOAT_PATTERN, list("-+0123456789."))
_Resolver.add_implicit_resolver(MERGE_TAG, re.compile(r"^(?:<<)$"), ["<"])
_Resolver.add_implicit_resolver(TIMESTAMP_TAG, TIMESTAMP_PATTERN, list("0123456789"))


def plain_scalar_tag(value: str) -> str:
    """The tag `_Resolver` gives a plain scalar, without its generic machinery (hot path)."""
    if not value:
        return NULL_TAG
    first = value[0]
    if first in "nN~":
        return NULL_TAG if value in NULL_WORDS else STR_TAG
    if first in "tTfF":
        return BOOL_TAG if value in BOOL_WORDS else STR_TAG
    if first in "-+0123456789.":
        if INT_PATTERN.match(value):
            return INT_TAG
        if FLOAT_PATTERN.match(value):
            return FLOAT_TAG
        if TIMESTAMP_PATTERN.match(value):
            return TIMESTAMP_TAG
        return STR_TAG
    if value == "<<":
        return MERGE_TAG
    return STR_TAG


def int_from_yaml(text: str) -> int:
    text = text.replace("_", "")
    sign = -1 if text[0] == "-" else 1
    if text[0] in "+-":
        text = text[1:]
    base = {"0b": 2, "0o": 8, "0x": 16}.get(text[:2])
    return sign * (int(text[2:], base) if base else int(text, 10))


def float_from_yaml(text: str) -> float:
    """js-yaml's float: `_` dropped, `.inf`/`.nan` in any listed case, else parseFloat."""
    text = text.replace("_", "").lower()
    sign = -1.0 if text[0] == "-" else 1.0
    if text[0] in "+-":
        text = text[1:]
    if text == ".inf":
        return sign * float("inf")
    if text == ".nan":
        return float("nan")
    return sign * float(text)


class BlueprintLoader(yaml.CSafeLoader):
    """CSafeLoader with js-yaml's resolution, duplicate-key errors and a marks side table."""

    yaml_implicit_resolvers = _Resolver.yaml_implicit_resolvers

    def __init__(self, stream: str, record_marks: bool = True):
        super().__init__(stream)
        self.marks: Marks = {}
        self.record_marks = record_marks

    # --- scalars --------------------------------------------------------------------------

    def construct_yaml_int(self, node: ScalarNode) -> int:
        return int_from_yaml(self.construct_scalar(node))

    def construct_yaml_float(self, node: ScalarNode) -> float:
        return float_from_yaml(self.construct_scalar(node))

    def construct_yaml_set(self, node: MappingNode):
        # js-yaml builds !!set as an object whose values are null.
        data: dict[str, Any] = {}
        yield data
        self._fill_mapping(node, data)

    # --- collections ----------------------------------------------------------------------

    def construct_yaml_seq(self, node: SequenceNode):
        data: list[Any] = []
        if self.record_marks:
            mark = node.start_mark
            self.marks[id(data)] = (
                mark.line + 1,
                mark.column + 1,
                [(n.start_mark.line + 1, n.start_mark.column + 1) for n in node.value],
            )
        yield data
        data.extend(self.construct_sequence(node))

    def construct_yaml_map(self, node: MappingNode):
        data: dict[str, Any] = {}
        yield data
        self._fill_mapping(node, data)

    def _fill_mapping(self, node: MappingNode, data: dict[str, Any]) -> None:
        own_count = len(node.value)
        if any(key_node.tag == MERGE_TAG for key_node, _ in node.value):
            own_count -= sum(1 for key_node, _ in node.value if key_node.tag == MERGE_TAG)
            self.flatten_mapping(node)  # merged pairs first, then the mapping's own pairs
        first_own = len(node.value) - own_count
        key_marks: dict[str, tuple[int, int]] = {}
        own_key_lines: dict[str, int] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            if isinstance(key_node, ScalarNode):
                key = self.construct_object(key_node)
            else:
                key = self.construct_object(key_node, deep=True)
            if type(key) is not str:
                key = js_property_key(key)
            mark = key_node.start_mark
            line = mark.line + 1
            # A key may override one brought in by a `<<` merge, but not repeat its own mapping's.
            if index >= first_own:
                if key in own_key_lines:
                    raise DuplicateKeyError(key, own_key_lines[key], mark)
                own_key_lines[key] = line
            key_marks[key] = (line, mark.column + 1)
            data[key] = self.construct_object(value_node)
        if self.record_marks:
            start = node.start_mark
            self.marks[id(data)] = (start.line + 1, start.column + 1, key_marks)


for _tag, _method in (
    ("tag:yaml.org,2002:int", BlueprintLoader.construct_yaml_int),
    ("tag:yaml.org,2002:float", BlueprintLoader.construct_yaml_float),
    ("tag:yaml.org,2002:set", BlueprintLoader.construct_yaml_set),
    ("tag:yaml.org,2002:seq", BlueprintLoader.construct_yaml_seq),
    ("tag:yaml.org,2002:map", BlueprintLoader.construct_yaml_map),
):
    BlueprintLoader.add_constructor(_tag, _method)


def node_marks(node: Any, value: Any, marks: Marks) -> None:
    """Record marks for `value` (built by another parser, e.g. json) from a composed YAML node
    of the same text, walking both in step. Used for JSON files, which YAML also reads."""
    stack = [(node, value)]
    while stack:
        node, value = stack.pop()
        start = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, MappingNode) and isinstance(value, dict):
            children: dict[str, tuple[int, int]] = {}
            last_value_node: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if isinstance(key_node, ScalarNode):
                    # JSON.parse keeps the last of repeated keys, and so does the walk.
                    children[key_node.value] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                    last_value_node[key_node.value] = value_node
            marks[id(value)] = (start[0], start[1], children)
            stack.extend((n, value[k]) for k, n in last_value_node.items() if k in value)
        elif isinstance(node, SequenceNode) and isinstance(value, list):
            marks[id(value)] = (
                start[0],
                start[1],
                [(n.start_mark.line + 1, n.start_mark.column + 1) for n in node.value],
            )
            stack.extend(zip(node.value, value))
