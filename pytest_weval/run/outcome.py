"""The pass/fail decision for a scored response: one rule for pytest items and for
``Weval.judge`` (docs/scoring.md, 'Pass, fail or error').

An item errors rather than fails when its score says nothing about the model: the blueprint has
a mistake in the points (docs/rulings.md, ruling 9), or no judge could score any judged point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pytest_weval.errors import ErrorKind
from pytest_weval.results import Outcome, PointAssessment, passes

MISTAKE_PREFIX = "the blueprint has a mistake in this prompt's points: "
NO_JUDGE_HINT = (
    "judged points need a judge model: set OPENROUTER_API_KEY for the default judges, "
    "or pass --weval-judges=<model id> (any model you have a key for, or one from weval_model_defs)"
)


_KEY_PROBLEMS: frozenset[ErrorKind] = frozenset({"missing_key", "auth"})  # the hint helps with these


def mistakes_message(mistakes: Sequence[tuple[str, str | None, int | None]]) -> str:
    """The error of an item whose points have authoring mistakes: each (point text, what is
    wrong, its line in the blueprint), located so the author can go straight to it."""
    said = [f"{text} (line {line}): {error}" if line else f"{text}: {error}" for text, error, line in mistakes]
    return MISTAKE_PREFIX + "; ".join(said)


@dataclasses.dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    error: str | None = None
    kind: ErrorKind | None = None


def decide(points: Sequence[PointAssessment], score: float | None, threshold: float) -> Verdict:
    """passed, failed, or error with the reason; ``score`` is the rounded aggregate."""
    authoring = [p for p in points if p.authoring_error]
    if authoring:
        return Verdict("error", mistakes_message([(p.key_point_text, p.error, p.line) for p in authoring]), "blueprint")
    judged = [p for p in points if p.kind == "judged"]
    if judged and all(p.coverage_extent is None for p in judged):
        reasons = sorted({_judge_failure_reason(p) for p in judged})
        return Verdict("error", "no judge could score this item's judged points: " + "; ".join(reasons), "judges")
    return Verdict("passed" if passes(score or 0.0, threshold) else "failed")


def _judge_failure_reason(point: PointAssessment) -> str:
    """Why no judge scored this point. The consensus ``error`` is the reference's fixed sentence;
    each judge's own reason (a missing key, say) is in the reflection."""
    reason = (point.reflection or point.error or "all judges failed").strip()
    if _KEY_PROBLEMS.intersection(point.judge_error_kinds):
        reason += f" ({NO_JUDGE_HINT})"
    return reason
