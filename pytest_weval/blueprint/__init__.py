"""file -> typed Blueprint (pure: no pytest, no network).

Entry points:

* `load_blueprint(path, ...)`: read, check and parse one blueprint file.
* `parse_blueprint_text(text, fmt=..., rel_path=...)`: the same from text (tests, vectors).
* `load_model_defs(path)`: custom model objects by id, from a `weval_model_defs` file.
* `parse_points(should=..., should_not=...)`: rubric points written in blueprint syntax, outside
  a blueprint (the `weval` fixture's `judge`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from .build import build_blueprint
from .collections import find_collections_dir
from .ids import effective_model_id
from .loader import DEFAULT_MAX_FILE_MB, RawSource, load_source, read_blueprint_file, room_for_depth
from .model import Blueprint, BlueprintError, EvalPoint, Finding, Location, Message, ModelSpec, Prompt
from .model_defs import load_model_defs
from .points import PointContext, PointError, evaluator_points, expand_refs, normalize_points

__all__ = [
    "Blueprint",
    "BlueprintError",
    "EvalPoint",
    "Finding",
    "Location",
    "Message",
    "ModelSpec",
    "Prompt",
    "effective_model_id",
    "find_collections_dir",
    "load_blueprint",
    "load_model_defs",
    "parse_blueprint_text",
    "parse_points",
]


@lru_cache(maxsize=256)
def _collections_dir_for(folder: Path) -> Path | None:
    return find_collections_dir(folder)


def load_blueprint(
    path: str | Path,
    *,
    rel_path: str | None = None,
    display_path: str | None = None,
    collections_dir: Path | None = None,
    model_override: list[str] | None = None,
    custom_models: dict[str, dict[str, Any]] | None = None,
    max_file_mb: float = DEFAULT_MAX_FILE_MB,
    keep_unresolved_placeholders: bool = False,
) -> Blueprint:
    """Read and parse one blueprint file.

    `rel_path` is what the blueprint id derives from (relative to the `blueprints/` folder, as
    Weval's GitHub runs; default: `path` as given). `display_path` is how messages name the
    file (default: `path`). Collections come from `collections_dir`, else from the nearest
    ancestor folder with `models/` beside `blueprints/`. `model_override` (`--weval-models`)
    replaces every blueprint's model list; ids found in `custom_models` become those models.
    Raises BlueprintError, located, for a file the reference rejects.
    """
    path = Path(path)
    shown = display_path or str(path)
    if collections_dir is None:
        collections_dir = _collections_dir_for(path.parent.resolve())
    with room_for_depth():
        try:
            source = read_blueprint_file(path, display_path=shown, max_file_mb=max_file_mb)
        except OSError as exc:
            raise BlueprintError(
                f"cannot read the file: {exc.strerror or exc}",
                Location(path=shown),
                hint="check that the file exists and is readable",
            ) from None
        return build_blueprint(
            source,
            rel_path=rel_path if rel_path is not None else str(path),
            collections_dir=collections_dir,
            model_override=model_override,
            custom_models=custom_models,
            keep_unresolved_placeholders=keep_unresolved_placeholders,
        )


def parse_blueprint_text(
    text: str,
    *,
    fmt: str,
    rel_path: str,
    path: str | None = None,
    collections_dir: Path | None = None,
    model_override: list[str] | None = None,
    custom_models: dict[str, dict[str, Any]] | None = None,
    keep_unresolved_placeholders: bool = False,
) -> Blueprint:
    """Parse blueprint text (`fmt` "yaml" or "json"); nothing is read from disk except
    collections under `collections_dir` (no search for one)."""
    if fmt not in ("yaml", "json"):
        raise ValueError(f"fmt must be 'yaml' or 'json', not {fmt!r}")
    with room_for_depth():
        source: RawSource = load_source(text, fmt=fmt, path=path or rel_path)
        return build_blueprint(
            source,
            rel_path=rel_path,
            collections_dir=collections_dir,
            model_override=model_override,
            custom_models=custom_models,
            keep_unresolved_placeholders=keep_unresolved_placeholders,
        )


def parse_points(
    *,
    should: list[Any] | tuple[Any, ...] = (),
    should_not: list[Any] | tuple[Any, ...] = (),
    source: str = "inline",
    point_defs: dict[str, Any] | None = None,
) -> list[EvalPoint]:
    """Points in blueprint syntax -> the evaluator's view, as a prompt's `should`/`should_not`
    would give (docs/format.md, 'Points', 'Point definitions ($ref)' and 'Evaluator view of points'). `source` names them in messages (path and prompt id).
    A malformed point raises BlueprintError; an unknown function or a missing `$ref`
    definition sets the point's `authoring_error`, as in a blueprint."""
    ctx = PointContext(
        prompt_id=source, defs=dict(point_defs or {}), locate=lambda seq, i, name: Location(path=source, field=name)
    )
    view: list[EvalPoint] = []
    with room_for_depth():
        try:
            for items, inverted, name in ((list(should), False, "should"), (list(should_not), True, "should_not")):
                points, locations = normalize_points(items, ctx, name)
                expanded = expand_refs(points, locations, ctx)
                view += evaluator_points(expanded, locations, inverted=inverted, ctx=ctx, prompt_id=source)
        except PointError as exc:
            raise exc.as_blueprint_error() from None
    return view
