"""How an item's point scores make up its score (weval-semantics §3.3), seen from the reader.

The scoring layer computes the score; this module recomputes the same aggregation only to say
*why* a score is what it is: each counted point's share of the loss, and which alternative
path won. Sums run in point order, as the reference's do, so ``score`` equals its value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pytest_weval.results import PointAssessment


@dataclass(frozen=True)
class PathScore:
    path_id: str
    score: float  # weighted mean of its scored points; 0 when none scored
    scored_points: int
    points: int


@dataclass(frozen=True)
class PointLoss:
    index: int  # position in the item's ``points``
    point: PointAssessment
    loss: float  # how much of the final score (0..1) this point cost


@dataclass(frozen=True)
class Breakdown:
    score: float  # unrounded aggregate, 0 when there are no points
    groups: int  # 1 or 2: the required group and/or the best path (averaged 50/50)
    losses: tuple[PointLoss, ...]  # counted points (required + best path), definition order
    required_points: int
    required_all_errored: bool  # an all-error required group still counts, as 0
    paths: tuple[PathScore, ...]  # alternative paths, in order of first appearance
    best_path: str | None

    @property
    def best_path_all_errored(self) -> bool:
        best = next((p for p in self.paths if p.path_id == self.best_path), None)
        return best is not None and best.scored_points == 0


def is_required(point: PointAssessment) -> bool:
    return not (point.path_id and point.path_id.strip())


def _weighted(points: Sequence[tuple[int, PointAssessment]]) -> tuple[float, float]:
    total, weight = 0.0, 0.0
    for _, p in points:
        if p.coverage_extent is not None:
            total += p.coverage_extent * p.multiplier
            weight += p.multiplier
    return (total / weight if weight else 0.0), weight


def breakdown(points: Sequence[PointAssessment]) -> Breakdown:
    required: list[tuple[int, PointAssessment]] = []
    paths: dict[str, list[tuple[int, PointAssessment]]] = {}
    for index, point in enumerate(points):
        if is_required(point):
            required.append((index, point))
        else:
            paths.setdefault(point.path_id, []).append((index, point))

    group_scores: list[float] = []
    counted: list[tuple[list[tuple[int, PointAssessment]], float]] = []
    if required:
        score, weight = _weighted(required)
        group_scores.append(score)
        counted.append((required, weight))

    path_scores: list[PathScore] = []
    path_weights: dict[str, float] = {}
    best_id: str | None = None
    if paths:
        for path_id, members in paths.items():
            score, weight = _weighted(members)
            scored = sum(1 for _, p in members if p.coverage_extent is not None)
            path_scores.append(PathScore(path_id, score, scored, len(members)))
            path_weights[path_id] = weight
        best = max(path_scores, key=lambda s: s.score)  # first of equals, like Math.max
        best_id = best.path_id
        group_scores.append(best.score)
        counted.append((paths[best_id], path_weights[best_id]))

    groups = len(group_scores)
    final = sum(group_scores) / groups if groups else 0.0
    losses = [
        PointLoss(index, p, (1.0 - p.coverage_extent) * p.multiplier / weight / groups)
        for members, weight in counted
        if weight
        for index, p in members
        if p.coverage_extent is not None
    ]
    losses.sort(key=lambda item: item.index)
    return Breakdown(
        score=final,
        groups=groups,
        losses=tuple(losses),
        required_points=len(required),
        required_all_errored=bool(required) and all(p.coverage_extent is None for _, p in required),
        paths=tuple(path_scores),
        best_path=best_id,
    )


def aggregate(points: Sequence[PointAssessment]) -> float:
    """``aggregateCoverageScores`` (unrounded)."""
    return breakdown(points).score
