"""promptfoo's deterministic assertions, scored as promptfoo 0.123.1 scores them."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_weval.blueprint.model import Location
from pytest_weval.scoring.promptfoo import (
    AssertionContext,
    AssertionProblem,
    ComponentResult,
    parse_assertion,
    score_assertion,
)

WHERE = Location(path="promptfooconfig.yaml", line=7, column=9, field="tests[0].assert[0]")


def score(raw: dict[str, Any], output: Any, **ctx: Any) -> ComponentResult:
    return score_assertion(parse_assertion(raw, WHERE), AssertionContext(output=output, **ctx))


def verdict(raw: dict[str, Any], output: Any, **ctx: Any) -> tuple[bool, float]:
    result = score(raw, output, **ctx)
    assert not result.error, result.reason
    return result.pass_, result.score


@pytest.mark.parametrize(
    ("raw", "output", "expected"),
    [
        ({"type": "equals", "value": "Paris"}, "Paris", True),
        ({"type": "equals", "value": "Paris"}, "Paris.", False),
        ({"type": "not-equals", "value": "Paris"}, "Paris.", True),
        ({"type": "not-equals", "value": "Paris"}, "Paris", False),
        ({"type": "equals", "value": 42}, "42", True),
        # An object value compares with the output parsed as JSON, types and all.
        ({"type": "equals", "value": {"a": 1, "b": [True]}}, '{"b": [true], "a": 1}', True),
        ({"type": "equals", "value": {"a": 1}}, '{"a": true}', False),
        ({"type": "equals", "value": {"a": 1}}, "not json", False),
        ({"type": "not-equals", "value": {"a": 1}}, "not json", True),
    ],
)
def test_equals(raw: dict[str, Any], output: str, expected: bool) -> None:
    assert verdict(raw, output) == (expected, 1.0 if expected else 0.0)


def test_equals_failure_reason_names_both_texts() -> None:
    result = score({"type": "equals", "value": "Paris"}, "London")
    assert result.reason == 'Expected output "London" to equal "Paris"'


@pytest.mark.parametrize(
    ("raw", "output", "expected"),
    [
        ({"type": "contains", "value": "Paris"}, "It is Paris.", True),
        ({"type": "contains", "value": "paris"}, "It is Paris.", False),
        ({"type": "not-contains", "value": "Rome"}, "It is Paris.", True),
        ({"type": "not-contains", "value": "Paris"}, "It is Paris.", False),
        ({"type": "contains", "value": 4}, "2+2=4", True),
        ({"type": "icontains", "value": "PARIS"}, "It is Paris.", True),
        ({"type": "icontains", "value": "rome"}, "It is Paris.", False),
        ({"type": "not-icontains", "value": "PARIS"}, "It is Paris.", False),
        ({"type": "not-icontains", "value": "ROME"}, "It is Paris.", True),
    ],
)
def test_contains_and_icontains(raw: dict[str, Any], output: str, expected: bool) -> None:
    assert verdict(raw, output)[0] is expected


def test_contains_renders_the_value_with_the_vars() -> None:
    def render(template: str, variables: Any) -> str:
        return template.replace("{{ city }}", variables["city"])

    raw = {"type": "contains", "value": "{{ city }}"}
    assert verdict(raw, "Paris it is", vars={"city": "Paris"}, render=render)[0] is True
    assert verdict(raw, "Rome it is", vars={"city": "Paris"}, render=render)[0] is False


def test_weight_zero_always_passes() -> None:
    result = score({"type": "contains", "value": "x", "weight": 0}, "no")
    assert result.pass_ is True and result.score == 0.0


def test_unknown_type_is_a_located_error_naming_it() -> None:
    with pytest.raises(AssertionProblem) as caught:
        parse_assertion({"type": "not-frobnicate", "value": 1}, WHERE)
    text = str(caught.value)
    assert "assertion type 'not-frobnicate' is not supported" in text
    assert text.startswith("promptfooconfig.yaml:7:9 (tests[0].assert[0].type)")


@pytest.mark.parametrize(
    "raw",
    [
        "contains",
        {"value": "x"},
        {"type": "contains"},
        {"type": "contains", "value": "x", "weight": "heavy"},
        {"type": "cost"},
        {"type": "assert-set", "assert": []},
        {"type": "python", "value": "output == 1"},
        {"type": "javascript", "value": "file://check.js"},
    ],
)
def test_malformed_assertions_are_located_errors(raw: Any) -> None:
    with pytest.raises(AssertionProblem) as caught:
        parse_assertion(raw, WHERE)
    assert str(caught.value).startswith("promptfooconfig.yaml:7:9")
