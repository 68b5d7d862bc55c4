"""Composite aggregators, the case score with weights, required gates, negate and errors, and
agent results as report points (docs/agent-formats.md §1.6, §1.7, §2.5, §2.6, §5.3; ruling 26)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.model import Aggregator, Evaluator, EvaluatorResult
from pytest_weval.scoring.agent import (
    REQUIRED_FAILED,
    CaseScore,
    aggregate_case,
    aggregate_composite,
    error_result,
    make_result,
    to_point_assessments,
)


def res(name: str, score: float, *, type_: str = "llm_judge", **kw: Any) -> EvaluatorResult:
    """A finalized result of an evaluator built from ``kw`` (weight, required, negate)."""
    details = kw.pop("details", None)
    hits = kw.pop("hits", ())
    misses = kw.pop("misses", ())
    reasoning = kw.pop("reasoning", None)
    evaluator = Evaluator(name=name, type=type_, **kw)  # type: ignore[arg-type]
    return make_result(evaluator, score, hits, misses, details=details, reasoning=reasoning)


def composite(aggregator: Aggregator | None, *children: Evaluator) -> Evaluator:
    return Evaluator(name="gate", type="composite", evaluators=children, aggregator=aggregator)


# --- case score ---------------------------------------------------------------------------------


def test_case_score_is_the_weighted_mean() -> None:
    scored = aggregate_case([res("a", 1.0, weight=2), res("b", 0.5), res("c", 0.0)])
    assert scored == CaseScore(score=0.625, raw_score=0.625, verdict="borderline")  # (2 + 0.5) / 4


def test_a_zero_weight_evaluator_is_information_only() -> None:
    assert aggregate_case([res("a", 1.0), res("info", 0.0, weight=0)]) == CaseScore(1.0, 1.0, "pass")


def test_all_weights_zero_scores_zero() -> None:
    assert aggregate_case([res("a", 1.0, weight=0), res("b", 1.0, weight=0)]) == CaseScore(0.0, 0.0, "fail")
    assert aggregate_case([]) == CaseScore(0.0, 0.0, "fail")


@pytest.mark.parametrize(
    "scores, verdict",
    [
        ((0.8,), "pass"),
        ((1.0, 0.6), "pass"),  # exactly 0.8
        ((0.79999,), "borderline"),
        ((0.6,), "borderline"),
        ((1.0, 0.2), "borderline"),  # exactly 0.6
        ((0.59999,), "fail"),
    ],
)
def test_case_verdict_thresholds(scores: tuple[float, ...], verdict: str) -> None:
    assert aggregate_case([res(f"e{i}", s) for i, s in enumerate(scores)]).verdict == verdict


def test_an_evaluator_below_its_required_score_fails_the_case() -> None:
    scored = aggregate_case([res("safety", 0.7, required=0.8), res("quality", 1.0, weight=3)])
    assert scored.raw_score == pytest.approx(0.925)  # the mean before the gate, kept
    assert (scored.score, scored.verdict) == (0.0, "fail")
    assert scored.gate_failures == ("safety (llm_judge) scored 0.70, below its required 0.80",)


def test_a_required_score_reached_exactly_passes() -> None:
    assert aggregate_case([res("safety", 0.8, required=0.8)]) == CaseScore(0.8, 0.8, "pass")


def test_a_required_gate_counts_even_at_weight_zero() -> None:
    scored = aggregate_case([res("a", 1.0), res("gate", 0.4, weight=0, required=0.5)])
    assert (scored.raw_score, scored.verdict) == (1.0, "fail")


def test_a_required_rubric_not_met_fails_the_case() -> None:
    rubric = res("rubric", 0.9, type_="rubric", details={REQUIRED_FAILED: ["safe", "cites"]})
    scored = aggregate_case([rubric])
    assert (scored.score, scored.raw_score, scored.verdict) == (0.0, 0.9, "fail")
    assert scored.gate_failures == (
        "rubric (rubric): required rubric 'safe' not met",
        "rubric (rubric): required rubric 'cites' not met",
    )
    assert aggregate_case([res("rubric", 0.9, type_="rubric", details={REQUIRED_FAILED: []})]).verdict == "pass"


def test_negate_applies_before_the_required_gate() -> None:
    # a judge found the forbidden thing at 0.1: negated 0.9, which meets required 0.8
    assert aggregate_case([res("no-leak", 0.1, required=0.8, negate=True)]).verdict == "pass"
    failed = aggregate_case([res("no-leak", 0.3, required=0.8, negate=True)])
    assert failed.gate_failures == ("no-leak (llm_judge) scored 0.70, below its required 0.80",)


def test_a_negated_rubric_does_not_gate_on_its_required_items() -> None:
    rubric = res("rubric", 0.2, type_="rubric", negate=True, details={REQUIRED_FAILED: ["x"]})
    assert aggregate_case([rubric]) == CaseScore(0.8, 0.8, "pass")


def test_an_evaluator_error_makes_the_case_an_error_not_a_zero() -> None:
    broken = error_result(Evaluator(name="style", type="code_judge"), "exited with status 2")
    scored = aggregate_case([res("a", 1.0), broken, res("b", 0.0, required=0.5)])
    assert scored == CaseScore(None, None, None, error="style (code_judge): exited with status 2")
    assert not scored.authoring_error


def test_an_authoring_error_is_marked() -> None:
    bad = error_result(Evaluator(name="re", type="regex"), "Invalid regular expression", authoring=True)
    assert aggregate_case([bad]).authoring_error
    other = error_result(Evaluator(name="j", type="llm_judge"), "no reply")
    assert not aggregate_case([bad, other]).authoring_error


# --- composite ------------------------------------------------------------------------------------

SAFETY = Evaluator(name="safety", type="llm_judge")
QUALITY = Evaluator(name="quality", type="llm_judge", weight=2)
FORMAT = Evaluator(name="format", type="code_judge", weight=0.5)


def test_weighted_average_uses_aggregator_weights_and_ignores_the_childs() -> None:
    evaluator = composite(Aggregator(type="weighted_average", weights={"safety": 3}), SAFETY, QUALITY)
    result = aggregate_composite(evaluator, [res("safety", 1.0), res("quality", 0.0, weight=2)])
    assert result.score == 0.75  # 3 * 1 / (3 + 1): quality's own weight 2 is ignored
    assert result.verdict == "borderline"
    assert result.details == {"aggregator": "weighted_average"}
    assert [c.name for c in result.children] == ["safety", "quality"]


def test_no_aggregator_is_a_weighted_average_and_prefixes_child_lines() -> None:
    result = aggregate_composite(
        composite(None, SAFETY, QUALITY),
        [res("safety", 1.0, hits=["safe"], reasoning="fine"), res("quality", 0.5, misses=["thin"])],
    )
    assert result.score == 0.75
    assert result.hits == ("[safety] safe",) and result.misses == ("[quality] thin",)
    assert result.reasoning == "safety: fine"


def test_minimum_and_maximum() -> None:
    children = [res("safety", 0.9), res("quality", 0.7), res("format", 0.8)]
    assert aggregate_composite(composite(Aggregator(type="minimum"), SAFETY, QUALITY, FORMAT), children).score == 0.7
    assert aggregate_composite(composite(Aggregator(type="maximum"), SAFETY, QUALITY, FORMAT), children).score == 0.9


def test_safety_gate_fails_when_a_listed_child_is_below_0_6() -> None:
    evaluator = composite(Aggregator(type="safety_gate", required=("safety",)), SAFETY, QUALITY, FORMAT)
    failed = aggregate_composite(
        evaluator, [res("safety", 0.59), res("quality", 1.0, weight=2), res("format", 1.0, weight=0.5)]
    )
    assert (failed.score, failed.verdict) == (0.0, "fail")
    assert failed.misses[-1] == "Safety gate: safety scored 0.59 (< 0.6)"
    passed = aggregate_composite(
        evaluator, [res("safety", 0.6), res("quality", 0.9, weight=2), res("format", 1.0, weight=0.5)]
    )
    # the weighted average of all, by the children's own weights: (0.6 + 1.8 + 0.5) / 3.5
    assert passed.score == pytest.approx(2.9 / 3.5)
    assert passed.verdict == "pass"


def test_safety_gate_naming_an_unknown_child_is_an_authoring_error() -> None:
    evaluator = composite(Aggregator(type="safety_gate", required=("toxicity",)), SAFETY)
    result = aggregate_composite(evaluator, [res("safety", 1.0)])
    assert result.error == "composite 'gate': safety_gate requires toxicity, not among its evaluators"


def test_all_or_nothing() -> None:
    evaluator = composite(Aggregator(type="all_or_nothing", threshold=0.7), SAFETY, QUALITY)
    # every child at or above 0.7: the weighted average by the children's weights (quality: 2)
    assert aggregate_composite(evaluator, [res("safety", 0.7), res("quality", 1.0)]).score == pytest.approx(2.7 / 3)
    below = aggregate_composite(evaluator, [res("safety", 0.69), res("quality", 1.0)])
    assert (below.score, below.verdict) == (0.0, "fail")
    assert below.misses == ("All or nothing: safety scored 0.69 (< 0.7)",)


def test_threshold_is_agentvs_share_of_passing_children() -> None:
    children = [res("safety", 0.9), res("quality", 0.65), res("format", 0.1)]  # pass, borderline, fail
    at = aggregate_composite(composite(Aggregator(type="threshold", threshold=0.6), SAFETY, QUALITY, FORMAT), children)
    assert (at.score, at.verdict) == (pytest.approx(2 / 3), "pass")
    assert at.reasoning == "2/3 evaluators passed (threshold: 0.6)"
    above = aggregate_composite(
        composite(Aggregator(type="threshold", threshold=0.7), SAFETY, QUALITY, FORMAT), children
    )
    assert above.verdict == "fail"


def test_a_child_error_makes_the_composite_an_error() -> None:
    broken = error_result(QUALITY, "judge gave no usable reply")
    result = aggregate_composite(composite(None, SAFETY, QUALITY), [res("safety", 1.0), broken])
    assert result.error == "composite 'gate': quality: judge gave no usable reply"
    assert aggregate_case([result]).error == "gate (composite): composite 'gate': quality: judge gave no usable reply"


def test_children_are_finalized_against_their_evaluators() -> None:
    # a child result built without its evaluator's negate gets it here
    negated_child = Evaluator(name="leak", type="contains", value="password", negate=True)
    raw = make_result(Evaluator(name="leak", type="contains"), 1.0)
    result = aggregate_composite(
        composite(Aggregator(type="minimum"), SAFETY, negated_child), [res("safety", 1.0), raw]
    )
    assert result.score == 0.0
    assert result.children[1].details["negated"] is True


def test_a_composite_is_negated_and_stamped_as_a_whole() -> None:
    evaluator = Evaluator(name="gate", type="composite", evaluators=(SAFETY,), negate=True, weight=4)
    result = aggregate_composite(evaluator, [res("safety", 0.75)])
    assert (result.score, result.weight) == (pytest.approx(0.25), 4)


# --- report points ----------------------------------------------------------------------------------


def test_to_point_assessments() -> None:
    judge = res("quality", 0.75, weight=2, reasoning="decent", hits=["clear"], misses=["short"])
    rubric = res("rubric", 0.9, type_="rubric", details={REQUIRED_FAILED: ["safe"]})
    regex = error_result(Evaluator(name="pattern", type="regex"), "Invalid regular expression", authoring=True)
    negated = res("no-sorry", 0.0, type_="contains", value="sorry", negate=True)
    evaluators = [Evaluator(name="quality", type="llm_judge", location=Location(path="e.yaml", line=12))]
    points = to_point_assessments([judge, rubric, regex, negated], evaluators)
    assert [p.key_point_text for p in points] == [
        "quality (llm_judge)",
        "rubric (rubric)",
        "pattern (regex)",
        "no-sorry (contains)",
    ]
    assert [p.kind for p in points] == ["judged", "judged", "function", "function"]
    assert [p.coverage_extent for p in points] == [0.75, 0.9, None, 1.0]
    assert [p.multiplier for p in points] == [2, 1, 1, 1]
    assert points[0].reflection == "decent\nhit: clear\nmiss: short"
    assert points[0].line == 12 and points[1].line is None
    assert points[1].reflection == "gate: rubric (rubric): required rubric 'safe' not met"
    assert (points[2].error, points[2].authoring_error, points[2].reflection) == (
        "Invalid regular expression",
        True,
        None,
    )
    assert points[3].is_inverted and not points[0].is_inverted
