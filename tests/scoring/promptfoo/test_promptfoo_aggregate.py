"""A row's outcome from its assertions, by promptfoo 0.123.1's rules (AssertionsResult)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_weval.scoring.promptfoo import (
    AssertionContext,
    GradingResult,
    grade_test,
    grading_json,
    parse_assertion,
    score_assertion,
)


def grade(asserts: list[dict[str, Any]], output: str, threshold: float | None = None, **ctx: Any) -> GradingResult:
    parsed = [parse_assertion(raw, "promptfooconfig.yaml") for raw in asserts]
    context = AssertionContext(output=output, **ctx)
    return grade_test(parsed, [score_assertion(a, context) for a in parsed], threshold)


HIT = {"type": "contains", "value": "Paris"}
MISS = {"type": "contains", "value": "Rome"}


def test_score_is_the_weighted_mean_and_one_failure_fails_the_row() -> None:
    result = grade([HIT, {**MISS, "weight": 3}], "Paris")
    assert result.score == pytest.approx(0.25)
    assert result.success is False
    assert result.reason == 'Expected output to contain "Rome"'


def test_all_passing() -> None:
    result = grade([HIT, {"type": "icontains", "value": "paris"}], "Paris")
    assert (result.success, result.score, result.reason) == (True, 1.0, "All assertions passed")


def test_a_test_threshold_decides_by_the_score() -> None:
    result = grade([HIT, HIT, MISS], "Paris", threshold=0.6)
    assert result.success is True
    assert result.reason == "Aggregate score 0.67 ≥ 0.6 threshold"
    result = grade([HIT, MISS, MISS], "Paris", threshold=0.6)
    assert result.success is False
    assert result.reason == "Aggregate score 0.33 < 0.6 threshold"


def test_threshold_zero_passes_even_when_every_assertion_fails() -> None:
    result = grade([MISS, MISS], "Paris", threshold=0)
    assert (result.success, result.score) == (True, 0.0)


def test_no_assertions_pass_with_score_one() -> None:
    assert grade_test([], [], None) == GradingResult(success=True, score=1.0, reason="No assertions")


def test_assert_set_is_one_assertion_with_its_own_threshold_and_weight() -> None:
    assert_set = {
        "type": "assert-set",
        "threshold": 0.5,
        "weight": 2,
        "metric": "geo",
        "assert": [HIT, {**MISS, "metric": "rome"}],
    }
    result = grade([assert_set, MISS], "Paris")
    # The set scores 0.5 (one of two), reaches its threshold and passes; its children do not
    # count in the row's score: (0.5 * 2 + 0 * 1) / 3.
    assert result.score == pytest.approx(1 / 3)
    assert result.success is False  # the plain MISS failed
    kinds = [(c.assertion.type if c.assertion else None, c.pass_) for c in result.component_results]
    assert kinds == [("assert-set", True), ("contains", True), ("contains", False), ("contains", False)]
    assert result.named_scores == {"geo": 0.5, "rome": 0.0}


def test_failed_assert_set_reason_is_its_aggregate() -> None:
    assert_set = {"type": "assert-set", "threshold": 0.9, "assert": [HIT, MISS]}
    result = grade([HIT, assert_set], "Paris")
    assert result.success is False
    assert result.reason == "Aggregate score 0.50 < 0.9 threshold"


def test_assert_set_without_threshold_fails_on_any_child() -> None:
    result = grade([{"type": "assert-set", "assert": [HIT, MISS]}], "Paris")
    assert (result.success, result.score) == (False, 0.5)


def test_named_scores_per_metric_are_weighted_means() -> None:
    result = grade(
        [
            {**HIT, "metric": "accuracy", "weight": 3},
            {**MISS, "metric": "accuracy"},
            {"type": "starts-with", "value": "P", "metric": "format"},
        ],
        "Paris",
    )
    assert result.named_scores == {"accuracy": 0.75, "format": 1.0}


def test_metric_names_render_with_the_vars() -> None:
    def render(template: str, variables: Any) -> str:
        return template.replace("{{ topic }}", variables["topic"])

    result = grade([{**HIT, "metric": "{{ topic }}-check"}], "Paris", vars={"topic": "geo"}, render=render)
    assert result.named_scores == {"geo-check": 1.0}


def test_weight_zero_counts_nothing_and_never_fails() -> None:
    result = grade([HIT, {**MISS, "weight": 0}], "Paris")
    assert (result.success, result.score) == (True, 1.0)


def test_an_assertion_that_errors_makes_the_row_an_error() -> None:
    result = grade([HIT, {"type": "cost", "threshold": 1}], "Paris", cost=None)
    assert result.success is False and result.score == 0.0
    assert result.error is not None and "cost" in result.error


def test_grading_json_has_promptfoos_fields() -> None:
    result = grade([{**HIT, "metric": "m"}], "Paris")
    out = grading_json(result)
    assert out["pass"] is True and out["score"] == 1.0 and out["namedScores"] == {"m": 1.0}
    assert out["componentResults"][0] == {
        "pass": True,
        "score": 1.0,
        "reason": "Assertion passed",
        "assertion": {"type": "contains", "value": "Paris", "metric": "m"},
    }
