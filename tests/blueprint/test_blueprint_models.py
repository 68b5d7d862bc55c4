"""Model lists: collections (docs/format.md, 'Models and collections'; docs/rulings.md, ruling 5), overrides, custom models (docs/rulings.md, ruling 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from blueprint_helpers import write_collections

from pytest_weval.blueprint import (
    BlueprintError,
    find_collections_dir,
    load_blueprint,
    load_model_defs,
    parse_blueprint_text,
)
from pytest_weval.blueprint.model import ModelSpec

CUSTOM = {"id": "local-llm", "url": "http://127.0.0.1:8080/v1", "modelName": "smollm2", "inherit": "openai"}


def write(repo: Path, rel: str, text: str) -> Path:
    path = repo / "blueprints" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def ids(models: tuple[ModelSpec, ...]) -> list[str]:
    return [m.id for m in models]


def test_default_core_is_resolved_from_the_nearest_collections_folder(configs_repo: Path) -> None:
    path = write(configs_repo, "sub/dir/x.yml", "- prompt: hi\n")
    assert find_collections_dir(path.parent) == configs_repo
    blueprint = load_blueprint(path, rel_path="sub/dir/x.yml")
    assert ids(blueprint.models) == ["openai:gpt-4o-mini", "anthropic:claude-3-5-haiku"]
    assert blueprint.effective_config["models"] == ids(blueprint.models)


def test_resolution_dedupes_in_first_occurrence_order(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "models: [anthropic:claude-3-5-haiku, CORE, ' openai : gpt-4o-mini ', x:y]\n")
    blueprint = load_blueprint(path, rel_path="x.yml")
    assert ids(blueprint.models) == ["anthropic:claude-3-5-haiku", "openai:gpt-4o-mini", "x:y"]
    (finding,) = blueprint.findings
    assert finding.code == "model-whitespace" and finding.location.line == 1


def test_missing_collection_is_located_at_the_entry(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "title: T\nmodels:\n  - openai:gpt-4o\n  - NOPE\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="x.yml", display_path="blueprints/x.yml")
    error = caught.value
    assert (error.location.path, error.location.line, error.location.field) == ("blueprints/x.yml", 4, "models[1]")
    assert "NOPE" in error.message
    assert error.hint.startswith("add models/NOPE.json") and "--weval-models" in error.hint


def test_no_collections_folder_at_all(tmp_path: Path) -> None:
    path = tmp_path / "x.yml"
    path.write_text("- prompt: hi\n", encoding="utf-8")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="x.yml")
    assert "CORE" in caught.value.message and "weval_collections_dir" in caught.value.hint
    # The reference keeps the placeholder literally when asked to.
    assert ids(load_blueprint(path, rel_path="x.yml", keep_unresolved_placeholders=True).models) == ["CORE"]


def test_empty_collection_is_a_located_warning(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "models:\n  - EMPTY\n---\n- prompt: hi\n")
    blueprint = load_blueprint(path, rel_path="x.yml")
    assert blueprint.models == ()
    (finding,) = blueprint.findings
    assert finding.code == "empty-collection" and finding.location.line == 2


def test_malformed_collection(configs_repo: Path) -> None:
    write_collections(configs_repo, {"BAD": [1, 2]})  # type: ignore[dict-item]
    path = write(configs_repo, "x.yml", "models: [BAD]\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="x.yml")
    assert "Expected a JSON array of strings" in caught.value.message


def test_custom_model_objects_in_a_blueprint(configs_repo: Path) -> None:
    path = write(
        configs_repo,
        "x.yml",
        "models:\n  - openai:gpt-4o-mini\n  - id: local-llm\n    url: http://h/v1\n"
        "    modelName: m\n    inherit: openai\n",
    )
    blueprint = load_blueprint(path, rel_path="x.yml")
    plain, custom = blueprint.models
    assert plain == ModelSpec(id="openai:gpt-4o-mini")
    assert custom.id == "local-llm" and custom.custom["url"] == "http://h/v1"


def test_override_replaces_the_list_and_resolves_placeholders(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "models: [NOPE]\n---\n- prompt: hi\n")
    blueprint = load_blueprint(
        path, rel_path="x.yml", model_override=["ideal", "CORE", "local-llm"], custom_models={"local-llm": CUSTOM}
    )
    assert ids(blueprint.models) == ["ideal", "openai:gpt-4o-mini", "anthropic:claude-3-5-haiku", "local-llm"]
    assert blueprint.models[0].custom is None and blueprint.models[-1].custom == CUSTOM


def test_override_with_a_missing_collection(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "- prompt: hi\n")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="x.yml", model_override=["NOPE"])
    assert caught.value.location.field == "--weval-models[0]"


def test_model_defs_ids_work_in_blueprints(configs_repo: Path) -> None:
    path = write(configs_repo, "x.yml", "models: [local-llm]\n")
    (model,) = load_blueprint(path, rel_path="x.yml", custom_models={"local-llm": CUSTOM}).models
    assert model.custom == CUSTOM


def test_content_hash_uses_resolved_models(tmp_path: Path) -> None:
    text = "- id: p\n  prompt: hi\n"
    literal = parse_blueprint_text(text, fmt="yaml", rel_path="x.yml", keep_unresolved_placeholders=True)
    resolved = parse_blueprint_text(
        text, fmt="yaml", rel_path="x.yml", collections_dir=write_collections(tmp_path, {"CORE": ["a:b"]})
    )
    explicit = parse_blueprint_text("models: [a:b]\n---\n" + text, fmt="yaml", rel_path="x.yml")
    assert literal.content_hash != resolved.content_hash == explicit.content_hash


def test_load_model_defs(tmp_path: Path) -> None:
    listed = tmp_path / "models.yml"
    listed.write_text("- id: a\n  url: http://h\n  modelName: m\n  inherit: openai\n", encoding="utf-8")
    assert load_model_defs(listed)["a"]["modelName"] == "m"
    mapped = tmp_path / "defs.yaml"
    mapped.write_text(
        "models:\n  - id: b\n    url: http://h\n    modelName: m\n    inherit: openai\n    format: completions\n",
        encoding="utf-8",
    )
    assert list(load_model_defs(mapped)) == ["b"]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("- openai:gpt-4o\n", 1, "not a plain id"),
        ("- id: a\n  url: http://h\n  modelName: m\n", 1, "'inherit' is required"),
        ("- {id: a, url: u, modelName: m, inherit: o}\n- {id: a, url: u, modelName: m, inherit: o}\n", 2, "twice"),
        ("title: nothing here\n", 1, "a list of custom model objects"),
    ],
)
def test_load_model_defs_errors(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = tmp_path / "models.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BlueprintError) as caught:
        load_model_defs(path)
    assert caught.value.location.line == line and words in caught.value.message
