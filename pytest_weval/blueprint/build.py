"""Raw source -> typed Blueprint: parse, apply the CLI's steps, resolve models, hash, type."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_weval.jsvalues import is_number, js_string, truthy

from .checks import prompt_validation_error, run_axes
from .collections import resolve_models
from .ids import blueprint_id_from_path, content_hash
from .loader import RawSource
from .locate import Locator
from .model import Blueprint, BlueprintError, Finding, Location, Message, Prompt
from .parser import parse_config
from .prompts import ParsedPrompt


def build_blueprint(
    source: RawSource,
    *,
    rel_path: str,
    collections_dir: Path | None,
    model_override: list[str] | None = None,
    custom_models: dict[str, dict[str, Any]] | None = None,
    keep_unresolved_placeholders: bool = False,
) -> Blueprint:
    """Parse, apply the CLI's steps, resolve models, hash, and type (call inside room_for_depth)."""
    parsed = parse_config(source)
    loc = Locator(source)
    header = parsed.header
    findings: list[Finding] = list(parsed.findings)

    blueprint_id = blueprint_id_from_path(rel_path.replace("\\", "/") if sys.platform == "win32" else rel_path)
    if blueprint_id.endswith("__"):
        raise BlueprintError(
            f"Blueprint ID '{blueprint_id}' cannot end with '__' (reserved for directory listings).",
            Location(path=source.path),
            hint="rename the file so that its name does not end in an underscore",
        )
    axes = run_axes(
        parsed.config,
        blueprint_id=blueprint_id,
        header=header,
        locate=lambda key: loc.key(header, key),
        prompt_locations=[p.location for p in parsed.prompts],
    )
    effective = axes.effective

    entries, locate, origin = _model_entries(effective, header, loc, source.path, model_override)
    models = resolve_models(
        entries,
        collections_dir=collections_dir,
        locate=locate,
        custom_models=custom_models,
        keep_unresolved_placeholders=keep_unresolved_placeholders,
        origin=origin,
    )
    findings += models.findings
    effective["models"] = models.entries
    hashed = content_hash(
        effective
    )  # before models become ids: custom objects hash whole (docs/format.md, 'Run label')
    effective["models"] = [m.id for m in models.specs]

    prompts = []
    for parsed_prompt in parsed.prompts:
        error = prompt_validation_error(parsed_prompt.raw)
        if error:
            findings.append(Finding(message=error, location=parsed_prompt.location, code="invalid-prompt"))
        prompts.append(_typed_prompt(parsed_prompt, error))

    return Blueprint(
        path=source.path,
        id=blueprint_id,
        title=effective["title"],
        description=_optional_text(effective.get("description")),
        models=tuple(models.specs),
        model_locations={spec.id: models.locations[spec.id] for spec in models.specs if spec.id in models.locations},
        temperatures=tuple(axes.temperatures),
        systems=tuple(axes.systems),
        sets_temperature=axes.sets_temperature,
        tags=tuple(axes.tags),
        threshold=_header_threshold(header, loc),
        evaluation_config=_mapping(effective.get("evaluationConfig")),
        external_services=_mapping(effective.get("externalServices")),
        prompts=tuple(prompts),
        config=parsed.config,
        content_hash=hashed,
        findings=tuple(findings),
        no_cache=truthy(effective.get("noCache")),
        effective_config=effective,
    )


def _model_entries(
    effective: dict[str, Any], header: dict[str, Any], loc: Locator, path: str, model_override: list[str] | None
) -> tuple[list[Any], Callable[[int], Location], str]:
    """The model list to resolve, how to locate its entries in messages, and its name."""
    if model_override:
        return list(model_override), lambda i: Location(path=path, field=f"--weval-models[{i}]"), "--weval-models"
    written = header.get("models")
    if isinstance(written, list) and written:
        return effective["models"], lambda i: loc.item(written, i, f"models[{i}]"), "models"

    def default_location(_: int) -> Location:  # the ["CORE"] default
        if "models" in header:
            return loc.key(header, "models")
        return Location(path=path, line=1, column=1, field="models (default [CORE])")

    return effective["models"], default_location, "models"


def _typed_prompt(parsed: ParsedPrompt, validation_error: str | None) -> Prompt:
    raw = parsed.raw
    return Prompt(
        id=js_string(raw["id"]),
        index=parsed.index,
        messages=tuple(_messages(raw.get("messages"))),
        ideal=_optional_text(raw.get("idealResponse")),
        description=_optional_text(raw.get("description")),
        citation=raw.get("citation"),
        has_system="system" in raw,
        system=raw.get("system"),
        temperature=raw.get("temperature"),
        weight=raw.get("weight"),
        no_cache=raw.get("noCache", False),
        threshold=parsed.threshold,
        render_as=raw["render_as"],
        points=tuple(parsed.points),
        validation_error=validation_error,
        location=parsed.location,
        raw=raw,
    )


def _messages(messages: Any) -> list[Message]:
    """Typed messages; malformed ones are left out (validation has already said why)."""
    if not isinstance(messages, list):
        return []
    return [
        Message(role=m["role"], content=m.get("content"))
        for m in messages
        if isinstance(m, dict)
        and isinstance(m.get("role"), str)
        and (m.get("content") is None or isinstance(m.get("content"), str))
    ]


def _optional_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else js_string(value)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _header_threshold(header: dict[str, Any], loc: Locator) -> float | None:
    """Our extension (docs/rulings.md, ruling 8): the blueprint's pass mark, a number in [0, 1]."""
    value = header.get("threshold")
    if value is None:
        return None
    if not is_number(value) or not 0 <= value <= 1:
        raise BlueprintError(
            f"'threshold' must be a number between 0 and 1. Found {js_string(value)}.",
            loc.key(header, "threshold"),
            hint="e.g. threshold: 0.7",
        )
    return float(value)
