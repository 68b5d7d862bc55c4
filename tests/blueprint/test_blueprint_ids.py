"""Ids and hashes that must match the reference byte for byte (docs/format.md: 'Prompt ids', 'Blueprint ids', 'Run label', 'Effective model ids', 'Tags')."""

from __future__ import annotations

import datetime
import hashlib
import json
import random

import pytest

from pytest_weval.blueprint.ids import (
    blueprint_id_from_path,
    content_hash,
    effective_model_id,
    generated_prompt_id,
    js_number_str,
    locale_compare_key,
    normalize_tag,
    normalize_tags,
    stable_stringify,
)
from pytest_weval.jsvalues import ABSENT, _number_layout, _serialize, js_json, js_nullish, js_or, js_string, truthy


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1"),
        (1.0, "1"),
        (0.1, "0.1"),
        (0.7, "0.7"),
        (-0.0, "0"),
        (100.0, "100"),
        (1.5e-7, "1.5e-7"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (2**60, "1152921504606847000"),
        (2**53 - 1, "9007199254740991"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (0.1 + 0.2, "0.30000000000000004"),
    ],
)
def test_js_number_str(value: float, text: str) -> None:
    assert js_number_str(value) == text


def test_js_number_str_lays_out_every_magnitude_alike() -> None:
    # the shortcut for the magnitudes repr writes without an exponent, against the general layout
    rng = random.Random(43)
    values = [1e-4, -1e-4, 1e16, 9.999999999999998e15, 0.5, 1.0, 1e15, 123456789012345.67, 0.30000000000000004]
    for exponent in range(-8, 22):
        values += [rng.uniform(1, 10) * 10.0**exponent for _ in range(40)]
        values += [float(rng.randrange(1, 1000)) * 10.0**exponent, -(10.0**exponent)]
    for value in values:
        assert js_number_str(value) == _number_layout(value), value


def _slow(value: object, sort_keys: bool) -> str:
    out: list[str] = []
    _serialize(value, sort_keys, out)
    return "".join(out)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1.0, "a": [1e-5, 1e16, 2.5, -3, None, True, "x 1.0 \"q\" \\ 1e-05 NaN"], "c": {"d": 0.1}},
        {"1": "index keys first", "b": 2, "0": 3},
        {"lone": "\ud800", "é": "ü"},
        {"\U0001f600": 1, "\uffff": 2, "a": 3},
        {"nan": float("nan"), "inf": float("-inf"), "big": 12345678901234567890},
        {"date": datetime.date(2024, 1, 2)},
        [{"k": "tab\t nl\n ctl\x01"}],
        "plain",
    ],
)
def test_fast_json_matches_the_reference_serializer(value: object) -> None:
    # The C-encoder fast path must give what the plain JS-semantics serializer gives.
    assert js_json(value) == _slow(value, False)
    assert stable_stringify(value) == _slow(value, True)


def test_js_json_layout() -> None:
    assert js_json({"b": 1.0, "1": [0.5, None], "a": "é"}) == '{"1":[0.5,null],"b":1,"a":"é"}'
    assert js_json(ABSENT) == "undefined"
    assert js_json({"x": float("nan")}) == '{"x":null}'
    assert stable_stringify({"b": {"d": 1, "c": 2}, "a": 1.0}) == '{"a":1,"b":{"c":2,"d":1}}'
    assert stable_stringify({"\U0001f600": 1, "\uffff": 2}) == '{"\U0001f600":1,"\uffff":2}'  # UTF-16 order


def test_js_truthiness_and_operators() -> None:
    assert [truthy(v) for v in (None, ABSENT, False, 0, 0.0, float("nan"), "", [], {}, "0", -1)] == [
        False,
        False,
        False,
        False,
        False,
        False,
        False,
        True,
        True,
        True,
        True,
    ]
    assert js_or("", None, 0) == 0 and js_or(None, "x") == "x" and js_or(ABSENT, "") == ""
    assert js_nullish(None, 0, 1) == 0 and js_nullish(None, ABSENT) is ABSENT and js_nullish(ABSENT, None) is None
    assert js_string([1, None, "a"]) == "1,,a" and js_string({}) == "[object Object]" and js_string(2.0) == "2"


