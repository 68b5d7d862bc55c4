"""How an item's point scores make up its score (docs/scoring.md, 'Aggregation'), seen from the reader.

The scoring layer's ``aggregate_groups`` computes the score and the groups behind it; this
module only says *why* the score is what it is: each counted point's share of the loss, and
which alternative path won.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_weval.results import Point
from pytest_weval.scoring.aggregate import aggregate_groups


@dataclass(frozen=True)
class PathScore:
    path_id: str
    score: float  # weighted mean of its scored points; 0 when none scored
    scored_points: int
    points: int


@dataclass(frozen=True)
class PointLoss:
    index: int  # position in the item's ``points``
    point: Point
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


def breakdown(points: Sequence[Point]) -> Breakdown:
    agg = aggregate_groups(points)
    groups = len(agg.counted)
    losses: list[PointLoss] = []
    for group in agg.counted:
        for i in group.indices if group.weight else ():
            p = points[i]
            if p.coverage_extent is not None:
                losses.append(PointLoss(i, p, (1.0 - p.coverage_extent) * p.multiplier / group.weight / groups))
    losses.sort(key=lambda item: item.index)
    required = agg.required
    return Breakdown(
        score=agg.score,
        groups=groups,
        losses=tuple(losses),
        required_points=len(required.indices) if required else 0,
        required_all_errored=required is not None and required.scored == 0,
        paths=tuple(PathScore(path_id, g.score, g.scored, len(g.indices)) for path_id, g in agg.paths.items()),
        best_path=agg.best_path,
    )
