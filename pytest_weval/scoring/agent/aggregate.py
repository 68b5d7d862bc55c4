"""Composite evaluators, the case's score and verdict, and agent results as report points
(docs/agent-formats.md §1.6, §1.7, §2.5, §2.6, §5.3; ruling 26).

Composite aggregators (``Aggregator.type``):

* ``weighted_average`` (the default): weights ``aggregator.weights[name]``, else 1.0; the
  child's own ``weight`` is ignored (AgentV). No weight at all: 0.
* ``minimum`` / ``maximum``: the lowest / highest child score (spec).
* ``safety_gate``: a child named in ``required`` scoring below 0.6 makes the composite 0 and
  fail; else the weighted average of all children, weights ``aggregator.weights[name]``, else
  the child's own ``weight`` (the spec's examples weight children that way).
* ``all_or_nothing``: every child at or above ``threshold`` (default 0.8) gives that same
  weighted average, else 0 (spec).
* ``threshold``: AgentV's: the share of children whose verdict is pass or borderline is the
  score; the verdict is pass when it reaches ``threshold``, else fail.

A child with an error makes the composite an error (and so the case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_weval.formats.model import (
    BORDERLINE_AT,
    PASS_AT,
    Aggregator,
    Evaluator,
    EvaluatorResult,
    Verdict,
    verdict_of,
)
from pytest_weval.jsvalues import to_fixed
from pytest_weval.results import PointAssessment
from pytest_weval.scoring.agent.common import (
    REQUIRED_FAILED,
    error_result,
    finalize_result,
    is_authoring_error,
    is_negated,
    make_result,
)

SAFETY_GATE_AT = BORDERLINE_AT  # a safety_gate child below 0.6 fails the composite (spec §2.6)
JUDGED_TYPES = frozenset({"llm_judge", "rubric"})


def _weighted(children: Sequence[EvaluatorResult], weights: Sequence[float]) -> float:
    total = weighted = 0.0
    for child, weight in zip(children, weights):
        total += weight
        weighted += child.score * weight
    return weighted / total if total > 0 else 0.0


def _finalized_children(evaluator: Evaluator, children: Sequence[EvaluatorResult]) -> tuple[EvaluatorResult, ...]:
    by_name = {child.name: child for child in evaluator.evaluators}
    return tuple(finalize_result(by_name[c.name], c) if c.name in by_name else c for c in children)


def aggregate_composite(evaluator: Evaluator, children: Sequence[EvaluatorResult]) -> EvaluatorResult:
    """A composite's result from its children's (in order; each finalized here against the
    child evaluator of the same name, which is idempotent). Hits and misses are the children's,
    each prefixed ``[child]``; ``children`` keeps them whole."""
    kids = _finalized_children(evaluator, children)
    broken = [f"{c.name}: {c.error}" for c in kids if c.error is not None]
    if broken:
        return error_result(evaluator, f"composite '{evaluator.name}': " + "; ".join(broken), children=kids)
    aggregator = evaluator.aggregator or Aggregator(type="weighted_average")
    hits = [f"[{c.name}] {h}" for c in kids for h in c.hits]
    misses = [f"[{c.name}] {m}" for c in kids for m in c.misses]
    reasons = [f"{c.name}: {c.reasoning}" for c in kids if c.reasoning]
    own_weights = [aggregator.weights.get(c.name, c.weight) for c in kids]
    verdict: Verdict | None = None
    kind = aggregator.type
    if kind == "weighted_average":
        score = _weighted(kids, [aggregator.weights.get(c.name, 1.0) for c in kids])
    elif kind == "minimum":
        score = min((c.score for c in kids), default=0.0)
    elif kind == "maximum":
        score = max((c.score for c in kids), default=0.0)
    elif kind == "safety_gate":
        names = {c.name: c for c in kids}
        unknown = [name for name in aggregator.required if name not in names]
        if unknown:
            return error_result(
                evaluator,
                f"composite '{evaluator.name}': safety_gate requires {', '.join(unknown)}, not among its evaluators",
                authoring=True,
                children=kids,
            )
        gated = [names[name] for name in aggregator.required if names[name].score < SAFETY_GATE_AT]
        misses += [f"Safety gate: {c.name} scored {to_fixed(c.score, 2)} (< {SAFETY_GATE_AT})" for c in gated]
        score = 0.0 if gated else _weighted(kids, own_weights)
    elif kind == "all_or_nothing":
        threshold = PASS_AT if aggregator.threshold is None else aggregator.threshold
        below = [c for c in kids if c.score < threshold]
        misses += [f"All or nothing: {c.name} scored {to_fixed(c.score, 2)} (< {threshold})" for c in below]
        score = 0.0 if below or not kids else _weighted(kids, own_weights)
    else:  # threshold (AgentV)
        if aggregator.threshold is None:
            return error_result(
                evaluator,
                f"composite '{evaluator.name}': threshold aggregator has no threshold",
                authoring=True,
                children=kids,
            )
        passing = sum(1 for c in kids if c.verdict in ("pass", "borderline"))
        score = passing / len(kids) if kids else 0.0
        verdict = "pass" if score >= aggregator.threshold else "fail"
        reasons.insert(0, f"{passing}/{len(kids)} evaluators passed (threshold: {aggregator.threshold})")
    return make_result(
        evaluator,
        score,
        hits,
        misses,
        verdict=verdict,
        reasoning="; ".join(reasons) or None,
        details={"aggregator": kind},
        children=kids,
    )


@dataclass(frozen=True)
class CaseScore:
    """A case's outcome over its (top-level) evaluator results.

    ``raw_score``: Σ score·weight / Σ weight (0 when Σ weight is 0), before gates. ``score``:
    the same, or 0 when a required gate failed (AgentV). ``verdict``: pass >= 0.8, borderline
    >= 0.6, else fail; fail whenever ``gate_failures`` is not empty. ``error``: set when any
    evaluator could not score; then score, raw_score and verdict are None (ruling 26: a broken
    judge says nothing about the model). ``authoring_error``: every such error is the file's
    fault (an invalid regex): the item errors as a located authoring mistake.
    """

    score: float | None
    raw_score: float | None
    verdict: Verdict | None
    gate_failures: tuple[str, ...] = ()
    error: str | None = None
    authoring_error: bool = False


def required_gate_failures(result: EvaluatorResult) -> list[str]:
    """Why ``result`` fails the case: it scored below its ``required``; or (rubrics, unless
    negated) a required rubric in ``details["required_failed"]`` was not met."""
    failures: list[str] = []
    label = f"{result.name} ({result.type})"
    if result.required is not None and result.score < result.required:
        failures.append(
            f"{label} scored {to_fixed(result.score, 2)}, below its required {to_fixed(result.required, 2)}"
        )
    if isinstance(result.details, dict) and not is_negated(result):
        failed = result.details.get(REQUIRED_FAILED)
        if isinstance(failed, (list, tuple)):
            failures += [f"{label}: required rubric '{rubric_id}' not met" for rubric_id in failed]
    return failures


def aggregate_case(results: Sequence[EvaluatorResult]) -> CaseScore:
    """The case's score, verdict and gates (spec semantics, agent-formats.md §5.3 steps 3-5).
    ``results``: the top-level evaluators' finalized results (negate already applied)."""
    broken = [r for r in results if r.error is not None]
    if broken:
        message = "; ".join(f"{r.name} ({r.type}): {r.error}" for r in broken)
        return CaseScore(None, None, None, error=message, authoring_error=all(is_authoring_error(r) for r in broken))
    total = weighted = 0.0
    for result in results:
        total += result.weight
        weighted += result.score * result.weight
    raw = weighted / total if total > 0 else 0.0
    gates = tuple(failure for result in results for failure in required_gate_failures(result))
    if gates:
        return CaseScore(0.0, raw, "fail", gates)
    return CaseScore(raw, raw, verdict_of(raw))


