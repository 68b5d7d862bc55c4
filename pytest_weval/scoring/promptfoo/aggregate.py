"""A row's outcome from its assertions, by promptfoo 0.123.1's rules (``AssertionsResult`` and
``runAssertions`` in its ``src/assertions/``):

* the score is the weighted mean of the assertions' scores (0 when every weight is 0);
* the row passes only if no assertion failed, unless the test has a ``threshold``: then it passes
  whenever the score reaches it (a threshold of 0 passes even when every assertion fails);
* an ``assert-set`` is one assertion with its own threshold and weight, scored the same way over
  its children; its children are listed after it and do not count in the row's score;
* ``namedScores``: per metric, the weighted mean of the scores of the assertions naming it (an
  assert-set passes its children's metrics up, weighted by its own weight).

Pure: no pytest, no HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_weval.jsvalues import js_number_str, to_fixed
from pytest_weval.scoring.promptfoo.model import (
    Assertion,
    AssertionContext,
    ComponentResult,
    GradingResult,
    rendered_metric,
)

__all__ = ["grade_test", "score_assert_set"]


class _Tally:
    """promptfoo's ``AssertionsResult``: results added one by one, then the verdict."""

    def __init__(self, threshold: float | None):
        self.threshold = threshold
        self.total_score = 0.0
        self.total_weight = 0.0
        self.failed_reason: str | None = None
        self.named: dict[str, float] = {}
        self.named_weights: dict[str, float] = {}

    def add(self, result: ComponentResult, metric: str | None, weight: float) -> None:
        self.total_score += result.score * weight
        self.total_weight += weight
        if metric:
            self.named[metric] = self.named.get(metric, 0.0) + result.score * weight
            self.named_weights[metric] = self.named_weights.get(metric, 0.0) + weight
        for name, score in result.named_scores.items():
            if name != metric:
                incoming = result.named_score_weights.get(name, 1.0) * weight
                self.named[name] = self.named.get(name, 0.0) + score * incoming
                self.named_weights[name] = self.named_weights.get(name, 0.0) + incoming
        if not result.pass_:
            self.failed_reason = result.reason

    def verdict(self) -> tuple[bool, float, str, dict[str, float]]:
        score = self.total_score / self.total_weight if self.total_weight > 0 else 0.0
        passed = self.failed_reason is None
        reason = self.failed_reason if self.failed_reason is not None else "All assertions passed"
        if self.threshold is not None and self.threshold == self.threshold:
            passed = score >= self.threshold
            comparator = "≥" if passed else "<"
            reason = f"Aggregate score {to_fixed(score, 2)} {comparator} {_js_num(self.threshold)} threshold"
        named = {
            name: (value / self.named_weights[name] if self.named_weights.get(name, 0) > 0 else 0.0)
            for name, value in self.named.items()
        }
        return passed, score, reason, named


def _js_num(value: float) -> str:
    return js_number_str(value)


def score_assert_set(
    assertion: Assertion, children: Sequence[ComponentResult], ctx: AssertionContext | None = None
) -> ComponentResult:
    """An assert-set's own result from its children's, in their order."""
    tally = _Tally(assertion.threshold)
    for child, result in zip(assertion.children, children, strict=True):
        tally.add(result, result.metric, child.weight)
    passed, score, reason, named = tally.verdict()
    metric = assertion.metric
    if metric and ctx is not None:
        metric = rendered_metric(assertion, ctx)
    flagged = [r for r in children if r.error]
    if flagged:
        return ComponentResult(
            pass_=False,
            score=0.0,
            reason=flagged[0].reason,
            assertion=assertion,
            metric=metric,
            error=True,
            component_results=tuple(children),
        )
    return ComponentResult(
        pass_=passed,
        score=score,
        reason=reason,
        assertion=assertion,
        metric=metric,
        named_scores=named,
        named_score_weights={name: tally.named_weights[name] for name in named},
        component_results=tuple(children),
        metadata={"assertionSet": _set_metadata(assertion)},
    )


def _set_metadata(assertion: Assertion) -> dict[str, object]:
    out: dict[str, object] = {"type": "assert-set", "assertionCount": len(assertion.children)}
    if assertion.metric is not None:
        out["metric"] = assertion.metric
    if assertion.threshold is not None:
        out["threshold"] = assertion.threshold
    if "weight" in assertion.raw:
        out["weight"] = assertion.weight
    return out


def grade_test(
    assertions: Sequence[Assertion], results: Sequence[ComponentResult], test_threshold: float | None
) -> GradingResult:
    """The row's ``gradingResult`` from its top-level assertions' results (an assert-set's result
    holds its children's, as ``score_assertion`` / the assert-set grading give it).

    A row without assertions passes with score 1 ("No assertions"). A result that errored (an
    assertion promptfoo refuses while scoring, e.g. ``cost`` without a price) makes the row an
    error: ``error`` says why, success is false and the score 0, as promptfoo's row shows it.
    """
    if not assertions:
        return GradingResult(success=True, score=1.0, reason="No assertions")
    if len(results) != len(assertions):
        raise ValueError(f"grade_test: {len(results)} results for {len(assertions)} assertions")
    flat: list[ComponentResult] = []
    for result in results:
        flat.append(result)
        flat.extend(
            child if child.assertion is not None else child.model_copy(update={"assertion": result.assertion})
            for child in result.component_results
        )
    errored = next((r for r in flat if r.error), None)
    if errored is not None:
        return GradingResult(
            success=False, score=0.0, reason=errored.reason, component_results=tuple(flat), error=errored.reason
        )
    tally = _Tally(test_threshold)
    pairs = list(zip(assertions, results, strict=True))
    # promptfoo adds the assert-sets' results after every other assertion's: the reason of a
    # failed row is the last failure so added.
    for assertion, result in [p for p in pairs if p[0].type != "assert-set"] + [
        p for p in pairs if p[0].type == "assert-set"
    ]:
        tally.add(result, result.metric, assertion.weight)
    passed, score, reason, named = tally.verdict()
    return GradingResult(success=passed, score=score, reason=reason, component_results=tuple(flat), named_scores=named)