def test_generated_prompt_id_example_from_the_spec() -> None:
    prompt = {
        "messages": [{"role": "user", "content": "This prompt needs an ID."}],
        "idealResponse": "An ideal response.",
        "render_as": "markdown",
    }
    assert stable_stringify(prompt) == (
        '{"idealResponse":"An ideal response.","messages":[{"content":"This prompt needs an ID.","role":"user"}],'
        '"render_as":"markdown"}'
    )
    assert generated_prompt_id(prompt) == "hash-d35001ad5740"
    assert generated_prompt_id({**prompt, "id": "ignored"}) == "hash-d35001ad5740"


@pytest.mark.parametrize(
    ("path", "blueprint_id"),
    [
        ("my-test.yml", "my-test"),
        ("subdir/my-test.weval.yaml", "subdir__my-test"),
        ("a/b/c.civic.yml", "a__b__c"),
        ("x.json", "x"),
        ("foo.json.yml", "foo"),  # docs/format.md, 'Blueprint ids': all four apply
        ("./x.yml", ".__x"),
        ("v1.2.3/my.special-test.yml", "v1.2.3__my.special-test"),
        ("x.yml.txt", "x.yml.txt"),
    ],
)
def test_blueprint_id_from_path(path: str, blueprint_id: str) -> None:
    assert blueprint_id_from_path(path) == blueprint_id


@pytest.mark.parametrize(
    ("tag", "normalized"),
    [
        ("AI Safety", "ai-safety"),
        ("_featured", "_featured"),
        ("  Foo_Bar  baz!! ", "foo-bar-baz"),
        ("Évaluation", "valuation"),
        ("a__b", "a-b"),
        ("", ""),
        ("!!!", ""),
    ],
)
def test_normalize_tag(tag: str, normalized: str) -> None:
    assert normalize_tag(tag) == normalized


def test_normalize_tags_drops_empty_and_repeats() -> None:
    assert normalize_tags(["AI Safety", "ai-safety", "!!", "Law"]) == ["ai-safety", "law"]


def test_effective_model_id() -> None:
    assert effective_model_id("openai:gpt-4o-mini", None) == "openai:gpt-4o-mini[temp:0]"
    assert effective_model_id("openai:gpt-4o-mini", 1.0) == "openai:gpt-4o-mini[temp:1]"
    assert effective_model_id("m", 0.7, 2) == "m[temp:0.7][sp_idx:2]"
    assert effective_model_id("m", 0.7, 0, multi_system=False) == "m[temp:0.7]"
    assert effective_model_id("m", 0, 1, multi_system=True) == "m[temp:0][sp_idx:1]"


def test_locale_compare_order() -> None:
    ids = ["b-prompt", "A-prompt", "a-prompt", "a_prompt", "a1", "p10", "p2", "É", "e", "f", "Z"]
    random.Random(1).shuffle(ids)
    assert sorted(ids, key=locale_compare_key) == [
        "a_prompt",
        "a-prompt",
        "A-prompt",
        "a1",
        "b-prompt",
        "e",
        "É",
        "f",
        "p10",
        "p2",
        "Z",
    ]


def _reference_hash(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()[:16]


def test_content_hash_shape() -> None:
    config = {
        "models": ["z:m", {"id": "custom", "url": "u"}, "a:m"],
        "temperatures": [10, 9, 0.5],
        "system": None,
        "prompts": [
            {
                "id": "b",
                "messages": [{"role": "user", "content": "not hashed"}],
                "points": [{"text": "t", "multiplier": 1}],
            },
            {"id": "a", "idealResponse": "i", "weight": 2, "should_not": [{"text": "not hashed"}]},
        ],
    }
    expected = {
        # JS default sort: by String(x); an object sorts as "[object Object]" ('[' < 'a').
        "models": [{"id": "custom", "url": "u"}, "a:m", "z:m"],
        "system": None,
        "prompts": [
            {"id": "a", "idealResponse": "i", "weight": 2},
            {"id": "b", "points": [{"text": "t", "multiplier": 1}]},
        ],
        "temperatureSettings": [0.5, 10, 9],  # JS default sort is lexicographic
    }
    assert content_hash(config) == _reference_hash(expected)


def test_content_hash_single_temperature_and_systems() -> None:
    config = {"models": ["m"], "temperatures": [0.3], "temperature": 1, "systems": ["b", None, "a"], "prompts": []}
    expected = {"models": ["m"], "systems": ["a", "b", None], "prompts": [], "temperatureSettings": 0.3}
    assert content_hash(config) == _reference_hash(expected)
    assert content_hash({"models": ["m"], "temperature": 1, "prompts": []}) == _reference_hash(
        {"models": ["m"], "prompts": [], "temperatureSettings": 1}
    )
