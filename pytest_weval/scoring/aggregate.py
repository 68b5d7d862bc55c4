"""Score aggregation (weval-semantics §3.3, §3.6) and JS rounding (§0, §6)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from pytest_weval.scoring.jsvalues import is_number, js_trim, to_fixed


def round2(value: float) -> float:
    """``parseFloat(value.toFixed(2))``: the exact binary value rounded half away from zero,
    so 0.125 -> 0.13 but 0.425 (stored as 0.42499...) -> 0.42. Python's round() differs."""
    if math.isnan(value) or math.isinf(value):
        return value
    return float(to_fixed(value, 2))


def _weighted_average(points: Sequence[Any]) -> float:
    """``calculateWeightedAverage``: errored points (no coverage) are left out; 0 if none."""
    total = 0.0
    weights = 0.0
    for point in points:
        extent = point.coverage_extent
        if extent is not None:
            multiplier = point.multiplier if point.multiplier is not None else 1
            total += extent * multiplier
            weights += multiplier
    return 0.0 if weights == 0 else total / weights


def aggregate(assessments: Sequence[Any]) -> float:
    """``aggregateCoverageScores``, unrounded.

    Points without a path id form the required group; the others are grouped by path id and
    the best path counts. The required group and the best path are averaged 50/50. An
    all-error required group still counts (as 0). Each item needs ``coverage_extent``
    (None when the point errored), ``multiplier`` and ``path_id``.
    """
    if not assessments:
        return 0.0
    required: list[Any] = []
    paths: dict[str, list[Any]] = {}
    for point in assessments:
        path_id = point.path_id
        if path_id and js_trim(path_id) != "":
            paths.setdefault(path_id, []).append(point)
        else:
            required.append(point)
    groups: list[float] = []
    if required:
        groups.append(_weighted_average(required))
    if paths:
        scores = [_weighted_average(group) for group in paths.values()]
        # Math.max: any NaN wins, whatever its position (Python's max() would depend on it).
        groups.append(math.nan if any(math.isnan(s) for s in scores) else max(scores))
    total = 0.0
    for score in groups:
        total += score
    return total / len(groups)


def _weight(value: Any) -> float | None:
    if is_number(value) and not math.isnan(value) and value > 0:
        return float(value)
    return None


def weighted_mean(scores_and_weights: Iterable[tuple[float, Any]]) -> float | None:
    """A model's average over prompts, weighted by prompt ``weight`` (§3.6,
    ``calculatePerModelScoreStatsForRun``): only a number > 0 counts as a weight, any other
    prompt weighs 1, and when no prompt has a weight it is the plain mean. None when empty.
    """
    pairs = list(scores_and_weights)
    if not pairs:
        return None
    weights = [_weight(w) for _, w in pairs]
    if all(w is None for w in weights):
        total = 0.0
        for score, _ in pairs:
            total += score
        return total / len(pairs)
    numerator = 0.0
    denominator = 0.0
    for (score, _), weight in zip(pairs, weights):
        w = 1.0 if weight is None else weight
        numerator += score * w
        denominator += w
    return numerator / denominator
