"""The similarity arithmetic of the embedding method (scoring/similarity.py), against values
worked by hand from the reference's rules (spec §3.5)."""

from __future__ import annotations

import math

import pytest

from pytest_weval.scoring.similarity import VectorLengthError, cosine, mean_matrix, prompt_matrix, unknown_count


def test_cosine_by_hand():
    assert cosine([1, 0], [0, 1]) == 0.0
    assert cosine([3, 4], [4, 3]) == pytest.approx(24 / 25)
    assert cosine([1, 2], [-1, -2]) == pytest.approx(-1.0)
    assert cosine([0, 0], [1, 1]) == 0.0  # a zero vector: 0
    assert cosine([], []) == 1.0  # two empty vectors: 1
    with pytest.raises(VectorLengthError):
        cosine([1, 2], [1, 2, 3])


def test_cosine_is_clamped():
    # Rounding takes this pair's quotient just past 1; the reference clamps it back.
    a = [0.08282494558699316, 0.8782983255570211, -0.23759152462357513]
    raw = sum(x * x for x in a) / (math.sqrt(sum(x * x for x in a)) ** 2)
    assert raw > 1.0
    assert cosine(a, a) == 1.0


def test_prompt_matrix_unknown_where_a_side_has_no_vector():
    ids = ["a", "b", "c"]
    matrix = prompt_matrix(ids, {"a": [1, 0], "b": [1, 1], "c": [0, 2]})
    assert matrix["a"]["a"] == 1.0 and matrix["a"]["b"] == pytest.approx(1 / math.sqrt(2))
    assert matrix["a"]["c"] == 0.0 and matrix["c"]["b"] == matrix["b"]["c"]
    missing = prompt_matrix(ids, {"a": [1, 0]})
    assert math.isnan(missing["a"]["b"]) and math.isnan(missing["b"]["c"]) and missing["c"]["c"] == 1.0
    odd = prompt_matrix(["a", "b"], {"a": [1, 0], "b": [1, 0, 0]})  # lengths differ: unknown, not an error
    assert math.isnan(odd["a"]["b"])


def test_mean_over_prompts_of_the_known_values():
    ids = ["a", "b"]
    p1 = {"a": {"a": 1.0, "b": 0.5}, "b": {"a": 0.5, "b": 1.0}}
    p2 = {"a": {"a": 1.0, "b": None}, "b": {"a": None, "b": 1.0}}  # unknown: left out of the mean
    p3 = {"a": {"a": 1.0, "b": 0.25}, "b": {"a": 0.25, "b": 1.0}}
    assert mean_matrix(ids, [p1, p2, p3]) == {"a": {"a": 1.0, "b": 0.375}, "b": {"a": 0.375, "b": 1.0}}
    none = mean_matrix(ids, [p2])
    assert math.isnan(none["a"]["b"]) and none["b"]["b"] == 1.0


def test_unknown_count_leaves_out_the_ones():
    nan = math.nan
    assert unknown_count([{"a": {"a": 1.0, "b": nan}, "b": {"a": nan, "b": 1.0}}]) == (2, 2)
    assert unknown_count([{"a": {"a": 1.0, "b": 1.0}, "b": {"a": 1.0, "b": 1.0}}]) == (0, 0)
    assert unknown_count([{"a": {"a": 1.0, "b": 0.5}, "b": {"a": nan, "b": 1.0}}]) == (1, 2)
