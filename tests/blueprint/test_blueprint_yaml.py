"""Reading files: the js-yaml dialect (docs/rulings.md, ruling 1), the safety checks (docs/rulings.md, ruling 2), bytes,
and syntax errors in plain words with their location."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from blueprint_helpers import CORPUS_DIR

from pytest_weval.blueprint import BlueprintError, load_blueprint, parse_blueprint_text
from pytest_weval.blueprint.loader import _load_with_constructor, load_source
from pytest_weval.blueprint.yaml_build import build_yaml_documents
from pytest_weval.blueprint.yaml_dialect import BlueprintLoader, plain_scalar_tag
from pytest_weval.jsvalues import js_json


def header_of(text: str) -> dict[str, Any]:
    """The first document, as the loader reads it."""
    return load_source(text, fmt="yaml", path="x.yml").documents[0]


def parse(text: str, **kwargs: Any):
    return parse_blueprint_text(text, fmt="yaml", rel_path="x.yml", keep_unresolved_placeholders=True, **kwargs)


# --- dialect -----------------------------------------------------------------------------------


def test_only_true_and_false_are_booleans() -> None:
    doc = header_of("a: yes\nb: no\nc: on\nd: off\ne: true\nf: False\ng: TRUE\nh: y\ni: Yes\n")
    assert doc == {"a": "yes", "b": "no", "c": "on", "d": "off", "e": True, "f": False, "g": True, "h": "y", "i": "Yes"}


def test_no_sexagesimal_numbers() -> None:
    assert header_of("time: 1:30\nlong: 190:20:30\n") == {"time": "1:30", "long": "190:20:30"}


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("0o17", 15),
        ("017", 17),
        ("0x1F", 31),
        ("0b101", 5),
        ("1_000", 1000),
        ("-42", -42),
        ("+7", 7),
        ("1.5", 1.5),
        ("1.", 1.0),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("-.inf", float("-inf")),
        ("~", None),
        ("null", None),
        ("Null", None),
        ("", None),
        ("12_", "12_"),
        ("0b", "0b"),
        ("1e", "1e"),
        ("1:30", "1:30"),
        ("0x", "0x"),
        ("nope", "nope"),
    ],
)
def test_core_schema_scalars(written: str, value: Any) -> None:
    assert header_of(f"v: {written}\n")["v"] == value


def test_quoted_scalars_stay_strings() -> None:
    assert header_of("a: '1'\nb: \"true\"\nc: 'null'\n") == {"a": "1", "b": "true", "c": "null"}


@pytest.mark.parametrize(
    "value",
    [
        "",
        "~",
        "null",
        "NULL",
        "true",
        "False",
        "yes",
        "1",
        "-1",
        "0x1f",
        "0o7",
        "017",
        "1_0",
        "1.5",
        ".5",
        "1e5",
        ".inf",
        "-.Inf",
        ".NaN",
        "2024-01-02",
        "2024-01-02 10:11:12",
        "<<",
        "1:30",
        "text",
        "12_",
        "+.5",
        "-",
    ],
)
def test_fast_resolution_agrees_with_the_resolver(value: str) -> None:
    # The event builder resolves plain scalars itself; it must agree with the loader's resolver.
    assert plain_scalar_tag(value) == BlueprintLoader("").resolve(yaml.ScalarNode, value, (True, False))


def test_timestamps_are_dates_serialized_as_js_dates() -> None:
    doc = header_of("d: 2024-01-02\n")
    assert js_json(doc) == '{"d":"2024-01-02T00:00:00.000Z"}'


def test_keys_become_js_property_names() -> None:
    assert header_of("1: a\ntrue: b\nnull: c\n1.5: d\n") == {"1": "a", "true": "b", "null": "c", "1.5": "d"}


def test_duplicate_key_is_an_error_with_both_lines() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("title: A\nmodels: [x:y]\ntitle: B\n")
    error = caught.value
    assert (error.location.line, error.location.column, error.location.field) == (3, 1, "title")
    assert "'title'" in error.message and "line 1" in error.message
    assert "keep one 'title'" in error.hint


def test_duplicate_key_inside_a_prompt() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("- prompt: a\n  should: [x]\n  prompt: b\n")
    assert caught.value.location.line == 3


def test_merge_keys_may_be_overridden_but_not_repeated() -> None:
    text = "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n"
    assert header_of(text)["m"] == {"x": 3, "y": 2}
    with pytest.raises(BlueprintError) as caught:
        parse(text + "  x: 4\n")
    assert caught.value.location.line == 5


def test_multi_document_stream_drops_null_documents() -> None:
    blueprint = parse("---\n---\ntitle: T\n---\n- prompt: a\n---\n~\n---\n- prompt: b\n")
    assert blueprint.title == "T" and len(blueprint.prompts) == 2


def test_empty_file() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("# only a comment\n---\n~\n")
    assert caught.value.message == (
        "Failed to parse YAML blueprint: YAML blueprint is empty or contains only null documents."
    )


# --- the event builder and the full loader agree ----------------------------------------------


def _walk_marks(documents: list[Any], marks: dict[int, Any]) -> list[Any]:
    """Marks in document order, to compare two loads of the same text."""
    seen: list[Any] = []
    stack = list(reversed(documents))
    while stack:
        value = stack.pop()
        if isinstance(value, (dict, list)):
            seen.append(marks.get(id(value)))
            stack.extend(reversed(list(value.values()) if isinstance(value, dict) else value))
    return seen


@pytest.mark.skipif(not CORPUS_DIR.exists(), reason="corpus not available")
def test_builder_matches_the_full_loader_on_the_corpus() -> None:
    for path in sorted((CORPUS_DIR / "blueprints").rglob("*.yml"))[::4]:
        text = path.read_text(encoding="utf-8")
        try:
            built = build_yaml_documents(text, str(path))
        except yaml.YAMLError:
            continue
        assert built is not None, path
        documents, marks = _load_with_constructor(text)
        assert built[0] == documents, path
        assert _walk_marks(*built) == _walk_marks(documents, marks), path


def test_explicit_tags_use_the_full_loader_with_marks() -> None:
    text = "title: !!str 12\nbin: !!binary aGk=\n---\n- id: p1\n  prompt: hi\n  should:\n    - a\n"
    assert build_yaml_documents(text, "x.yml") is None  # the builder stands aside
    blueprint = parse(text)
    assert blueprint.title == "12"
    assert blueprint.prompts[0].location.line == 4
    assert blueprint.prompts[0].points[0].location.line == 7


# --- safety checks -----------------------------------------------------------------------------


def test_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.yml"
    path.write_text("- prompt: " + "x" * 3000 + "\n", encoding="utf-8")
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="big.yml", max_file_mb=0.001, keep_unresolved_placeholders=True)
    assert "MB" in caught.value.message and "weval_max_file_mb" in caught.value.hint
    assert caught.value.location.path == str(path)
    load_blueprint(path, rel_path="big.yml", max_file_mb=1, keep_unresolved_placeholders=True)


_DEPTH_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pytest_weval.blueprint import BlueprintError, parse_blueprint_text
    fmt, text = sys.argv[1], sys.stdin.read()
    try:
        parse_blueprint_text(text, fmt=fmt, rel_path="deep." + fmt, keep_unresolved_placeholders=True)
    except BlueprintError as exc:
        where = exc.location
        print(json.dumps([where.path, where.line, where.column, exc.message, exc.hint]))
    """
)


