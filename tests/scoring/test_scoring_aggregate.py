"""Aggregation beyond the vectors, JS rounding (``toFixed2``, docs/scoring.md, 'Rounding') and prompt
weighting (``promptWeighted``, docs/scoring.md, 'Prompt weights and roll-ups'): those vector kinds do not ship (docs/rulings.md, ruling 25), so these
cases are written from the text."""

from __future__ import annotations

import math

import pytest

from pytest_weval.jsvalues import js_json, js_number_str, to_fixed
from pytest_weval.results import PointAssessment
from pytest_weval.scoring import aggregate, round2, weighted_mean
from pytest_weval.scoring.aggregate import aggregate_groups, prompt_weight


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.125, 0.13),
        (0.375, 0.38),
        (0.625, 0.63),
        (0.875, 0.88),  # docs/scoring.md, 'Rounding': exact ties round up
        (0.425, 0.42),  # stored as 0.42499999999999998889...
        (1.005, 1.0),  # stored as 1.00499999999999989342...
        (0.005, 0.01),
        (0.015, 0.01),
        (0.045, 0.04),
        (0.055, 0.06),
        (2 / 3, 0.67),
        (0.8333333333333334, 0.83),
        (0.7999999999999999, 0.8),
        (0.0, 0.0),
        (1.0, 1.0),
        (-0.125, -0.13),
    ],
)
def test_round2_is_js_tofixed(value: float, expected: float) -> None:
    assert round2(value) == expected


def test_round2_differs_from_python_round_on_ties() -> None:
    assert round(0.125, 2) == 0.12 and round2(0.125) == 0.13
    assert math.isnan(round2(math.nan))


@pytest.mark.parametrize(
    "value, text",
    [(0.125, "0.13"), (1, "1.00"), (0, "0.00"), (-0.0, "0.00"), (-0.001, "-0.00"), (math.nan, "NaN")],
)
def test_to_fixed_text(value: float, text: str) -> None:
    assert to_fixed(value, 2) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (1.0, "1"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (123e18, "123000000000000000000"),
        (0.000001, "0.000001"),
        (-2.5, "-2.5"),
        (2**60, "1152921504606847000"),
        (math.inf, "Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_number_to_string_is_js(value: float, text: str) -> None:
    assert js_number_str(value) == text


def test_json_stringify_is_js() -> None:
    value = {"b": 1.0, "2": [1e-7, None, True], "a": "x\u2028\ud800\n", "1": {}}
    assert js_json(value) == '{"1":{},"2":[1e-7,null,true],"b":1,"a":"x\u2028\\ud800\\n"}'


# -- weighted_mean: the per-model average over prompts (docs/scoring.md, 'Prompt weights and roll-ups') ----------------------------------


def test_weighted_mean_without_weights_is_the_plain_mean() -> None:
    assert weighted_mean([(0.2, None), (0.4, None), (0.9, None)]) == (0.2 + 0.4 + 0.9) / 3


def test_weighted_mean_with_weights() -> None:
    assert weighted_mean([(1.0, 3), (0.0, None)]) == 0.75
    assert weighted_mean([(1.0, 2.5), (0.5, 1)]) == pytest.approx((2.5 + 0.5) / 3.5)


@pytest.mark.parametrize("bad", [0, -1, math.nan, "2", True, None])
def test_only_positive_numbers_are_weights(bad: object) -> None:
    # The bad weight counts as 1 beside a real weight of 2.
    assert weighted_mean([(1.0, 2), (0.0, bad)]) == pytest.approx(2 / 3)


def test_weighted_mean_of_nothing() -> None:
    assert weighted_mean([]) is None


def test_prompt_weight_counts_only_positive_numbers() -> None:
    assert [prompt_weight(w) for w in (2, 0.5, 0, -1, math.nan, "2", True, None)] == [
        2.0,
        0.5,
        None,
        None,
        None,
        None,
        None,
        None,
    ]


# -- aggregate: cases the vectors leave out -------------------------------------------------------


def _p(extent: float | None, path: str | None = None, mult: float = 1.0) -> PointAssessment:
    return PointAssessment(key_point_text="p", coverage_extent=extent, multiplier=mult, path_id=path)


def test_all_error_required_group_halves_the_best_path() -> None:
    assert aggregate([_p(None), _p(0.8, "path_0")]) == 0.4


def test_whitespace_path_id_is_required() -> None:
    assert aggregate([_p(1.0, " \t"), _p(0.0, "path_1")]) == 0.5


def test_path_id_is_trimmed_as_javascript_trims() -> None:
    # U+FEFF is JS whitespace (Python's strip() keeps it); U+001C is not (strip() removes it).
    assert aggregate([_p(1.0, "\ufeff"), _p(0.0, "path_1")]) == 0.5
    assert aggregate([_p(1.0, "\x1c"), _p(0.0, "path_1")]) == 1.0


def test_aggregate_groups_name_the_counted_groups() -> None:
    points = [_p(0.5, "path_0"), _p(1.0), _p(None), _p(1.0, "path_1", mult=2), _p(1.0, "path_0")]
    agg = aggregate_groups(points)
    assert agg.required is not None and agg.required.indices == (1, 2) and agg.required.scored == 1
    assert {k: g.indices for k, g in agg.paths.items()} == {"path_0": (0, 4), "path_1": (3,)}
    assert agg.best_path == "path_1"  # 1.0 beats 0.75
    assert agg.counted == (agg.required, agg.paths["path_1"]) and agg.paths["path_1"].weight == 2
    assert agg.score == aggregate(points) == 1.0
    assert aggregate_groups([]).counted == () and aggregate_groups([]).score == 0.0


def test_best_path_is_the_first_of_equals_or_a_nan_one() -> None:
    assert aggregate_groups([_p(0.5, "a"), _p(0.5, "b")]).best_path == "a"
    assert aggregate_groups([_p(0.9, "a"), _p(math.nan, "b")]).best_path == "b"


def test_nan_poisons_whatever_its_position() -> None:
    assert math.isnan(aggregate([_p(0.2, "path_0"), _p(math.nan, "path_1")]))
    assert math.isnan(aggregate([_p(math.nan, "path_0"), _p(0.2, "path_1")]))


def test_multipliers_weigh_within_their_group_only() -> None:
    points = [_p(1.0, mult=10), _p(0.0), _p(0.5, "path_0", mult=3)]
    assert aggregate(points) == pytest.approx(((10 / 11) + 0.5) / 2)