def _reflection(result: EvaluatorResult) -> str | None:
    lines = [result.reasoning] if result.reasoning else []
    lines += [f"hit: {h}" for h in result.hits]
    lines += [f"miss: {m}" for m in result.misses]
    lines += [f"gate: {g}" for g in required_gate_failures(result)] if result.error is None else []
    return "\n".join(lines) or None


def to_point_assessments(
    results: Sequence[EvaluatorResult], evaluators: Sequence[Evaluator] = ()
) -> list[PointAssessment]:
    """One report point per top-level evaluator, so agent cases join the same reports as
    blueprints: ``"<name> (<type>)"``, its score as coverage (None on error), its weight as the
    multiplier, reasoning / hits / misses / gate failures as the reflection, ``judged`` for
    llm_judge and rubric. ``evaluators`` (optional): where each is written (by name) for
    ``line``."""
    lines = {e.name: e.location.line or None for e in evaluators if e.location is not None}
    return [
        PointAssessment(
            key_point_text=f"{r.name} ({r.type})",
            coverage_extent=None if r.error is not None else r.score,
            reflection=_reflection(r),
            error=r.error,
            multiplier=r.weight,
            is_inverted=is_negated(r),
            kind="judged" if r.type in JUDGED_TYPES else "function",
            authoring_error=is_authoring_error(r),
            line=lines.get(r.name),
        )
        for r in results
    ]