@pytest.mark.parametrize(
    ("fmt", "text", "columns"),
    [
        # Our event-stream check stops at level 1,001 (the map is level 1); PyYAML 6.0.4's own
        # scanner limit may stop first, a level earlier in block style: either is the same error.
        ("yaml", "a: " + "[" * 50_000 + "]" * 50_000 + "\n", {1003}),
        ("yaml", "- " * 50_000 + "x\n", {1999, 2001}),
        ("json", '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}", {1}),
    ],
    ids=["yaml-flow", "yaml-block", "json"],
)
def test_deep_nesting_is_a_located_error_not_a_crash(fmt: str, text: str, columns: set[int]) -> None:
    # PyYAML's C composer recurses and crashes the process near 50,000 levels: run it apart.
    result = subprocess.run(
        [sys.executable, "-c", _DEPTH_SCRIPT, fmt], input=text, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    path, line, column, message, hint = json.loads(result.stdout)
    assert (path, line) == ("deep." + fmt, 1)
    assert column in columns, f"PyYAML {yaml.__version__}: column {column}"
    assert message == "nesting is deeper than 1000 levels", f"PyYAML {yaml.__version__}: {message}"
    assert "generated or broken file" in hint


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_depth_just_under_the_cap_parses_hashes_and_displays(fmt: str) -> None:
    # Four levels above the argument (list, prompt, should, point), 996 inside it: 1000 in all.
    deep = "[" * 996 + '"x"' + "]" * 996
    if fmt == "yaml":
        text = f"- should:\n    - $contains: {deep}\n  prompt: p\n"
    else:
        text = f'[{{"promptText": "p", "should": [{{"$contains": {deep}}}]}}]'
    blueprint = parse_blueprint_text(text, fmt=fmt, rel_path=f"x.{fmt}", keep_unresolved_placeholders=True)
    point = blueprint.prompts[0].points[0]
    assert point.display_text == f"Function: contains({deep.replace(' ', '')})"
    assert blueprint.prompts[0].id.startswith("hash-") and blueprint.content_hash


def test_alias_bomb_is_stopped_before_it_expands() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    started = time.perf_counter()
    with pytest.raises(BlueprintError) as caught:
        parse("\n".join(lines) + "\n")
    assert time.perf_counter() - started < 30  # at once, not after a walk of its 9^9 leaves
    assert "alias" in caught.value.message and caught.value.location.line > 1


def test_an_alias_inside_its_own_anchor_is_a_cycle() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("a: &x [1, *x]\n")
    assert "cycle" in caught.value.message and caught.value.location.line == 1


def test_aliases_within_budget_work() -> None:
    # Anchors belong to their document, so the shared rubric lives in the same one.
    blueprint = parse("- prompt: q1\n  should: &r [mentions A, mentions B]\n- prompt: q2\n  should: *r\n")
    assert [pt.text for p in blueprint.prompts for pt in p.points] == ["mentions A", "mentions B"] * 2


# --- bytes -------------------------------------------------------------------------------------


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.yml"
    path.write_bytes(b"\xef\xbb\xbftitle: T\n---\n- prompt: hi\n")
    assert load_blueprint(path, rel_path="bom.yml", keep_unresolved_placeholders=True).title == "T"
    json_path = tmp_path / "bom.json"
    json_path.write_bytes(b'\xef\xbb\xbf{"title": "J", "prompts": []}')
    assert load_blueprint(json_path, rel_path="bom.json", keep_unresolved_placeholders=True).title == "J"


def test_non_utf8_bytes_are_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yml"
    path.write_bytes("title: T\n- prompt: caf\xe9\n".encode("latin-1"))
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(path, rel_path="latin1.yml")
    assert (caught.value.location.line, caught.value.location.column) == (2, 14)
    assert "UTF-8" in caught.value.message and "0xe9" in caught.value.message


# --- syntax errors in words --------------------------------------------------------------------


def test_unquoted_colon_in_a_title() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("title: Maternal health: Uttar Pradesh\ndescription: x\n")
    error = caught.value
    assert (error.location.line, error.location.column, error.location.field) == (1, 23, "title")
    assert "unquoted value contains ': '" in error.message
    assert error.hint == "quote the whole value of 'title', e.g. title: \"...\""
    assert str(error).startswith("x.yml:1:23 (title): Failed to parse YAML blueprint")


def test_tab_indentation() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("- prompt: x\n\tshould: y\n")
    assert caught.value.location.line == 2 and "tab" in caught.value.message
    assert caught.value.hint == "replace the tab with spaces"


def test_unclosed_quote_names_where_it_started() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("- prompt: 'x\n  should: [a]\n")
    assert "ends inside a quoted string" in caught.value.message and "line 1" in caught.value.message


def test_undefined_alias() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse("- prompt: *nothing\n")
    assert "not defined" in caught.value.message and caught.value.location.line == 1


# --- JSON --------------------------------------------------------------------------------------


def test_json_duplicate_keys_keep_the_last_as_json_parse() -> None:
    blueprint = parse_blueprint_text(
        '{"title": "A", "title": "B", "prompts": []}', fmt="json", rel_path="j.json", keep_unresolved_placeholders=True
    )
    assert blueprint.title == "B"


def test_json_rejects_nan() -> None:
    with pytest.raises(BlueprintError):
        parse_blueprint_text('{"temperature": NaN, "prompts": []}', fmt="json", rel_path="j.json")


def test_json_prompts_and_points_have_lines() -> None:
    text = '{\n  "prompts": [\n    {"id": "p1",\n     "promptText": "Hi",\n     "should": [\n       "a",\n       {"$contains": "b"}\n     ]}\n  ]\n}\n'
    blueprint = parse_blueprint_text(text, fmt="json", rel_path="j.json", keep_unresolved_placeholders=True)
    prompt = blueprint.prompts[0]
    assert prompt.location.line == 3
    assert [pt.location.line for pt in prompt.points] == [6, 7]


def test_json_syntax_error_is_located() -> None:
    with pytest.raises(BlueprintError) as caught:
        parse_blueprint_text('{\n  "title": "x",\n  "prompts": [}\n', fmt="json", rel_path="j.json")
    assert (caught.value.location.line, caught.value.location.column) == (3, 15)
