"""Parser behaviour beyond the vectors: structure, header and prompt rules, the CLI's checks,
authoring findings, and our deliberate deviations (docs/rulings.md, rulings 3, 8, 9, 15)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_weval.blueprint import BlueprintError, parse_blueprint_text
from pytest_weval.blueprint.model import Blueprint


def parse(text: str, fmt: str = "yaml", **kwargs: Any) -> Blueprint:
    return parse_blueprint_text(
        text, fmt=fmt, rel_path=f"bp.{'yml' if fmt == 'yaml' else 'json'}", keep_unresolved_placeholders=True, **kwargs
    )


def error_of(text: str, fmt: str = "yaml") -> BlueprintError:
    with pytest.raises(BlueprintError) as caught:
        parse(text, fmt)
    return caught.value


def codes(blueprint: Blueprint) -> list[str]:
    return [f.code for f in blueprint.findings]


# --- structure (docs/format.md, 'Layouts') --------------------------------------------------------------------------


def test_prompt_like_first_document_is_lost_into_the_header() -> None:
    # The layout heuristic (docs/format.md, 'Layouts'): only prompt/messages/should/ideal/points/expect make a prompt document.
    blueprint = parse("promptText: lost\nshould_not: [x]\n---\n- prompt: kept\n")
    assert [p.raw["messages"][0]["content"] for p in blueprint.prompts] == ["kept"]
    assert blueprint.config["promptText"] == "lost"
    (finding,) = [f for f in blueprint.findings if f.code == "prompt-in-header"]
    assert finding.location.line == 1


def test_json_top_level_list_and_legacy_object() -> None:
    assert len(parse('[{"id": "a", "promptText": "x"}]', "json").prompts) == 1
    assert parse('{"title": "T"}', "json").prompts == ()


def test_scalar_document_is_an_error() -> None:
    error = error_of("just text\n")
    assert error.message == "Invalid YAML format: Document must be an object or array. Found: string"


def test_null_prompt_item_is_located() -> None:
    error = error_of("- prompt: a\n-\n- prompt: b\n")
    assert error.location.line == 2 and "empty" in error.message


def test_non_object_prompt_is_kept_and_fails_validation() -> None:
    blueprint = parse("title: T\n---\n- just a string\n- prompt: ok\n")
    first, second = blueprint.prompts
    assert first.validation_error and second.validation_error is None
    assert "prompt-not-object" in codes(blueprint)


# --- header (docs/format.md, 'Header' and 'Checks after parsing') -----------------------------------------------------------------------


def test_aliases_and_references() -> None:
    blueprint = parse("configId: c\nconfigTitle: T\nsystemPrompt: S\nreference: {name: R, url: u}\n")
    assert blueprint.config == {
        "id": "c",
        "title": "T",
        "system": "S",
        "references": [{"title": "R", "url": "u"}],
        "prompts": [],
    }
    assert blueprint.title == "T" and blueprint.id == "bp" and blueprint.systems == ("S",)


def test_header_id_is_ignored_with_a_finding() -> None:
    blueprint = parse("id: other\ntitle: T\n")
    assert blueprint.id == "bp" and blueprint.effective_config["id"] == "bp"
    assert "ignored-header-id" in codes(blueprint)


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("models: openai:x\n", "The 'models' field must be an array of strings or custom model objects.", 1),
        ("models:\n  - a:b\n  - 123\n", "Invalid model definition: must be a string or an object.", 3),
        (
            "models:\n  - {name: x}\n",
            "Invalid custom model definition: 'id' is required and must be a string. Found: {\"name\":\"x\"}",
            2,
        ),
        (
            "models:\n  - {id: c, url: u, modelName: m}\n",
            "Invalid custom model definition for 'c': 'inherit' is required and must be a string.",
            2,
        ),
        (
            "models:\n  - {id: c, url: u, modelName: m, inherit: openai, format: x}\n",
            "Invalid custom model definition for 'c': 'format' must be either 'chat' or 'completions'. Found: 'x'",
            2,
        ),
        ("tools:\n  - description: d\n", "Invalid tool definition at index 0: each tool must have a 'name' string.", 2),
        ("toolUse:\n  mode: auto\n", "The 'toolUse.mode' field, if provided, must be 'trace-only'.", 2),
        ("toolUse:\n  maxSteps: 0\n", "The 'toolUse.maxSteps' field, if provided, must be a positive number.", 2),
        ("externalServices:\n  svc: {url: '${BASE}/x'}\n", "External service 'svc' has invalid URL: ${BASE}/x", 2),
        (
            "externalServices:\n  svc: {url: 'https://h/x', method: DELETE}\n",
            "External service 'svc' has invalid method: DELETE. Must be GET, POST, or PUT",
            2,
        ),
        ("author: 5\n", "Invalid 'author' field: must be a string or an object with 'name'.", 1),
        ("render_as: pdf\n", "Invalid global 'render_as' value. Must be one of: markdown, html, plaintext.", 1),
        ("temperature: hot\n", "Config file has invalid 'temperature'", 1),
        ("temperatures: [0, warm]\n", "Config file has invalid 'temperatures'", 1),
        ("tags: [a, 1]\n", "Config file has an invalid 'tags' field (must be an array of strings if provided).", 1),
        ("systems: [a, 1]\n", "Config file has invalid 'systems' (must be an array of strings or nulls).", 1),
        (
            "title: T\nsystems: [null, a, null]\n",
            "Config file validation error: The 'systems' array can contain at most one 'null' entry.",
            2,
        ),
        ("title: 5\n", "Failed to determine a valid 'title' for the blueprint from file content or 'id'.", 1),
        ("threshold: 2\n", "'threshold' must be a number between 0 and 1. Found 2.", 1),
    ],
)
def test_header_errors_are_located(text: str, message: str, line: int) -> None:
    error = error_of(text)
    assert error.message == message
    assert error.location.line == line and error.location.path == "bp.yml"
    assert error.hint, "every error says what to do"


def test_systems_and_temperatures_axes() -> None:
    blueprint = parse("system: [a, null]\ntemperatures: [0, 0.7]\ntemperature: 1\n")
    assert blueprint.systems == ("a", None) and blueprint.multi_system
    assert blueprint.temperatures == (0, 0.7) and blueprint.sets_temperature
    assert "system" not in blueprint.effective_config and blueprint.effective_config["systems"] == ["a", None]
    plain = parse("- prompt: hi\n")
    assert plain.systems == (None,) and plain.temperatures == (None,) and not plain.sets_temperature
    assert parse("temperature: 0.3\n").temperatures == (0.3,)


def test_prompt_system_with_systems_is_rejected_at_the_prompt() -> None:
    error = error_of("systems: [a, b]\n---\n- id: p\n  prompt: hi\n  system: own\n")
    assert "individual prompts (like 'p')" in error.message and error.location.line == 3
    # The check is truthiness (docs/format.md, 'Checks after parsing'): an empty or null prompt system is allowed.
    assert parse("systems: [a, b]\n---\n- prompt: hi\n  system: null\n").multi_system


def test_tags_are_normalized() -> None:
    blueprint = parse("tags: [AI Safety, ai-safety, _featured, '!!']\n")
    assert blueprint.tags == ("ai-safety", "_featured")
    assert blueprint.config["tags"] == ["AI Safety", "ai-safety", "_featured", "!!"]  # parser output untouched


def test_header_threshold_and_defaults() -> None:
    blueprint = parse("threshold: 0.8\ndescription: D\nnoCache: true\nevaluationConfig: {x: 1}\n")
    assert blueprint.threshold == 0.8 and blueprint.description == "D" and blueprint.no_cache
    assert blueprint.evaluation_config == {"x": 1}
    assert blueprint.effective_config["embeddingModel"] == "openai:text-embedding-3-small"
    assert blueprint.effective_config["models"] == ["CORE"]


def test_unknown_header_key_did_you_mean() -> None:
    (finding,) = parse("titel: T\n").findings
    assert finding.code == "unknown-header-key" and "did you mean 'title'" in finding.message


# --- prompts (docs/format.md, 'Prompts') ----------------------------------------------------------------------------


def test_messages_shorthand_and_typed_messages() -> None:
    blueprint = parse("- messages:\n    - system: s\n    - user: u\n    - ai: a\n    - user: v\n")
    prompt = blueprint.prompts[0]
    assert [(m.role, m.content) for m in prompt.messages] == [
        ("system", "s"),
        ("user", "u"),
        ("assistant", "a"),
        ("user", "v"),
    ]
    assert prompt.validation_error is None


def test_assistant_null_turn() -> None:
    prompt = parse("- messages:\n    - user: u\n    - assistant: null\n    - user: v\n").prompts[0]
    assert prompt.messages[1].content is None and prompt.validation_error is None


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            "- prompt: p\n  messages:\n    - {user: u}\n    - bad: x\n",
            "Invalid role 'bad' in message at index 1 in prompt 'undefined'.",
            4,
        ),
        (
            "- prompt: p\n  weight: 20\n",
            "Prompt weight must be a number between 0.1 and 10. Found 20. Prompt ID: 'unknown'",
            2,
        ),
        (
            "- id: q\n  prompt: p\n  importance: x\n",
            "Prompt weight must be a number between 0.1 and 10. Found x. Prompt ID: 'q'",
            3,
        ),
        (
            "- prompt: p\n  temperature: hot\n",
            "Prompt temperature must be a number. Found string. Prompt ID: 'unknown'",
            2,
        ),
        (
            "- prompt: p\n  maxCalls: -1\n",
            "Prompt 'maxCalls' must be a non-negative number. Found -1. Prompt ID: 'unknown'",
            2,
        ),
        ("- prompt: p\n  requiredTools: x\n", "Prompt 'requiredTools' must be an array. Prompt ID: 'unknown'", 2),
        (
            "- prompt: p\n  citation: {url: u}\n",
            "Invalid 'citation'/'reference' object in prompt 'undefined': missing 'title' or 'name' string.",
            2,
        ),
        ("- prompt: p\n  threshold: 1.5\n", "'threshold' must be a number between 0 and 1. Found 1.5.", 2),
        ("- prompt: p\n  messages: hello\n", "'messages' must be a list of messages in prompt 'undefined'.", 2),
    ],
)
def test_prompt_errors_are_located(text: str, message: str, line: int) -> None:
    error = error_of(text)
    assert error.message == message and error.location.line == line and error.hint


def test_prompt_fields() -> None:
    prompt = parse(
        "noCache: true\nrender_as: html\n---\n"
        "- id: p\n  prompt: ignored\n  messages: [{user: hi}]\n  ideal: I\n  idealResponse: J\n  system: null\n"
        "  importance: 2\n  temperature: 0.4\n  reference: {title: R}\n  threshold: 0.9\n"
    ).prompts[0]
    assert prompt.raw == {
        "messages": [{"role": "user", "content": "hi"}],
        "id": "p",
        "idealResponse": "I",
        "system": None,
        "noCache": True,
        "citation": {"title": "R"},
        "weight": 2,
        "render_as": "html",
        "temperature": 0.4,
    }
    assert prompt.has_system and prompt.system is None and prompt.ideal == "I" and prompt.no_cache
    assert prompt.weight == 2 and prompt.temperature == 0.4 and prompt.render_as == "html"
    assert prompt.threshold == 0.9  # our extension: kept typed, not in raw (docs/rulings.md, ruling 8)


def test_threshold_does_not_change_generated_ids_or_the_hash() -> None:
    plain = parse("- prompt: hi\n  should: [a]\n")
    with_threshold = parse("- prompt: hi\n  should: [a]\n  threshold: 0.9\n")
    assert plain.prompts[0].id == with_threshold.prompts[0].id
    assert plain.content_hash == with_threshold.content_hash


def test_ignored_and_shadowed_keys_are_findings() -> None:
    blueprint = parse("- prompt: a\n  messages: [{user: b}]\n  shuold: [x]\n  should: [y]\n  expect: [z]\n")
    messages = {f.message: f.location.line for f in blueprint.findings if f.code == "ignored-key"}
    assert messages == {
        "prompt key 'shuold' is ignored (did you mean 'should'?)": 3,
        "prompt key 'prompt' is ignored because 'messages' is set": 1,
        "prompt key 'expect' is ignored because 'should' is set": 5,
    }


def test_duplicate_prompt_ids_are_kept_with_a_finding() -> None:
    blueprint = parse("- id: same\n  prompt: a\n- id: same\n  prompt: b\n")
    assert [p.id for p in blueprint.prompts] == ["same", "same"]
    (finding,) = [f for f in blueprint.findings if f.code == "duplicate-prompt-id"]
    assert finding.location.line == 3 and "line 1" in finding.message


def test_per_prompt_validation(tmp_path) -> None:
    # docs/rulings.md, ruling 3: one invalid prompt costs only that prompt.
    blueprint = parse("- id: bad\n  messages: [{user: a}, {user: b}]\n- id: good\n  prompt: fine\n")
    bad, good = blueprint.prompts
    assert bad.validation_error == "Prompt ID 'bad', message 1: Invalid sequence. Two 'user' messages in a row."
    assert good.validation_error is None
    (finding,) = [f for f in blueprint.findings if f.code == "invalid-prompt"]
    assert finding.location.line == 1


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ("[]", "Prompt ID 'p' must have either a valid 'promptText' or a non-empty 'messages' array."),
        (
            "[{assistant: a}, {user: u}]",
            "Prompt ID 'p': First message role cannot be 'assistant'. Must be 'user' or 'system'.",
        ),
        (
            "[{user: u}, {assistant: null}]",
            "Prompt ID 'p': Last message role in the input sequence must be 'user'. Found 'assistant'.",
        ),
        (
            "[{role: bot, content: x}, {user: u}]",
            "Prompt ID 'p', message 0: Invalid role 'bot'. Must be 'user', 'assistant', or 'system'.",
        ),
        ("[{system: ' '}, {user: u}]", "Prompt ID 'p', message 0 (role 'system'): Content cannot be empty."),
        ("[{content: x}]", "Prompt ID 'p': Last message role in the input sequence must be 'user'. Found 'undefined'."),
    ],
)
def test_validation_messages(messages: str, error: str) -> None:
    assert parse(f"- id: p\n  messages: {messages}\n").prompts[0].validation_error == error


# --- points (docs/format.md, 'Points', 'Point definitions ($ref)' and 'Evaluator view of points') ----------------------------------------------------------------


def test_point_forms_and_locations() -> None:
    prompt = parse(
        "- prompt: p\n"
        "  should:\n"
        "    - plain\n"  # 3
        "    - $is_json\n"  # 4
        "    - {$contain_any_of: [a, b], weight: 2}\n"  # 5
        "    - {fn: match, arg: x, citation: C}\n"  # 6
        "    - {text: t, multiplier: 0.5}\n"  # 7
        "    - Point text: Its citation\n"  # 8
        "    - $factcheck:\n"  # 9
        "  should_not:\n"
        "    - - $contains\n"  # 11
        "      - {$icontains: z}\n"  # 12
    ).prompts[0]
    shapes = [
        (
            pt.text,
            pt.fn,
            pt.fn_args,
            pt.has_args,
            pt.multiplier,
            pt.citation,
            pt.path_id,
            pt.is_inverted,
            pt.display_text,
            pt.location.line,
        )
        for pt in prompt.points
    ]
    assert shapes == [
        ("plain", None, None, False, 1, None, None, False, "plain", 3),
        (None, "is_json", None, False, 1, None, None, False, "Function: is_json(undefined)", 4),
        (None, "contains_any_of", ["a", "b"], True, 2, None, None, False, 'Function: contains_any_of(["a","b"])', 5),
        (None, "matches", "x", True, 1, "C", None, False, 'Function: matches("x")', 6),
        ("t", None, None, False, 0.5, None, None, False, "t", 7),
        ("Point text", None, None, False, 1, "Its citation", None, False, "Point text", 8),
        # `$factcheck:` gives fnArgs null, which the evaluator reads as undefined (`??`).
        (None, "factcheck", None, False, 1, None, None, False, "Function: factcheck(undefined)", 9),
        # Inside a path a string is text, even "$contains"; should_not paths are not_path_<i>.
        ("$contains", None, None, False, 1, None, "not_path_0", True, "$contains", 11),
        (None, "icontains", "z", True, 1, None, "not_path_0", True, 'Function: icontains("z")', 12),
    ]
    assert all(pt.authoring_error is None for pt in prompt.points)
    assert prompt.raw["points"][2] == {"fn": "contains_any_of", "fnArgs": ["a", "b"], "multiplier": 2}


def test_should_and_should_not_paths_do_not_share_ids() -> None:
    # docs/rulings.md, ruling 15: the reference gives both `path_0` and so merges them into one group.
    prompt = parse("- prompt: p\n  should:\n    - [a, b]\n  should_not:\n    - [c, d]\n").prompts[0]
    assert [pt.path_id for pt in prompt.points] == ["path_0", "path_0", "not_path_0", "not_path_0"]


@pytest.mark.parametrize(
    ("points", "message"),
    [
        ("[[[a]]]", "Nested arrays within nested arrays are not supported in prompt 'undefined'. Found: [[\"a\"]]"),
        (
            "[[a, [b]]]",
            "Nested arrays within alternative paths are not supported in prompt 'undefined'. Found: [\"b\"]",
        ),
        (
            "[[a, 5]]",
            "Invalid point format in alternative path in prompt 'undefined'. Point must be a string or object. Found: 5",
        ),
        ("[{$ref: {x: 1}}]", "Invalid $ref usage in prompt 'unknown'. Expected a string name."),
        (
            "[{text: t, weight: 0}]",
            "Point multiplier must be a number between 0.1 and 10. Found 0. Prompt ID: 'unknown'",
        ),
    ],
)
def test_point_errors(points: str, message: str) -> None:
    error = error_of(f"- prompt: p\n  should: {points}\n")
    assert error.message == message and error.location.line == 2 and error.hint


def test_empty_paths_are_dropped() -> None:
    # Dropped before the evaluator numbers paths, so the remaining one is path_0 (as paths4.yml).
    prompt = parse("- prompt: p\n  should:\n    - []\n    - [null, a]\n").prompts[0]
    assert [(pt.text, pt.path_id) for pt in prompt.points] == [("a", "path_0")]


def test_unknown_function_is_a_finding_and_an_item_error() -> None:
    # docs/rulings.md, ruling 9: the file still loads; the point carries the error so the items error.
    blueprint = parse("- prompt: p\n  should:\n    - ok\n    - $imatches_all_of: [a]\n    - {fn: $js, fnArgs: x}\n")
    ok, unknown, dollar = blueprint.prompts[0].points
    assert ok.authoring_error is None
    assert unknown.authoring_error == "Unknown point function: 'imatches_all_of' (did you mean 'imatch_all_of'?)"
    assert dollar.authoring_error == "Unknown point function: '$js' (did you mean 'js'?)"
    lines = [f.location.line for f in blueprint.findings if f.code == "unknown-function"]
    assert lines == [4, 5]


def test_a_quoted_function_point_is_explained() -> None:
    # Seen in the corpus: the whole point quoted makes a zero-argument call named "icontains: '(A)'".
    (point,) = parse("- prompt: p\n  should:\n    - \"$icontains: '(A)'\"\n").prompts[0].points
    assert point.fn == "icontains: '(A)'"
    assert point.authoring_error == (
        "Unknown point function: 'icontains: '(A)'' (the point is one quoted string; write it unquoted: "
        "$icontains: '(A)')"
    )


def test_missing_ref_definition_is_a_finding_and_an_item_error() -> None:
    blueprint = parse(
        "point_defs: {scoreBand: 'return 1'}\n---\n- id: p\n  prompt: x\n  should:\n    - $ref: scoreBnd\n"
    )
    (point,) = blueprint.prompts[0].points
    assert (
        point.authoring_error == "Undefined definition 'scoreBnd' referenced in prompt 'p'. (did you mean 'scoreBand'?)"
    )
    assert [f.location.line for f in blueprint.findings if f.code == "undefined-ref"] == [6]


def test_ref_definitions() -> None:
    blueprint = parse(
        "point_defs:\n  s: 'return 1'\n  o: {$contain_any_of: [a], weight: 2}\n  t: {text: T, multiplier: 3}\n"
        "---\n- prompt: p\n  should:\n    - {$ref: s, weight: 2, citation: C}\n    - $ref: o\n    - [{$ref: t}]\n"
    )
    s, o, t = blueprint.prompts[0].points
    assert (s.fn, s.fn_args, s.multiplier, s.citation) == ("js", "return 1", 2, "C")
    # Object definitions are copied raw (docs/format.md, 'Point definitions ($ref)'): not pluralised, their `weight` unread.
    assert (o.fn, o.multiplier) == ("contain_any_of", 1)
    assert o.authoring_error.startswith("Unknown point function: 'contain_any_of'")
    assert (t.text, t.multiplier, t.path_id) == ("T", 3, "path_2")
    assert blueprint.config["point_defs"]["s"] == "return 1"


def test_out_of_range_multiplier_on_a_raw_definition_errors_the_point() -> None:
    # The reference aborts the whole evaluation (docs/format.md, 'Point definitions ($ref)'); the point errors instead, located.
    blueprint = parse("point_defs: {o: {text: T, multiplier: 50}}\n---\n- prompt: p\n  should:\n    - $ref: o\n")
    (point,) = blueprint.prompts[0].points
    assert point.authoring_error.startswith("Point multiplier must be a number between 0.1 and 10. Found 50.")
    assert point.location.line == 5


def test_points_source_that_is_not_a_list() -> None:
    blueprint = parse("- prompt: p\n  should: just text\n")
    assert blueprint.prompts[0].points == () and blueprint.prompts[0].raw["points"] == []
    assert "points-not-list" in codes(blueprint)


def test_parse_points_outside_a_blueprint() -> None:
    from pytest_weval.blueprint import parse_points

    points = parse_points(
        should=["mentions A", {"$contains": "b"}, ["x", "y"]], should_not=["$is_json", "$nope"], source="weval_judge"
    )
    assert [(p.text or p.fn, p.path_id, p.is_inverted) for p in points] == [
        ("mentions A", None, False),
        ("contains", None, False),
        ("x", "path_2", False),
        ("y", "path_2", False),
        ("is_json", None, True),
        ("nope", None, True),
    ]
    assert points[-1].authoring_error.startswith("Unknown point function: 'nope'")
    assert points[0].location.path == "weval_judge" and points[0].location.field == "should[0]"
    with pytest.raises(BlueprintError) as caught:
        parse_points(should=[5])
    assert "Point must be a string, array, or object" in caught.value.message


# --- unvalidated construction (blueprint/model.py, `trusted_maker`) -----------------------------------------------


def _validated_again(instance: Any) -> Any:
    """The same model built through pydantic's validation, from the fields it was given."""
    return type(instance)(**{name: getattr(instance, name) for name in instance.__pydantic_fields_set__})


def test_points_and_locations_built_without_validation_equal_validated_ones() -> None:
    blueprint = parse(
        "- id: p\n"
        "  prompt: hi\n"
        "  should:\n"
        "    - plain text\n"
        "    - text: weighted\n"
        "      multiplier: 2\n"
        "    - text: cited\n"
        "      citation: https://example.org\n"
        "  should_not:\n"
        "    - text: inverted\n"
        "      multiplier: 0.5\n"
    )
    points = blueprint.prompts[0].points
    assert [p.text for p in points] == ["plain text", "weighted", "cited", "inverted"]
    for point in points:
        for instance in (point, point.location):
            again = _validated_again(instance)
            assert instance == again
            assert list(instance.__dict__.items()) == list(again.__dict__.items())
            assert instance.__pydantic_fields_set__ == again.__pydantic_fields_set__
            assert type(instance.__dict__.get("multiplier", 0.0)) is float  # 2 is held as 2.0, as validated
    assert points[1].multiplier == 2.0 and points[3].is_inverted
