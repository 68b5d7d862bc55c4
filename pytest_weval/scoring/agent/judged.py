"""Scores from a judge's or a code judge's reply, once parsed (docs/agent-formats.md §1.7.1,
§1.7.2, §1.8; AgentV ``llm-judge.ts`` ``calculateRubricScore`` / ``calculateScoreRangeResult``
and ``code-evaluator.ts``). Pure: the caller sends the request and parses the JSON.

Rubric results carry ``details["required_failed"]``: the ids of the required rubrics the reply
did not meet (a checklist item with ``required`` not satisfied; a score-range item below its
``required_min_score``, or below 10 when it is only ``required``). ``aggregate_case`` fails the
case on any of them (spec semantics, agent-formats.md §5.3 step 4). A judge reply that cannot be
scored (a check without an id, a non-boolean ``satisfied``, a non-numeric ``score``, no check
naming any rubric) gives an error result: the caller may ask again, and if it stays, the case
errors (ruling 26).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pytest_weval.formats.model import Evaluator, EvaluatorResult, Rubric
from pytest_weval.jsvalues import is_number, js_number_str
from pytest_weval.scoring.agent.common import (
    REQUIRED_FAILED,
    clamp_score,
    error_result,
    make_result,
    non_empty_strings,
)

HIT_AT = 7  # score-range mode: a raw score below 7 (of 10) is a miss


def uses_score_ranges(rubrics: Sequence[Rubric]) -> bool:
    """Score-range (analytic) mode: any rubric has ``score_ranges`` (§1.7.2)."""
    return any(rubric.score_ranges for rubric in rubrics)


def _matched_checks(
    evaluator: Evaluator, checks: Any, key: str
) -> tuple[list[tuple[Rubric, dict[str, Any]]], list[str], str | None]:
    """The checks naming a rubric (first one per id, in reply order), the rubric ids the reply
    left out, or why the reply cannot be scored."""
    if not evaluator.rubrics:
        return [], [], f"evaluator '{evaluator.name}' has no rubrics"
    if not isinstance(checks, (list, tuple)):
        return [], [], "the judge's reply has no list of checks"
    by_id = {rubric.id: rubric for rubric in evaluator.rubrics}
    matched: list[tuple[Rubric, dict[str, Any]]] = []
    seen: set[str] = set()
    for check in checks:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            return [], [], f"the judge's reply has a check without an id: {check!r}"
        rubric = by_id.get(check["id"])
        if rubric is None or rubric.id in seen:
            continue
        value = check.get(key)
        if key == "satisfied" and not isinstance(value, bool):
            return [], [], f"the judge's check '{rubric.id}' has no boolean 'satisfied'"
        if key == "score" and (not is_number(value) or math.isnan(value)):
            return [], [], f"the judge's check '{rubric.id}' has no numeric 'score'"
        seen.add(rubric.id)
        matched.append((rubric, check))
    if not matched:
        ids = ", ".join(by_id)
        return [], [], f"the judge's reply scored none of the rubrics ({ids})"
    missing = [rubric_id for rubric_id in by_id if rubric_id not in seen]
    return matched, missing, None


def _reasoning(check: dict[str, Any]) -> str:
    value = check.get("reasoning")
    return value if isinstance(value, str) else ""


def score_checklist(evaluator: Evaluator, checks: Any, *, reasoning: str | None = None) -> EvaluatorResult:
    """Checklist mode (§1.7.1): ``checks = [{id, satisfied, reasoning}]``; only checks whose id
    names a rubric count; score = Σ weight(satisfied) / Σ weight(returned) (0 when that weight
    is 0); each hit or miss reads ``[id] <outcome>: <reasoning>``. A required rubric not
    satisfied fails the evaluator's verdict and is listed in ``details["required_failed"]``."""
    matched, missing, problem = _matched_checks(evaluator, checks, "satisfied")
    if problem is not None:
        return error_result(evaluator, f"{evaluator.name}: {problem}", authoring=not evaluator.rubrics)
    hits: list[str] = []
    misses: list[str] = []
    failed: list[str] = []
    total = earned = 0.0
    for rubric, check in matched:
        text = f"[{rubric.id}] {rubric.outcome}" + (f": {_reasoning(check)}" if _reasoning(check) else "")
        total += rubric.weight
        if check["satisfied"]:
            earned += rubric.weight
            hits.append(text)
        else:
            misses.append(text)
            if rubric.required:
                failed.append(rubric.id)
    score = clamp_score(earned / total) if total > 0 else 0.0
    details: dict[str, Any] = {REQUIRED_FAILED: failed}
    if missing:
        details["missing"] = missing
    return make_result(
        evaluator, score, hits, misses, verdict="fail" if failed else None, reasoning=reasoning, details=details
    )


