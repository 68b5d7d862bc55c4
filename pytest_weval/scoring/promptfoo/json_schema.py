"""JSON Schema checks for ``is-json`` / ``contains-json`` with a schema value.

promptfoo validates with Ajv (draft-07, strict mode, ajv-formats). This is our own validator for
the keywords such schemas use: types, enum/const, objects (properties, required,
additionalProperties, patternProperties, property counts), arrays (items, additionalItems,
lengths, uniqueItems), strings (lengths in code points, ECMAScript ``pattern``, common
formats), numbers (bounds, multipleOf), the combinators and local ``$ref``s. A keyword outside
that set is a ``SchemaError`` (Ajv's strict mode refuses unknown keywords too), so a schema is
never checked only in part. Failure messages follow Ajv's shape (``data/name must be string``);
their wording is ours.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
import uuid
from collections.abc import Callable
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import is_number, js_json, js_number_str
from pytest_weval.scoring import regex_js

__all__ = ["SchemaError", "validate"]


class SchemaError(WevalError):
    """The schema cannot be used (malformed, or a keyword we do not check)."""


_ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "default", "examples", "definitions", "$defs"}
_CHECKED = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "patternProperties",
    "minProperties", "maxProperties", "items", "additionalItems", "minItems", "maxItems", "uniqueItems",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "anyOf", "allOf", "oneOf", "not", "$ref",
}  # fmt: skip


def _date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text))


_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|[+-]\d{2}(:?\d{2})?)", re.IGNORECASE)


def _time(text: str) -> bool:
    match = _TIME.fullmatch(text)
    if match is None:
        return False
    return int(match.group(1)) < 24 and int(match.group(2)) < 60 and int(match.group(3)) <= 60


def _date_time(text: str) -> bool:
    parts = re.split(r"[tT ]", text, maxsplit=1)
    return len(parts) == 2 and _date(parts[0]) and _time(parts[1])


def _ip(version: int) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            return ipaddress.ip_address(text).version == version
        except ValueError:
            return False

    return check


def _uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return bool(re.fullmatch(r"(urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}", text, re.IGNORECASE))


_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _date,
    "time": _time,
    "date-time": _date_time,
    "email": lambda t: bool(re.fullmatch(r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", t, re.IGNORECASE)),
    "uri": lambda t: bool(re.fullmatch(r"[a-z][a-z0-9+\-.]*:[^\s]*", t, re.IGNORECASE)),
    "uuid": _uuid,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "hostname": lambda t: bool(re.fullmatch(r"(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?", t, re.IGNORECASE)),
}  # fmt: skip


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, kind: str) -> bool:
    actual = _type_of(value)
    if kind == "integer":
        return actual == "number" and math.isfinite(value) and float(value).is_integer()
    return actual == kind


def _equal(a: Any, b: Any) -> bool:
    return js_json(_canonical(a)) == js_json(_canonical(b))


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if is_number(value) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    return value


def _code_points(text: str) -> int:
    return len(text)


class _Validator:
    def __init__(self, root: Any):
        self.root = root

    def errors(self, schema: Any, value: Any, path: str) -> list[str]:
        if schema is True or schema == {}:
            return []
        if schema is False:
            return [f"{path} boolean schema is false"]
        if not isinstance(schema, dict):
            raise SchemaError(f"schema is invalid: {path} must be an object or a boolean")
        for key in schema:
            if key not in _CHECKED and key not in _ANNOTATIONS:
                raise SchemaError(
                    f"strict mode: unknown keyword: {key!r} (docs/promptfoo.md lists the keywords checked)"
                )
        out: list[str] = []
        if "$ref" in schema:
            out += self.errors(self._resolve(schema["$ref"]), value, path)
        if "type" in schema:
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_has_type(value, k) for k in kinds):
                return out + [f"{path} must be {','.join(kinds)}"]
        if "enum" in schema and not any(_equal(value, option) for option in schema["enum"]):
            out.append(f"{path} must be equal to one of the allowed values")
        if "const" in schema and not _equal(value, schema["const"]):
            out.append(f"{path} must be equal to constant")
        for key in ("allOf", "anyOf", "oneOf"):
            if key in schema:
                results = [self.errors(sub, value, path) for sub in schema[key]]
                passed = sum(1 for r in results if not r)
                if key == "allOf":
                    out += [e for r in results for e in r]
                elif key == "anyOf" and passed == 0:
                    out.append(f"{path} must match a schema in anyOf")
                elif key == "oneOf" and passed != 1:
                    out.append(f"{path} must match exactly one schema in oneOf")
        if "not" in schema and not self.errors(schema["not"], value, path):
            out.append(f"{path} must NOT be valid")
        if isinstance(value, dict):
            out += self._object(schema, value, path)
        elif isinstance(value, list):
            out += self._array(schema, value, path)
        elif isinstance(value, str):
            out += self._string(schema, value, path)
        elif is_number(value) and not isinstance(value, bool):
            out += self._number(schema, value, path)
        return out

    def _resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SchemaError(f"can't resolve reference {ref} (only references inside the schema, '#/...', are)")
        node = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise SchemaError(f"can't resolve reference {ref}")
        return node

    def _object(self, schema: dict[str, Any], value: dict[str, Any], path: str) -> list[str]:
        out: list[str] = []
        for name in schema.get("required", []):
            if name not in value:
                out.append(f"{path} must have required property '{name}'")
        properties = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        for key, item in value.items():
            matched = False
            if key in properties:
                matched = True
                out += self.errors(properties[key], item, f"{path}/{key}")
            for pattern, sub in patterns.items():
                if _search(pattern, key):
                    matched = True
                    out += self.errors(sub, item, f"{path}/{key}")
            extra = schema.get("additionalProperties", True)
            if not matched and extra is not True:
                if extra is False:
                    out.append(f"{path} must NOT have additional properties")
                else:
                    out += self.errors(extra, item, f"{path}/{key}")
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            out.append(f"{path} must NOT have fewer than {schema['minProperties']} properties")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            out.append(f"{path} must NOT have more than {schema['maxProperties']} properties")
        return out

    def _array(self, schema: dict[str, Any], value: list[Any], path: str) -> list[str]:
        out: list[str] = []
        items = schema.get("items")
        if isinstance(items, list):
            for index, (sub, item) in enumerate(zip(items, value, strict=False)):
                out += self.errors(sub, item, f"{path}/{index}")
            extra = schema.get("additionalItems", True)
            if len(value) > len(items) and extra is not True:
                if extra is False:
                    out.append(f"{path} must NOT have more than {len(items)} items")
                else:
                    for index in range(len(items), len(value)):
                        out += self.errors(extra, value[index], f"{path}/{index}")
        elif items is not None:
            for index, item in enumerate(value):
                out += self.errors(items, item, f"{path}/{index}")
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(f"{path} must NOT have fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(f"{path} must NOT have more than {schema['maxItems']} items")
        if schema.get("uniqueItems"):
            seen = [js_json(_canonical(v)) for v in value]
            if len(set(seen)) != len(seen):
                out.append(f"{path} must NOT have duplicate items")
        return out

    def _string(self, schema: dict[str, Any], value: str, path: str) -> list[str]:
        out: list[str] = []
        if "minLength" in schema and _code_points(value) < schema["minLength"]:
            out.append(f"{path} must NOT have fewer than {schema['minLength']} characters")
        if "maxLength" in schema and _code_points(value) > schema["maxLength"]:
            out.append(f"{path} must NOT have more than {schema['maxLength']} characters")
        if "pattern" in schema and not _search(schema["pattern"], value, unicode=True):
            out.append(f'{path} must match pattern "{schema["pattern"]}"')
        if "format" in schema:
            check = _FORMATS.get(schema["format"])
            if check is None:
                raise SchemaError(f'unknown format "{schema["format"]}" ignored in schema at path "{path}"')
            if not check(value):
                out.append(f'{path} must match format "{schema["format"]}"')
        return out

    def _number(self, schema: dict[str, Any], value: float, path: str) -> list[str]:
        out: list[str] = []
        bounds = (
            ("minimum", lambda b: value >= b, ">="),
            ("maximum", lambda b: value <= b, "<="),
            ("exclusiveMinimum", lambda b: value > b, ">"),
            ("exclusiveMaximum", lambda b: value < b, "<"),
        )
        for key, holds, sign in bounds:
            if key in schema and is_number(schema[key]) and not holds(schema[key]):
                out.append(f"{path} must be {sign} {js_number_str(schema[key])}")
        step = schema.get("multipleOf")
        if is_number(step) and step > 0:
            quotient = value / step
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                out.append(f"{path} must be multiple of {js_number_str(step)}")
        return out


def _search(pattern: Any, text: str, unicode: bool = False) -> bool:
    if not isinstance(pattern, str):
        raise SchemaError(f"pattern must be a string, not {js_json(pattern)}")
    try:
        return regex_js.TextMatcher(text).test(pattern, "u" if unicode else "")
    except regex_js.RegexSyntaxError as exc:
        raise SchemaError(str(exc)) from None
    except regex_js.RegexTimeout as exc:
        raise SchemaError(f"pattern {pattern!r}: {exc}") from None


def validate(schema: Any, instance: Any) -> str | None:
    """None when ``instance`` satisfies ``schema``, else the failures, comma-separated (as Ajv's
    ``errorsText``). Raises ``SchemaError`` for a schema we cannot check."""
    errors = _Validator(schema).errors(schema, instance, "data")
    return ", ".join(errors) if errors else None
