"""Scores from a judge's parsed rubric checks and from a code judge's stdout
(docs/agent-formats.md §1.7.1, §1.7.2, §1.8; AgentV ``calculateRubricScore`` /
``calculateScoreRangeResult`` / ``code-evaluator.ts``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_weval.formats.model import Evaluator, Rubric, ScoreRange
from pytest_weval.scoring.agent import (
    REQUIRED_FAILED,
    is_authoring_error,
    read_code_judge_output,
    score_checklist,
    score_rubric_checks,
    score_score_ranges,
    uses_score_ranges,
)

CHECKLIST = (
    Rubric(id="cmd", outcome="Gives python -m venv", weight=1),
    Rubric(id="activate", outcome="Explains activation", weight=2),
    Rubric(id="safe", outcome="Safe content", weight=1, required=True),
)
BANDS = (
    ScoreRange(low=0, high=3, outcome="poor"),
    ScoreRange(low=4, high=6, outcome="fair"),
    ScoreRange(low=7, high=10, outcome="good"),
)


def rubric_evaluator(*rubrics: Rubric, **kw: Any) -> Evaluator:
    return Evaluator(name="rubric", type="rubric", rubrics=rubrics, **kw)


def check(id_: str, satisfied: bool, reasoning: str = "because") -> dict[str, Any]:
    return {"id": id_, "satisfied": satisfied, "reasoning": reasoning}


# --- checklist -----------------------------------------------------------------------------


def test_checklist_is_the_weighted_share_of_satisfied_checks() -> None:
    checks = [
        check("cmd", True, "uses venv"),
        check("activate", False, "no"),
        check("safe", True),
        check("other", False),
    ]
    result = score_checklist(rubric_evaluator(*CHECKLIST), checks, reasoning="overall fine")
    # satisfied weight 1 + 1 of returned 1 + 2 + 1 ("other" names no rubric: not counted)
    assert result.score == 0.5
    assert result.verdict == "fail"
    assert result.hits == ("[cmd] Gives python -m venv: uses venv", "[safe] Safe content: because")
    assert result.misses == ("[activate] Explains activation: no",)
    assert result.reasoning == "overall fine"
    assert result.details == {REQUIRED_FAILED: []}


def test_a_required_checklist_item_not_met_fails_the_verdict_whatever_the_score() -> None:
    checks = [check("cmd", True), check("activate", True), check("safe", False)]
    result = score_checklist(rubric_evaluator(*CHECKLIST), checks)
    assert result.score == 0.75  # borderline by score ...
    assert result.verdict == "fail"  # ... but a required rubric failed
    assert result.details == {REQUIRED_FAILED: ["safe"]}


def test_only_the_returned_checks_count() -> None:
    result = score_checklist(rubric_evaluator(*CHECKLIST), [check("cmd", True)])
    assert (result.score, result.verdict) == (1.0, "pass")
    assert result.details == {REQUIRED_FAILED: [], "missing": ["activate", "safe"]}


def test_a_repeated_check_id_counts_once() -> None:
    result = score_checklist(
        rubric_evaluator(*CHECKLIST), [check("cmd", True), check("cmd", False), check("activate", False)]
    )
    assert result.score == pytest.approx(1 / 3)


def test_zero_weight_rubrics_give_zero() -> None:
    evaluator = rubric_evaluator(Rubric(id="a", outcome="A", weight=0))
    assert score_checklist(evaluator, [check("a", True)]).score == 0.0


def test_no_reasoning_drops_the_colon() -> None:
    result = score_checklist(rubric_evaluator(*CHECKLIST), [{"id": "cmd", "satisfied": True}])
    assert result.hits == ("[cmd] Gives python -m venv",)


@pytest.mark.parametrize(
    "checks, message",
    [
        ("not a list", "rubric: the judge's reply has no list of checks"),
        ([{"satisfied": True}], "rubric: the judge's reply has a check without an id: {'satisfied': True}"),
        ([{"id": "cmd", "satisfied": "yes"}], "rubric: the judge's check 'cmd' has no boolean 'satisfied'"),
        ([check("nope", True)], "rubric: the judge's reply scored none of the rubrics (cmd, activate, safe)"),
        ([], "rubric: the judge's reply scored none of the rubrics (cmd, activate, safe)"),
    ],
)
def test_an_unusable_reply_is_an_error_not_a_zero(checks: Any, message: str) -> None:
    result = score_checklist(rubric_evaluator(*CHECKLIST), checks)
    assert result.error == message
    assert not is_authoring_error(result)


def test_an_evaluator_without_rubrics_is_an_authoring_error() -> None:
    result = score_rubric_checks(rubric_evaluator(), [check("a", True)])
    assert result.error == "rubric: evaluator 'rubric' has no rubrics"
    assert is_authoring_error(result)


# --- score ranges -----------------------------------------------------------------------------


def test_score_ranges_are_the_weighted_mean_of_raw_over_ten() -> None:
    evaluator = rubric_evaluator(
        Rubric(id="depth", outcome="Depth", weight=1, score_ranges=BANDS),
        Rubric(id="clarity", outcome="", weight=3, score_ranges=BANDS),
    )
    checks = [{"id": "depth", "score": 8, "reasoning": "thorough"}, {"id": "clarity", "score": 5}]
    result = score_rubric_checks(evaluator, checks, reasoning="ok")
    assert uses_score_ranges(evaluator.rubrics)
    assert result.score == pytest.approx((0.8 * 1 + 0.5 * 3) / 4)  # 0.575
    assert result.verdict == "fail"
    assert result.hits == ("[depth] Depth - Score: 8/10 (good): thorough",)
    assert result.misses == ("[clarity] clarity - Score: 5/10 (fair)",)  # below 7; no outcome: the id
    assert result.details == {
        "raw_scores": {"depth": 8, "clarity": 5},
        "normalization": "score / 10",
        "aggregation": "weighted_average",
        REQUIRED_FAILED: [],
    }


def test_score_range_required_minimum_fails_the_verdict() -> None:
    evaluator = rubric_evaluator(
        Rubric(id="a", outcome="A", score_ranges=BANDS, required_min_score=8),
        Rubric(id="b", outcome="B", score_ranges=BANDS),
    )
    result = score_score_ranges(evaluator, [{"id": "a", "score": 7}, {"id": "b", "score": 10}])
    assert result.score == pytest.approx(0.85)
    assert result.verdict == "fail"
    assert result.misses == ("[a] A - Score: 7/10 (good)",)  # >= 7, but below its minimum
    assert result.details[REQUIRED_FAILED] == ["a"]


def test_score_range_required_without_a_minimum_needs_ten() -> None:
    evaluator = rubric_evaluator(Rubric(id="a", outcome="A", score_ranges=BANDS, required=True))
    assert score_score_ranges(evaluator, [{"id": "a", "score": 9}]).details[REQUIRED_FAILED] == ["a"]
    assert score_score_ranges(evaluator, [{"id": "a", "score": 10}]).details[REQUIRED_FAILED] == []


def test_score_range_raw_scores_are_clamped() -> None:
    evaluator = rubric_evaluator(Rubric(id="a", outcome="A", score_ranges=BANDS))
    assert score_score_ranges(evaluator, [{"id": "a", "score": 12}]).score == 1.0
    assert score_score_ranges(evaluator, [{"id": "a", "score": -3}]).score == 0.0
    half = score_score_ranges(evaluator, [{"id": "a", "score": 6.5}])
    assert half.score == 0.65 and half.misses == ("[a] A - Score: 6.5/10 ()",)


@pytest.mark.parametrize("score", ["7", None, True, math.nan])
def test_a_non_numeric_range_score_is_an_error(score: Any) -> None:
    evaluator = rubric_evaluator(Rubric(id="a", outcome="A", score_ranges=BANDS))
    result = score_score_ranges(evaluator, [{"id": "a", "score": score}])
    assert result.error == "rubric: the judge's check 'a' has no numeric 'score'"


def test_any_score_range_switches_the_whole_evaluator_to_range_mode() -> None:
    evaluator = rubric_evaluator(Rubric(id="a", outcome="A"), Rubric(id="b", outcome="B", score_ranges=BANDS))
    result = score_rubric_checks(evaluator, [{"id": "a", "score": 10}, {"id": "b", "score": 0}])
    assert result.score == 0.5 and "raw_scores" in result.details


def test_rubric_results_are_stamped_and_negated() -> None:
    evaluator = rubric_evaluator(*CHECKLIST, weight=2, required=0.9, negate=True)
    result = score_rubric_checks(evaluator, [check("cmd", True), check("activate", False), check("safe", True)])
    assert (result.weight, result.required) == (2, 0.9)
    assert result.score == pytest.approx(0.5) and result.details["negated"] is True


# --- code judge -----------------------------------------------------------------------------


CODE = Evaluator(name="format", type="code_judge", command=("python", "judge.py"))


def test_code_judge_output_as_agentv_reads_it() -> None:
    result = read_code_judge_output(
        CODE,
        {"score": 0.7, "hits": ["valid", "", "  ", 3], "misses": ["long"], "reasoning": "mostly", "details": {"n": 1}},
    )
    assert (result.score, result.verdict) == (0.7, "borderline")
    assert result.hits == ("valid",) and result.misses == ("long",)
    assert (result.reasoning, result.details) == ("mostly", {"n": 1})
    assert (result.name, result.type) == ("format", "code_judge")


@pytest.mark.parametrize(
    "score, expected",
    [
        (None, 0.0),
        ("0.9", 0.0),
        (True, 0.0),
        (math.nan, 0.0),
        (math.inf, 0.0),
        (1.5, 1.0),
        (-0.2, 0.0),
        (1, 1.0),
        (0.8, 0.8),
    ],
)
def test_code_judge_score_is_a_clamped_number_else_zero(score: Any, expected: float) -> None:
    parsed = {} if score is None else {"score": score}
    assert read_code_judge_output(CODE, parsed).score == expected


def test_code_judge_odd_fields_are_dropped() -> None:
    result = read_code_judge_output(CODE, {"score": 1, "hits": "one", "reasoning": 5, "details": [1]})
    assert (result.hits, result.reasoning, result.details) == ((), None, None)


@pytest.mark.parametrize("parsed", [[1, 2], 0.5, "ok", None])
def test_code_judge_json_that_is_not_an_object_is_an_error(parsed: Any) -> None:
    result = read_code_judge_output(CODE, parsed)
    assert result.error == "code judge 'format' printed JSON that is not an object"
