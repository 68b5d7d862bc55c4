"""Response fixture files (docs/fixtures.md): reading, checking and picking an answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_weval.blueprint.fixtures import FixturePick, fnv1a_32, load_fixtures
from pytest_weval.blueprint.model import BlueprintError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_fnv1a_hashes_utf16_code_units_as_javascript() -> None:
    # Values from the reference's own `simpleHash`, run in Node 20.
    assert fnv1a_32("") == 2166136261
    assert fnv1a_32("a") == 3826002220
    assert fnv1a_32("0|abc|p1|openai:gpt[temp:0]") == 1301265427
    assert fnv1a_32("é😀") == 1154239905  # an astral character is two code units


def test_a_string_a_list_and_turns(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "f.yml",
        "responses:\n"
        "  one: {default: Paris.}\n"
        "  many: {default: [a, b, c, d, e]}\n"
        "  chat: {default: {turns: [first, second]}}\n",
    )
    fixtures = load_fixtures(path)
    assert fixtures.pick("one", "m", "m[temp:0]", "h") == FixturePick(final="Paris.")
    assert fixtures.pick("chat", "m", "m[temp:0]", "h") == FixturePick(turns=("first", "second"))
    assert fixtures.pick("nothing", "m", "m[temp:0]", "h") is None
    # seeded (the default): FNV-1a of "<seed>|<run label>|<prompt id>|<effective model id>"
    for label in ("run-1", "run-2", "run-3"):
        expected = "abcde"[fnv1a_32(f"0|{label}|many|m[temp:0]") % 5]
        assert fixtures.pick("many", "m", "m[temp:0]", label) == FixturePick(final=expected)


@pytest.mark.parametrize("strategy", ["first", "round-robin"])
def test_first_and_round_robin_take_the_first(tmp_path: Path, strategy: str) -> None:
    path = _write(tmp_path, "f.json", json.dumps({"strategy": strategy, "responses": {"p": {"default": ["x", "y"]}}}))
    fixtures = load_fixtures(path)
    assert {fixtures.pick("p", "m", f"m[temp:{t}]", "h").final for t in range(20)} == {"x"}  # type: ignore[union-attr]


def test_the_seed_changes_the_pick(tmp_path: Path) -> None:
    path = _write(tmp_path, "f.json", json.dumps({"seed": 7, "responses": {"p": {"default": list("abcdefgh")}}}))
    fixtures = load_fixtures(path)
    pick = fixtures.pick("p", "m", "m[temp:0]", "h")
    assert pick == FixturePick(final="abcdefgh"[fnv1a_32("7|h|p|m[temp:0]") % 8])


def test_by_model_exact_then_wildcard_then_default(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "f.yml",
        "responses:\n"
        "  p:\n"
        "    default: plain\n"
        "    byModel:\n"
        "      openai:gpt-4o: exact\n"
        "      openai:gpt-4o*: wild\n"
        "      anthropic:*: claude\n",
    )
    fixtures = load_fixtures(path)
    assert fixtures.pick("p", "openai:gpt-4o", "e", "h") == FixturePick(final="exact")
    assert fixtures.pick("p", "openai:gpt-4o-mini", "e", "h") == FixturePick(final="wild")
    assert fixtures.pick("p", "anthropic:claude-3", "e", "h") == FixturePick(final="claude")
    assert fixtures.pick("p", "openrouter:x", "e", "h") == FixturePick(final="plain")


def test_lines_of_each_prompt_entry(tmp_path: Path) -> None:
    path = _write(tmp_path, "f.yml", "version: 1\nresponses:\n  a: {default: x}\n\n  b:\n    default: y\n")
    assert dict(load_fixtures(path).lines) == {"a": 3, "b": 5}


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("responses: [a, b]\n", 1, "responses", "maps prompt ids"),
        ("strategy: random\nresponses: {}\n", 1, "strategy", "not one of"),
        ("responses:\n  p: just text\n", 2, "p", "is a mapping"),
        ("responses:\n  p:\n    defualt: x\n", 3, "defualt", "unknown key"),
        ("responses:\n  p:\n    default: {turns: []}\n", 3, "default", "an answer"),
        ("responses:\n  p:\n    byModel:\n      m: 3\n", 4, "m", "an answer"),
        ("responses:\n  p: {default: x}\n  p: {default: y}\n", 3, "p", "duplicated"),
    ],
)
def test_a_broken_file_is_one_located_error(tmp_path: Path, text: str, line: int, field: str, words: str) -> None:
    path = _write(tmp_path, "f.yml", text)
    with pytest.raises(BlueprintError) as caught:
        load_fixtures(path, display_path="f.yml")
    error = caught.value
    assert error.location.path == "f.yml" and error.location.line == line, str(error)
    assert words in error.message, str(error)
    if "duplicated" not in words:
        assert error.location.field == field


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError) as caught:
        load_fixtures(tmp_path / "nope.json")
    assert "cannot read" in caught.value.message and "--weval-fixtures" in (caught.value.hint or "")


def test_an_unknown_key_lists_every_known_one_and_suggests_the_close_one(tmp_path: Path) -> None:
    path = _write(tmp_path, "f.yml", "responses:\n  p:\n    notes: why\n    defualt: x\n")
    with pytest.raises(BlueprintError) as caught:
        load_fixtures(path, display_path="f.yml")
    assert caught.value.message == (
        "responses.p: unknown key 'defualt' (expected default, byModel, notes); did you mean 'default'?"
    )
    assert caught.value.location.line == 4


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("f.json", '{"responses": {', "JSON"),
        ("f.yml", "responses: [a\n", "YAML"),
        ("f.yml", "", "YAML"),
    ],
)
def test_a_file_that_cannot_be_parsed_is_called_a_fixture_file(tmp_path: Path, name: str, text: str, kind: str) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(BlueprintError) as caught:
        load_fixtures(path, display_path=name)
    assert caught.value.message.startswith(f"Failed to parse {kind} fixture file: "), str(caught.value)
    assert "blueprint" not in str(caught.value)
