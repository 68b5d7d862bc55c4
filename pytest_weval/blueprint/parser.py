"""Raw documents -> the reference's normalized config (`parseAndNormalizeBlueprint`, docs/format.md, 'Layouts' to 'Prompt ids').

The output dict equals what the reference's parser returns, serialized (absent keys dropped).
Every error the reference raises for the file is a BlueprintError located at the field that
caused it. Where the reference silently drops something (unknown prompt keys, a shadowed
alias, a points list that is not a list) or rejects the whole file for one point (a `$ref` to
a missing definition, docs/rulings.md, ruling 9), we keep going and record a Finding instead.

This module finds the header and the prompts (docs/format.md, 'Layouts'); header.py and prompts.py normalize them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_weval.jsvalues import ABSENT, js_or, js_typeof, truthy

from .header import check_external_services, normalize_header
from .loader import RawSource
from .locate import Locator
from .model import BlueprintError, Finding, Location
from .prompts import ParsedPrompt, normalize_prompt, report_duplicate_ids

_PROMPT_LIKE_KEYS = ("prompt", "messages", "should", "ideal", "points")


@dataclass
class ParsedConfig:
    config: dict[str, Any]  # the reference parser's output
    header: dict[str, Any]  # the header as written (never modified), to locate its fields
    prompts: list[ParsedPrompt]
    findings: list[Finding] = field(default_factory=list)


def parse_config(source: RawSource) -> ParsedConfig:
    loc = Locator(source)
    findings: list[Finding] = []
    header, raw_prompts = _split_documents(source, loc, findings)
    defs = _definitions(header)
    config = normalize_header(header, loc, findings)
    prompts = [
        normalize_prompt(p, index, where, config, defs, loc, findings) for index, (p, where) in enumerate(raw_prompts)
    ]
    config["prompts"] = [p.raw for p in prompts]
    check_external_services(config, loc)
    report_duplicate_ids(prompts, findings)
    return ParsedConfig(config=config, header=header, prompts=prompts, findings=findings)


def _split_documents(
    source: RawSource, loc: Locator, findings: list[Finding]
) -> tuple[dict[str, Any], list[tuple[Any, Location]]]:
    docs = source.documents
    first = docs[0]
    if len(docs) == 1:
        if isinstance(first, list):
            return {}, _items(first, loc)
        if isinstance(first, dict) and isinstance(first.get("prompts"), list):
            return first, _items(first["prompts"], loc)
        if source.fmt == "json" and isinstance(first, dict):
            listed = js_or(first.get("prompts", ABSENT), [])
            if not isinstance(listed, list):
                raise BlueprintError(
                    f"'prompts' must be a list. Found: {js_typeof(listed)}",
                    loc.key(first, "prompts"),
                    hint="write the prompts as a JSON array",
                )
            return first, _items(listed, loc)
        if isinstance(first, dict):
            if any(truthy(first.get(k)) for k in _PROMPT_LIKE_KEYS):
                return {}, [(first, loc.at(first))]  # a single prompt
            return first, []
        raise BlueprintError(
            f"Invalid YAML format: Document must be an object or array. Found: {js_typeof(first)}",
            Location(path=source.path, line=1, column=1),
            hint="a blueprint is a header mapping followed by prompts, or a list of prompts",
        )
    is_header = isinstance(first, dict) and not any(truthy(first.get(k)) for k in (*_PROMPT_LIKE_KEYS, "expect"))
    prompts: list[tuple[Any, Location]] = []
    for doc in docs[1:] if is_header else docs:
        if isinstance(doc, list):
            prompts.extend(_items(doc, loc))
        else:
            prompts.append((doc, loc.at(doc)))
    if not is_header:
        return {}, prompts
    # docs/format.md, 'Layouts': a first document with only promptText/should_not/expects/... is read as the header.
    leaked = [k for k in ("promptText", "should_not", "expects", "expectations") if k in first]
    if leaked:
        findings.append(
            Finding(
                message=f"the first document has prompt keys ({', '.join(leaked)}) but is read as the "
                "header, so that prompt is lost; add `prompt:` to it or move it after a header",
                location=loc.key(first, leaked[0]),
                code="prompt-in-header",
            )
        )
    return first, prompts


def _items(seq: list[Any], loc: Locator) -> list[tuple[Any, Location]]:
    return [(item, loc.item(seq, i)) for i, item in enumerate(seq)]


def _definitions(header: dict[str, Any]) -> dict[str, Any]:
    """defsMap = `{...(point_defs || defs)}`."""
    defs = js_or(header.get("point_defs", ABSENT), header.get("defs", ABSENT))
    if isinstance(defs, dict):
        return dict(defs)
    if isinstance(defs, (list, str)):
        return {str(i): v for i, v in enumerate(defs)}
    return {}