def _required_min(rubric: Rubric) -> int | None:
    if rubric.required_min_score is not None:
        return rubric.required_min_score
    return 10 if rubric.required else None


def score_score_ranges(evaluator: Evaluator, checks: Any, *, reasoning: str | None = None) -> EvaluatorResult:
    """Score-range mode (§1.7.2): ``checks = [{id, score 0..10, reasoning?}]``; each raw score
    (clamped to 0..10) / 10, weighted mean by rubric weight. A criterion is a miss below its
    required minimum (which fails the evaluator's verdict and is listed in
    ``details["required_failed"]``) or below 7. ``details`` also has AgentV's ``raw_scores``,
    ``normalization`` and ``aggregation``."""
    matched, missing, problem = _matched_checks(evaluator, checks, "score")
    if problem is not None:
        return error_result(evaluator, f"{evaluator.name}: {problem}", authoring=not evaluator.rubrics)
    hits: list[str] = []
    misses: list[str] = []
    failed: list[str] = []
    raw_scores: dict[str, float] = {}
    total = weighted = 0.0
    for rubric, check in matched:
        raw = max(0.0, min(10.0, float(check["score"])))
        raw_scores[rubric.id] = int(raw) if raw.is_integer() else raw
        total += rubric.weight
        weighted += raw / 10 * rubric.weight
        band = next((r.outcome for r in rubric.score_ranges if r.low <= raw <= r.high), "")
        why = _reasoning(check)
        text = f"[{rubric.id}] {rubric.outcome or rubric.id} - Score: {js_number_str(raw)}/10 ({band})" + (
            f": {why}" if why else ""
        )
        minimum = _required_min(rubric)
        if minimum is not None and raw < minimum:
            failed.append(rubric.id)
            misses.append(text)
        elif raw >= HIT_AT:
            hits.append(text)
        else:
            misses.append(text)
    score = clamp_score(weighted / total) if total > 0 else 0.0
    details: dict[str, Any] = {
        "raw_scores": raw_scores,
        "normalization": "score / 10",
        "aggregation": "weighted_average",
        REQUIRED_FAILED: failed,
    }
    if missing:
        details["missing"] = missing
    return make_result(
        evaluator, score, hits, misses, verdict="fail" if failed else None, reasoning=reasoning, details=details
    )


def score_rubric_checks(evaluator: Evaluator, checks: Any, *, reasoning: str | None = None) -> EvaluatorResult:
    """The rubric evaluator's result from the judge's parsed ``checks``: score-range mode when
    any of ``evaluator.rubrics`` has ``score_ranges``, else checklist. ``reasoning``: the
    reply's ``overall_reasoning``."""
    if uses_score_ranges(evaluator.rubrics):
        return score_score_ranges(evaluator, checks, reasoning=reasoning)
    return score_checklist(evaluator, checks, reasoning=reasoning)


def read_code_judge_output(evaluator: Evaluator, parsed: Any) -> EvaluatorResult:
    """A code judge's stdout, parsed as JSON, as AgentV reads it (§1.8): ``score`` (missing,
    non-numeric, NaN: 0; clamped to [0, 1]), ``hits`` / ``misses`` (non-empty strings only),
    ``reasoning`` (a string), ``details`` (an object). Valid JSON that is not an object is an
    error (the judge broke its protocol; ruling 26)."""
    if not isinstance(parsed, dict):
        return error_result(evaluator, f"code judge '{evaluator.name}' printed JSON that is not an object")
    reasoning = parsed.get("reasoning")
    details = parsed.get("details")
    return make_result(
        evaluator,
        clamp_score(parsed.get("score")),
        non_empty_strings(parsed.get("hits")),
        non_empty_strings(parsed.get("misses")),
        reasoning=reasoning if isinstance(reasoning, str) else None,
        details=details if isinstance(details, dict) else None,
    )
