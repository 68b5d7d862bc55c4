"""Score aggregation (docs/scoring.md, 'Aggregation' and 'Prompt weights and roll-ups') and JS rounding (docs/scoring.md, 'Rounding')."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pytest_weval.jsvalues import is_number, js_trim, to_fixed


def round2(value: float) -> float:
    """``parseFloat(value.toFixed(2))``: the exact binary value rounded half away from zero,
    so 0.125 -> 0.13 but 0.425 (stored as 0.42499...) -> 0.42. Python's round() differs."""
    if math.isnan(value) or math.isinf(value):
        return value
    return float(to_fixed(value, 2))


def fmt_score(value: float | None) -> str:
    """A score for people: two decimals (as Weval shows them), a dash when there is none. The
    one way every layer prints a score (terminal, HTML, failure text, lint, ``Judgement``), so
    0.625 reads 0.63 everywhere (Python's ``:.2f`` rounds it to even: 0.62)."""
    if value is None:
        return "—"
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def is_required(point: Any) -> bool:
    """A point with no path id, or one that is empty or only JS whitespace, is required; the
    others belong to the alternative path their id names."""
    path_id = point.path_id
    return not (path_id and js_trim(path_id) != "")


@dataclass(frozen=True)
class Group:
    """The required points, or one alternative path, as ``aggregateCoverageScores`` sees them."""

    indices: tuple[int, ...]  # positions of its points in the aggregated sequence, in order
    score: float  # the weighted mean of its scored points; 0 when none was scored
    weight: float  # the sum of its scored points' multipliers (the mean's denominator)
    scored: int  # points with a coverage extent (errored points are left out)


@dataclass(frozen=True)
class Aggregation:
    required: Group | None
    paths: dict[str, Group]  # by path id, in order of first appearance
    best_path: str | None  # the path that counts: Math.max's pick (first of equals; NaN wins)

    @property
    def counted(self) -> tuple[Group, ...]:
        """The groups averaged 50/50 into the score: the required group, the best path."""
        best = self.paths[self.best_path] if self.best_path is not None else None
        return tuple(g for g in (self.required, best) if g is not None)

    @property
    def score(self) -> float:
        """The aggregate, unrounded: the mean of the counted groups; 0 when there are no points."""
        groups = self.counted
        total = 0.0
        for group in groups:
            total += group.score
        return total / len(groups) if groups else 0.0


def _group(points: Sequence[Any], indices: list[int]) -> Group:
    """``calculateWeightedAverage``: errored points (no coverage) are left out; 0 if none."""
    total = 0.0
    weights = 0.0
    scored = 0
    for i in indices:
        point = points[i]
        extent = point.coverage_extent
        if extent is not None:
            multiplier = point.multiplier if point.multiplier is not None else 1
            total += extent * multiplier
            weights += multiplier
            scored += 1
    return Group(tuple(indices), 0.0 if weights == 0 else total / weights, weights, scored)


def aggregate_groups(assessments: Sequence[Any]) -> Aggregation:
    """``aggregateCoverageScores``, with the groups that make up the score.

    Required points (see ``is_required``) form one group; the others are grouped by path id
    and the best path counts. The required group and the best path are averaged 50/50. An
    all-error required group still counts (as 0). Each item needs ``coverage_extent`` (None
    when the point errored), ``multiplier`` and ``path_id``.
    """
    required: list[int] = []
    by_path: dict[str, list[int]] = {}
    for i, point in enumerate(assessments):
        if is_required(point):
            required.append(i)
        else:
            by_path.setdefault(point.path_id, []).append(i)
    required_group = _group(assessments, required) if required else None
    paths = {path_id: _group(assessments, indices) for path_id, indices in by_path.items()}
    best_path = None
    if paths:
        # Math.max: any NaN wins, whatever its position (Python's max() would depend on it).
        best_path = next((k for k, g in paths.items() if math.isnan(g.score)), None)
        if best_path is None:
            best_path = max(paths, key=lambda k: paths[k].score)  # the first of equals
    return Aggregation(required_group, paths, best_path)


def aggregate(assessments: Sequence[Any]) -> float:
    """``aggregateCoverageScores``, unrounded (see ``aggregate_groups``)."""
    return aggregate_groups(assessments).score


def prompt_weight(weight: Any) -> float | None:
    """docs/scoring.md, 'Prompt weights and roll-ups': a prompt's ``weight`` counts only when it is a number > 0; None when it does not
    (the prompt then weighs 1)."""
    if is_number(weight) and not math.isnan(weight) and weight > 0:
        return float(weight)
    return None


def weighted_mean(scores_and_weights: Iterable[tuple[float, Any]]) -> float | None:
    """A model's average over prompts, weighted by prompt ``weight`` (docs/scoring.md, 'Prompt weights and roll-ups';
    ``calculatePerModelScoreStatsForRun``): only a number > 0 counts as a weight, any other
    prompt weighs 1, and when no prompt has a weight it is the plain mean. None when empty.
    """
    pairs = list(scores_and_weights)
    if not pairs:
        return None
    weights = [prompt_weight(w) for _, w in pairs]
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
