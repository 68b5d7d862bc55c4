"""Model lists: collection placeholders, custom model objects, and `--weval-models` overrides.

Follows `resolveModelCollections` with a local collections path (docs/format.md, 'Models and collections'):
strings are trimmed (and `provider : model` closed up), an all-uppercase string without `:`
such as `CORE` names `<collections>/models/CORE.json`, and the result is de-duplicated by id in
first-occurrence order. A missing collection is a located error; an empty one a warning
(docs/rulings.md, ruling 5). Ids that name a custom model from `weval_model_defs` become that model.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .model import BlueprintError, Finding, Location, ModelSpec

_SPACED_COLON = re.compile(r"\s*:\s*")


def is_placeholder(entry: Any) -> bool:
    """A collection name: a string without ':' equal to its own uppercase (`CORE`)."""
    return isinstance(entry, str) and ":" not in entry and entry.upper() == entry


def normalize_model_string(entry: str) -> str:
    """`' openai : gpt-4o '` -> `'openai:gpt-4o'` (the first colon only, as the reference)."""
    return _SPACED_COLON.sub(":", entry.strip(), count=1)


@dataclass
class ResolvedModels:
    specs: list[ModelSpec]
    # What the reference's run config holds at hash time: strings and custom objects (docs/format.md, 'Run label').
    entries: list[Any]
    findings: list[Finding] = field(default_factory=list)
    # Where each id was first named (a collection's members: where the collection is named).
    locations: dict[str, Location] = field(default_factory=dict)


def find_collections_dir(start: Path) -> Path | None:
    """The nearest ancestor of `start` with `models/` beside a `blueprints` folder (the layout
    of weval-org/configs)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "models").is_dir() and (folder / "blueprints").is_dir():
            return folder
    return None


_collection_cache: dict[tuple[str, int, int], Any] = {}


def read_collection(collections_dir: Path, name: str) -> Any:
    """The parsed JSON of `models/<name>.json` (cached by path, size and mtime); raises OSError."""
    path = collections_dir / "models" / f"{name}.json"
    stat = os.stat(path)
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _collection_cache:
        _collection_cache[key] = json.loads(path.read_text(encoding="utf-8-sig"))
    return _collection_cache[key]


def resolve_models(
    entries: list[Any],
    *,
    collections_dir: Path | None,
    locate: Callable[[int], Location],
    custom_models: dict[str, dict[str, Any]] | None = None,
    keep_unresolved_placeholders: bool = False,
    origin: str = "models",
) -> ResolvedModels:
    """Resolve a list of model entries (already validated as strings or objects with an id).

    `locate(i)` gives the location of entry i for messages; `origin` names where the list came
    from ("models", or "--weval-models" for an override).
    """
    custom_models = custom_models or {}
    findings: list[Finding] = []
    resolved: list[Any] = []
    locations: dict[str, Location] = {}
    for index, entry in enumerate(entries):
        if isinstance(entry, dict):
            resolved.append(entry)
            locations.setdefault(str(entry["id"]), locate(index))
            continue
        model_id = normalize_model_string(entry)
        if model_id != entry:
            findings.append(
                Finding(
                    message=f"model entry '{entry}' has stray whitespace; read as '{model_id}'",
                    location=locate(index),
                    code="model-whitespace",
                )
            )
        if not is_placeholder(model_id) or model_id in custom_models:
            resolved.append(model_id)
            locations.setdefault(model_id, locate(index))
            continue
        if collections_dir is None:
            if keep_unresolved_placeholders:
                resolved.append(model_id)  # as the reference without --collections-repo-path
                continue
            raise BlueprintError(
                f"model collection '{model_id}' cannot be resolved: no collections folder "
                "(a folder with models/ beside blueprints/) was found",
                locate(index),
                hint=f"set ini weval_collections_dir to a folder holding models/{model_id}.json, "
                "or pass --weval-models=provider:model,...",
            )
        members = _collection_members(model_id, collections_dir, locate(index), findings, origin)
        resolved.extend(members)
        for member in members:
            locations.setdefault(member, locate(index))
    unique: dict[str, Any] = {}
    for entry in resolved:
        unique.setdefault(entry["id"] if isinstance(entry, dict) else entry, entry)
    entries_out = list(unique.values())
    specs = [
        ModelSpec(id=model_id, custom=entry)
        if isinstance(entry, dict)
        else ModelSpec(id=model_id, custom=custom_models[model_id])
        if model_id in custom_models
        else _plain_model(model_id)
        for model_id, entry in unique.items()
    ]
    return ResolvedModels(specs=specs, entries=entries_out, findings=findings, locations=locations)


@lru_cache(maxsize=4096)
def _plain_model(model_id: str) -> ModelSpec:
    """Plain ids are shared (ModelSpec is frozen): a corpus repeats the same CORE list."""
    return ModelSpec(id=model_id)


def _collection_members(
    name: str, collections_dir: Path, where: Location, findings: list[Finding], origin: str
) -> list[str]:
    path = collections_dir / "models" / f"{name}.json"
    try:
        members = read_collection(collections_dir, name)
    except FileNotFoundError:
        raise BlueprintError(
            f"model collection '{name}' not found: {path} does not exist",
            where,
            hint=f"add models/{name}.json (a JSON list of model ids) or pass --weval-models=...",
        ) from None
    except (OSError, ValueError) as exc:
        raise BlueprintError(
            f"model collection '{name}' cannot be read from {path}: {exc}",
            where,
            hint="a collection file is a JSON list of 'provider:model' strings",
        ) from None
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise BlueprintError(
            f"Invalid format for local model collection '{name}' at {path}. Expected a JSON array of strings.",
            where,
            hint="a collection file is a JSON list of 'provider:model' strings",
        )
    if not members:
        findings.append(
            Finding(
                message=f"model collection '{name}' ({path}) is empty, so {origin} gives no models from it",
                location=where,
                code="empty-collection",
            )
        )
    return members
