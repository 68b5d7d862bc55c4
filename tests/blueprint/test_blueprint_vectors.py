"""Every case of vectors/parser.json (docs/vectors.md, 'parser.json'), run through our parser.

Where we differ from the reference on purpose, the test says so and asserts our behaviour:

* should_not alternative paths are `not_path_<i>` (docs/rulings.md, ruling 15), the vectors say `path_<i>`;
* a `$ref` to a missing definition is a finding plus an erroring point, not a file error
  (docs/rulings.md, ruling 9);
* prompt validation is per prompt (docs/rulings.md, ruling 3): the vector's single `runValidation` is the
  first failing prompt's message;
* JSON syntax errors are worded by Python's json module, not V8.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from blueprint_helpers import SPEC_DIR, write_collections

from pytest_weval.blueprint import BlueprintError, parse_blueprint_text
from pytest_weval.blueprint.model import Blueprint, EvalPoint

VECTOR_FILE = SPEC_DIR / "vectors" / "parser.json"
if not VECTOR_FILE.exists():
    pytest.skip(f"parser vectors not found at {VECTOR_FILE}", allow_module_level=True)

VECTORS: list[dict[str, Any]] = json.loads(VECTOR_FILE.read_text(encoding="utf-8"))
MISSING_REF_CASES = {"defs-missing.yml"}


def _parse(case: dict[str, Any], tmp_path: Path) -> Blueprint:
    collections = case.get("collections")
    return parse_blueprint_text(
        case["yaml"],
        fmt=case["format"],
        rel_path=case["filename"],
        collections_dir=write_collections(tmp_path, collections) if collections else None,
        # Without `collections` the vectors keep placeholders literal, as the reference does
        # when no collections path is given.
        keep_unresolved_placeholders=not collections,
    )


def _vector_shape(point: EvalPoint) -> dict[str, Any]:
    shape: dict[str, Any] = {}
    if point.text is not None:
        shape["text"] = point.text
    if point.fn is not None:
        shape["fn"] = point.fn
    if point.has_args:
        shape["fnArgs"] = point.fn_args
    shape["multiplier"] = point.multiplier
    if point.citation is not None:
        shape["citation"] = point.citation
    shape["pathId"] = point.path_id
    shape["isInverted"] = point.is_inverted
    shape["displayText"] = point.display_text
    return shape


def _our_path_ids(expected_points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The vector's evaluator view with docs/rulings.md, ruling 15 applied: should_not paths are
    `not_path_<i>` (the reference's `path_<i>` merges them with should paths)."""
    adjusted = []
    for point in expected_points:
        point = dict(point)
        if point["isInverted"] and point["pathId"]:
            point["pathId"] = "not_" + point["pathId"]
        adjusted.append(point)
    return adjusted


ERROR_CASES = [c for c in VECTORS if c["expected"] == "error"]
OK_CASES = [c for c in VECTORS if c["expected"] != "error"]


@pytest.mark.parametrize("case", OK_CASES, ids=[f"{VECTORS.index(c)}-{c['filename']}" for c in OK_CASES])
def test_vector(case: dict[str, Any], tmp_path: Path) -> None:
    expected = case["expected"]
    blueprint = _parse(case, tmp_path)

    assert json.loads(json.dumps(blueprint.config)) == expected["config"]
    assert blueprint.id == expected["blueprintId"]
    assert blueprint.title == expected["title"]
    assert [m.id for m in blueprint.models] == expected["models"]
    assert blueprint.content_hash == expected["contentHash"]

    points = {p.id: [_vector_shape(pt) for pt in p.points] for p in blueprint.prompts}
    assert points == {pid: _our_path_ids(pts) for pid, pts in expected["evaluatorPoints"].items()}
    assert all(pt.authoring_error is None for p in blueprint.prompts for pt in p.points)

    # docs/rulings.md, ruling 3: validation is per prompt; the reference stops at the first failure.
    failures = [p.validation_error for p in blueprint.prompts if p.validation_error]
    assert ("error: " + failures[0] if failures else "ok") == expected["runValidation"]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[f"{VECTORS.index(c)}-{c['filename']}" for c in ERROR_CASES])
def test_error_vector(case: dict[str, Any], tmp_path: Path) -> None:
    if case["filename"] in MISSING_REF_CASES:
        # Deliberate deviation (docs/rulings.md, ruling 9): a missing definition does not reject the file;
        # the point errors (so the prompt's items do) and a finding names the line.
        blueprint = _parse(case, tmp_path)
        (point,) = blueprint.prompts[0].points
        assert point.authoring_error == case["errorMessage"]
        (finding,) = [f for f in blueprint.findings if f.code == "undefined-ref"]
        assert finding.message == case["errorMessage"] and finding.location.line == 4
        return

    with pytest.raises(BlueprintError) as caught:
        _parse(case, tmp_path)
    error = caught.value
    assert error.location.path == case["filename"]
    if case["format"] == "json" and case["errorMessage"].startswith("Failed to parse JSON"):
        # V8 and Python word JSON syntax errors differently; both name the spot.
        assert error.message.startswith("Failed to parse JSON blueprint: ")
        assert (error.location.line, error.location.column) == (1, 33)
    else:
        assert error.message == case["errorMessage"]
    if "empty" not in case["errorMessage"]:
        assert error.location.line > 0, "every parse error names its line"
