"""The breakdown carries the reference's aggregate score; the losses explain it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from report_data import chest_pain_points, function, judged

from pytest_weval.report.breakdown import breakdown
from pytest_weval.results import PointAssessment
from pytest_weval.scoring import round2

VECTORS = Path("/work/shared/spec/vectors/aggregation.json")


def _aggregate_cases():
    if not VECTORS.exists():
        return []
    return [c for c in json.loads(VECTORS.read_text()) if c["kind"] == "aggregate"]


def _point(p: dict) -> PointAssessment:
    return PointAssessment(
        key_point_text=p.get("text") or "x",
        coverage_extent=p.get("coverageExtent"),
        error=None if p.get("coverageExtent") is not None else "errored",
        multiplier=p.get("multiplier", 1),
        path_id=p.get("pathId"),
        is_inverted=p.get("isInverted", False),
    )


@pytest.mark.parametrize("case", _aggregate_cases(), ids=lambda c: c["source"])
def test_aggregate_vectors(case):
    points = [_point(p) for p in case["points"]]
    b = breakdown(points)
    assert b.score == pytest.approx(case["expected"], abs=1e-12)
    assert round2(b.score) == case["expectedRounded"]
    if points:  # the losses of the counted points are exactly what the score lacks
        assert math.fsum(x.loss for x in b.losses) + (1 / b.groups if b.required_all_errored else 0) + (
            1 / b.groups if b.best_path_all_errored else 0
        ) == pytest.approx(1 - b.score)


def test_chest_pain_breakdown_by_hand():
    b = breakdown(chest_pain_points())
    # required: (0*1 + 0.25*2 + 1*1) / 4 = 0.375; best path path_0 = 0.5; mean = 0.4375
    assert b.score == pytest.approx(0.4375)
    assert b.groups == 2
    assert b.best_path == "path_0"
    assert [(p.path_id, p.score) for p in b.paths] == [("path_1", 0.0), ("path_0", 0.5)]
    losses = {x.index: x.loss for x in b.losses}
    assert losses == pytest.approx({0: 0.125, 2: 0.1875, 4: 0.25, 5: 0.0})
    assert 3 not in losses  # the errored point is left out
    assert 1 not in losses  # path_1 lost to path_0: it does not count


def test_required_group_all_errored_counts_as_zero():
    points = [
        judged("a", None, error="All judges failed in consensus mode."),
        function("contains", '"x"', 1.0, path_id="path_0"),
    ]
    b = breakdown(points)
    assert b.score == 0.5
    assert b.required_all_errored
    assert [x.loss for x in b.losses] == [0.0]


def test_no_points_scores_zero():
    b = breakdown([])
    assert (b.score, b.groups, b.losses, b.best_path) == (0.0, 0, (), None)


def test_blank_path_id_is_required():
    points = [function("a", "1", 1.0, path_id="  "), function("b", "1", 0.0, path_id="")]
    b = breakdown(points)
    assert (b.groups, b.score) == (1, 0.5)


def test_path_ids_are_trimmed_as_javascript_trims():
    # U+FEFF is JS whitespace: a required point, as the scoring layer counts it.
    points = [function("a", "1", 1.0, path_id="\ufeff"), function("b", "1", 0.0, path_id="path_0")]
    b = breakdown(points)
    assert (b.required_points, b.groups, b.score) == (1, 2, 0.5)
    assert [p.path_id for p in b.paths] == ["path_0"]


def test_a_nan_path_is_the_best_path_whatever_its_position():
    points = [function("a", "1", 0.9, path_id="path_0"), function("b", "1", math.nan, path_id="path_1")]
    b = breakdown(points)
    assert b.best_path == "path_1" and math.isnan(b.score)
