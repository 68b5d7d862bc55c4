"""What every agent evaluator shares: AgentV's ``clampScore`` and ``deepEqual``, stamping a
result with its evaluator, ``negate`` and error results (docs/agent-formats.md §1.6-1.7)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from pytest_weval.formats.model import Evaluator, EvaluatorResult, Verdict, verdict_of
from pytest_weval.jsvalues import is_number, js_trim, to_fixed

NEGATED = "negated"  # details key: the result went through ``negate`` (set once, never twice)
AUTHORING_ERROR = "authoring_error"  # details key: the error is the file's fault (a bad regex)
REQUIRED_FAILED = "required_failed"  # details key of rubric results: the required rubric ids not met


def clamp_score(value: Any) -> float:
    """AgentV's ``clampScore``: a non-number, NaN or an infinity is 0; else clamped to [0, 1]."""
    if not is_number(value) or math.isnan(value) or math.isinf(value):
        return 0.0
    return 0.0 if value < 0 else 1.0 if value > 1 else float(value)


def deep_equal(a: Any, b: Any) -> bool:
    """AgentV's ``deepEqual`` on JSON-shaped values: JS types must agree (``1`` is not ``true``
    nor ``"1"``), numbers by value (NaN never equal), arrays item by item, objects by their keys
    (same count, each present in both, values deep-equal; order does not matter)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))) or len(a) != len(b):
            return False
        return all(deep_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(key in b and deep_equal(value, b[key]) for key, value in a.items())
    return bool(a == b)


def non_empty_strings(value: Any) -> tuple[str, ...]:
    """AgentV's ``Array.isArray(v) ? v.filter(isNonEmptyString) : []``."""
    if not isinstance(value, (list, tuple)):
        return ()
    return tuple(item for item in value if isinstance(item, str) and js_trim(item) != "")


def is_negated(result: EvaluatorResult) -> bool:
    return isinstance(result.details, dict) and result.details.get(NEGATED) is True


def is_authoring_error(result: EvaluatorResult) -> bool:
    return result.error is not None and isinstance(result.details, dict) and result.details.get(AUTHORING_ERROR) is True


def negate_result(result: EvaluatorResult) -> EvaluatorResult:
    """AgentV's ``negateScore``: score 1 - score, pass and fail swap (borderline stays), hits and
    misses swap, the reasoning says so. ``details[NEGATED]`` is set so it never happens twice.
    An errored result stays as it is."""
    if result.error is not None or is_negated(result):
        return result
    original = result.score
    verdict: Verdict = "fail" if result.verdict == "pass" else "pass" if result.verdict == "fail" else "borderline"
    if result.reasoning:
        reasoning = f"[Negated] {result.reasoning} (original score: {to_fixed(original, 2)})"
    else:
        reasoning = f"[Negated] Original score: {to_fixed(original, 2)}"
    if isinstance(result.details, dict):
        details: dict[str, Any] = {**result.details}
    elif result.details is None:
        details = {}
    else:
        details = {"details": result.details}
    details[NEGATED] = True
    details["original_score"] = original
    return result.model_copy(
        update={
            "score": clamp_score(1 - original),
            "verdict": verdict,
            "hits": result.misses,
            "misses": result.hits,
            "reasoning": reasoning,
            "details": details,
        }
    )


def finalize_result(evaluator: Evaluator, result: EvaluatorResult) -> EvaluatorResult:
    """Stamp ``result`` with its evaluator's name, type, weight and ``required``, and apply its
    ``negate``. Idempotent: every function here returns finalized results, and calling it again
    (say on a judge's result built elsewhere) never negates twice."""
    stamped = result.model_copy(
        update={
            "name": evaluator.name,
            "type": evaluator.type,
            "weight": evaluator.weight,
            "required": evaluator.required,
        }
    )
    return negate_result(stamped) if evaluator.negate else stamped


def make_result(
    evaluator: Evaluator,
    score: float,
    hits: Iterable[str] = (),
    misses: Iterable[str] = (),
    *,
    verdict: Verdict | None = None,
    reasoning: str | None = None,
    details: Any = None,
    children: tuple[EvaluatorResult, ...] = (),
) -> EvaluatorResult:
    """A finalized result; the verdict is 0.8 / 0.6 on ``score`` unless given."""
    result = EvaluatorResult(
        name=evaluator.name,
        type=evaluator.type,
        score=score,
        verdict=verdict if verdict is not None else verdict_of(score),
        hits=tuple(hits),
        misses=tuple(misses),
        reasoning=reasoning,
        details=details,
        children=children,
    )
    return finalize_result(evaluator, result)


def error_result(
    evaluator: Evaluator,
    message: str,
    *,
    authoring: bool = False,
    children: tuple[EvaluatorResult, ...] = (),
) -> EvaluatorResult:
    """An evaluator that could not score: the case errors with ``message`` (ruling 26).
    ``authoring``: the file's fault (an invalid regex, a missing value), marked in ``details``."""
    result = EvaluatorResult(
        name=evaluator.name,
        type=evaluator.type,
        score=0.0,
        verdict="fail",
        error=message,
        details={AUTHORING_ERROR: True} if authoring else None,
        children=children,
    )
    return finalize_result(evaluator, result)
