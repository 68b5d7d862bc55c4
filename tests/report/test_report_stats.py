"""Intervals, the paired test and Holm's correction (pytest_weval/report/stats.py).

Every expectation is worked out by hand in the comments, and most are checked again against a
second computation written out in the test (closed forms of Student's t for small degrees of
freedom, the t interval on cluster means, Miller's sum over pairs of items).
"""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.stats import (
    MeanInterval,
    betainc,
    clustered_mean,
    drop_p_value,
    holm,
    paired_test,
    t_cdf,
    t_quantile,
)
from pytest_weval.results import ItemResult

# ---------------------------------------------------------------- Student's t


@pytest.mark.parametrize("x", [0.0, 0.1, 0.37, 0.5, 0.99, 1.0])
def test_betainc_closed_forms(x):
    assert betainc(1, 1, x) == pytest.approx(x, abs=1e-14)  # the uniform distribution
    assert betainc(3, 1, x) == pytest.approx(x**3, abs=1e-14)
    assert betainc(1, 4, x) == pytest.approx(1 - (1 - x) ** 4, abs=1e-14)
    assert betainc(2.5, 0.5, x) == pytest.approx(1 - betainc(0.5, 2.5, 1 - x), abs=1e-14)  # symmetry


@pytest.mark.parametrize("a,b,x", [(2, 3, 0.4), (5, 7, 0.3), (10, 2, 0.9), (30, 40, 0.45)])
def test_betainc_is_a_binomial_tail_for_whole_a_and_b(a, b, x):
    # I_x(a, b) = P(Binomial(a + b - 1, x) >= a); e.g. I_0.4(2, 3) = 6(.4^2)(.6^2) + 4(.4^3)(.6) + .4^4 = 0.5248
    n = a + b - 1
    tail = math.fsum(math.comb(n, j) * x**j * (1 - x) ** (n - j) for j in range(a, n + 1))
    assert betainc(a, b, x) == pytest.approx(tail, abs=1e-13)
    if (a, b, x) == (2, 3, 0.4):
        assert betainc(a, b, x) == pytest.approx(0.5248, abs=1e-13)


def test_betainc_rejects_what_it_cannot_take():
    with pytest.raises(ValueError):
        betainc(0, 1, 0.5)
    with pytest.raises(ValueError):
        betainc(1, 1, 1.5)


@pytest.mark.parametrize("t", [-30.0, -4.3, -1.0, -0.2, 0.0, 0.7, 2.5, 12.7])
def test_t_cdf_against_closed_forms(t):
    # df = 1 is Cauchy; df = 2 and df = 3 have closed forms (Abramowitz & Stegun 26.7.3)
    assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-13)
    assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-13)
    theta = math.atan(t / math.sqrt(3))
    assert t_cdf(t, 3) == pytest.approx(0.5 + (theta + math.sin(theta) * math.cos(theta)) / math.pi, abs=1e-13)
    # and many degrees of freedom are the normal distribution
    assert t_cdf(t, 1e6) == pytest.approx(statistics.NormalDist().cdf(t), abs=1e-6)


def test_t_cdf_ends():
    assert t_cdf(math.inf, 3) == 1.0 and t_cdf(-math.inf, 3) == 0.0
    with pytest.raises(ValueError):
        t_cdf(1.0, 0)


@pytest.mark.parametrize(
    "df,expected",
    [
        (1, math.tan(math.pi * 0.475)),  # Cauchy: tan(pi (p - 1/2)) = 12.7062
        (2, 0.95 / math.sqrt(2 * 0.975 * 0.025)),  # (2p - 1) / sqrt(2 p (1 - p)) = 4.3027
        # printed tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), to their 3 decimals
        (5, 2.571),
        (10, 2.228),
        (29, 2.045),
        (120, 1.980),
        (10**7, 1.960),
    ],
)
def test_t_quantile_at_975(df, expected):
    q = t_quantile(0.975, df)
    assert q == pytest.approx(expected, abs=5e-4 if df > 2 else 1e-9)
    assert t_cdf(q, df) == pytest.approx(0.975, abs=1e-10)
    assert t_quantile(0.025, df) == -q


def test_t_quantile_middle_and_errors():
    assert t_quantile(0.5, 4) == 0.0
    for p, df in ((0.0, 3), (1.0, 3), (0.9, 0)):
        with pytest.raises(ValueError):
            t_quantile(p, df)


# ---------------------------------------------------------------- a mean and its interval

# Three clusters of unequal size. By hand: n = 9, sum = 2 + 0 + 3 = 5, mean = 5/9.
# Residual sums per cluster: A: 2 - 3(5/9) = 1/3, B: 0 - 2(5/9) = -10/9, C: 3 - 4(5/9) = 7/9.
# Clustered variance: G/(G-1) * sum S_g^2 / n^2 = 3/2 * (9 + 100 + 49)/81 / 81 = 79/2187.
# Independent variance: s^2/n with sum (x - mean)^2 = sum x^2 - n mean^2 = 4.5 - 25/9 = 31/18,
# s^2 = 31/144, s^2/n = 31/1296 < 79/2187, so the clustered error stands.
TABLE = {"A": [1.0, 1.0, 0.0], "B": [0.0, 0.0], "C": [1.0, 0.5, 1.0, 0.5]}


def _flat(table):
    values = [v for vs in table.values() for v in vs]
    clusters = [g for g, vs in table.items() for _ in vs]
    return values, clusters


def test_clustered_interval_on_a_small_table():
    values, clusters = _flat(TABLE)
    got = clustered_mean(values, clusters)
    assert got.mean == pytest.approx(5 / 9)
    assert got.se == pytest.approx(math.sqrt(79 / 2187))  # 0.19006
    assert (got.n, got.clusters, got.df) == (9, 3, 2)
    half = (0.95 / math.sqrt(2 * 0.975 * 0.025)) * math.sqrt(79 / 2187)  # t(0.975; 2) * se = 0.8177
    assert (got.lo, got.hi) == (pytest.approx(5 / 9 - half), pytest.approx(5 / 9 + half))
    assert got.bounded(0.0, 1.0) == (0.0, 1.0)

    # Second computation: Miller (2024) eq. 4 as a sum over pairs of items of one cluster,
    # sum_i (x_i - m)^2 + sum_g sum_{i != j in g} (x_i - m)(x_j - m), with the G/(G-1) factor.
    m = statistics.fmean(values)
    own = sum((x - m) ** 2 for x in values)
    cross = sum((x - m) * (y - m) for vs in TABLE.values() for x, y in itertools.permutations(vs, 2))
    assert got.se == pytest.approx(math.sqrt(3 / 2 * (own + cross) / len(values) ** 2))


def test_equal_clusters_give_the_t_interval_of_the_cluster_means():
    # 4 clusters of 3: the clustered error is stdev(cluster means) / sqrt(G) exactly
    table = {"a": [1, 1, 1], "b": [0, 1, 0], "c": [1, 0, 1], "d": [0, 0, 0]}
    values, clusters = _flat(table)
    got = clustered_mean(values, clusters)
    means = [statistics.fmean(vs) for vs in table.values()]  # 1, 1/3, 2/3, 0
    se = statistics.stdev(means) / math.sqrt(len(means))  # 0.2152
    assert got.se == pytest.approx(se)
    assert _half_width(got) == pytest.approx(t_quantile(0.975, 3) * se)  # 3.1824 * 0.2152 = 0.6849


def test_every_item_its_own_cluster_is_the_textbook_interval():
    values = [0.2, 0.9, 0.4, 1.0, 0.7]
    got = clustered_mean(values, range(len(values)))
    assert got.se == pytest.approx(statistics.stdev(values) / math.sqrt(5))
    assert got.df == 4


def test_clustering_widens_the_interval_when_clusters_differ():
    # 6 clusters of 50 items with pass rates 0.80, 0.84, ..., 1.00 (mean 0.90)
    table = {g: [1.0] * (40 + 2 * g) + [0.0] * (10 - 2 * g) for g in range(6)}
    values, clusters = _flat(table)
    clustered = clustered_mean(values, clusters)
    independent = clustered_mean(values, range(len(values)))
    assert clustered.mean == pytest.approx(0.9)
    # by cluster: stdev of (0.80 .. 1.00) = 0.0748, / sqrt 6 = 0.0306, * t(5) 2.5706 = 0.0785
    assert _half_width(clustered) == pytest.approx(
        2.5706 * statistics.stdev([0.8, 0.84, 0.88, 0.92, 0.96, 1.0]) / math.sqrt(6), abs=1e-4
    )
    # independent: sqrt(0.9 * 0.1 * 300/299 / 300) = 0.01735, * t(299) 1.968 = 0.0341
    assert _half_width(independent) == pytest.approx(0.0341, abs=2e-4)


def test_weights_weigh_the_mean_and_the_cluster_sums():
    # values 1, 0 | 0.5, 1 with weights 2, 1 | 1, 3: W = 7, mean = (2 + 0 + 0.5 + 3) / 7 = 11/14;
    # S_x = 2(1 - m) - m = 2 - 3m = -5/14, S_y = (0.5 - m) + 3(1 - m) = 3.5 - 4m = 5/14;
    # clustered se = sqrt(2 * 2 * 25/196) / 7 = 5/49 = 0.1020.
    # independent: w(x - m) = 3/7, -11/14, -2/7, 9/14; sum of squares = 127/98;
    # se = sqrt(4/3 * 127/98) / 7 = 0.18779, which stands.
    weighted = clustered_mean([1.0, 0.0, 0.5, 1.0], ["x", "x", "y", "y"], [2, 1, 1, 3])
    assert weighted.mean == pytest.approx(11 / 14)
    assert weighted.se == pytest.approx(math.sqrt(4 / 3 * 127 / 98) / 7)
    # a weight counts as copies of the item in its cluster: the same mean and cluster sums
    copied = clustered_mean([1.0, 1.0, 0.0, 0.5, 1.0, 1.0, 1.0], ["x", "x", "x", "y", "y", "y", "y"])
    assert copied.mean == pytest.approx(weighted.mean)
    assert copied.se >= 5 / 49 - 1e-12


def test_zero_variance_is_an_interval_of_no_width():
    got = clustered_mean([0.7] * 6, ["a", "a", "b", "b", "c", "c"])
    assert got.se == 0.0 and got.lo == got.hi == pytest.approx(0.7)


def test_clusters_that_agree_do_not_hide_the_spread_of_their_items():
    # cluster means are both 0.5, so the clustered error alone is 0; the items plainly vary,
    # and the error is never below the independent one: stdev([1,0,0,1]) / 2 = 0.2887
    got = clustered_mean([1.0, 0.0, 0.0, 1.0], ["a", "a", "b", "b"])
    assert got.se == pytest.approx(statistics.stdev([1, 0, 0, 1]) / 2)
    assert got.df == 1


def test_one_cluster_has_no_interval():
    got = clustered_mean([1.0, 0.0, 0.5], ["only"] * 3)
    assert got.mean == pytest.approx(0.5)
    assert (got.se, got.lo, got.hi, got.df) == (None, None, None, None)
    assert got.bounded(0, 1) is None
    assert drop_p_value(got) is None


def test_bad_input():
    with pytest.raises(ValueError):
        clustered_mean([], [])
    with pytest.raises(ValueError):
        clustered_mean([1.0], ["a", "b"])


# ---------------------------------------------------------------- the paired test


def test_paired_test_by_hand():
    # 3 blueprints x 2 prompts; differences b1: -0.5, -0.5; b2: -0.5, 0; b3: -0.5, -0.5.
    # mean = -2.5/6 = -5/12; cluster means -1/2, -1/4, -1/2; S_g = 2 (mean_g - mean) = -1/6, 1/3, -1/6,
    # sum S_g^2 = 1/6, clustered se = sqrt(3/2 * 1/6) / 6 = 1/12. Independent: the same, 1/12.
    # t = (-5/12) / (1/12) = -5 on 2 degrees of freedom: p = 1/2 + t / (2 sqrt(2 + t^2)) = 0.018875
    baseline = [1.0] * 6
    current = [0.5, 0.5, 0.5, 1.0, 0.5, 0.5]
    got = paired_test(current, baseline, ["b1", "b1", "b2", "b2", "b3", "b3"])
    assert got.delta == pytest.approx(-5 / 12)
    assert got.interval.se == pytest.approx(1 / 12)
    assert got.p == pytest.approx(0.5 - 5 / (2 * math.sqrt(27)))
    assert got.p == pytest.approx(0.018875, abs=1e-6)
    half = 4.302652729749464 / 12  # t(0.975; 2) * se
    assert got.interval.lo == pytest.approx(-5 / 12 - half)


def test_paired_test_without_spread_decides_alone():
    same = paired_test([0.5, 0.5, 1.0], [0.5, 0.5, 1.0], ["a", "b", "c"])
    assert (same.delta, same.interval.se, same.p) == (0.0, 0.0, 1.0)
    drop = paired_test([0.5, 0.5, 0.9], [0.6, 0.6, 1.0], ["a", "b", "c"])  # every item down 0.1
    assert drop.delta == pytest.approx(-0.1) and drop.interval.se == 0.0 and drop.p == 0.0
    rise = paired_test([0.7, 0.7], [0.6, 0.6], ["a", "b"])
    assert rise.p == 1.0


def test_paired_test_needs_matching_lengths():
    with pytest.raises(ValueError):
        paired_test([1.0], [1.0, 0.0], ["a"])


# ---------------------------------------------------------------- Holm


def test_holm_over_two_models():
    # sorted p: 0.01, 0.04 -> 2 * 0.01 = 0.02, then max(0.02, 1 * 0.04) = 0.04: both below 0.05
    assert holm({"a": 0.04, "b": 0.01}) == {"a": pytest.approx(0.04), "b": pytest.approx(0.02)}
    # 0.03, 0.04 -> 0.06, max(0.06, 0.04) = 0.06: neither, though each alone is below 0.05
    assert holm({"a": 0.03, "b": 0.04}) == {"a": pytest.approx(0.06), "b": pytest.approx(0.06)}
    # a model without a p is not one of the hypotheses
    assert holm({"a": 0.03, "b": None}) == {"a": pytest.approx(0.03), "b": None}
    assert holm({"a": 0.7, "b": 0.9}) == {"a": 1.0, "b": 1.0}
    assert holm({}) == {}


# ---------------------------------------------------------------- in the roll-up


def _item(path, prompt, model, score, *, temp=0, weight=None, outcome=None):
    return ItemResult(
        blueprint_id=path.removesuffix(".yml"),
        blueprint_path=path,
        prompt_id=prompt,
        model_id=model,
        effective_model_id=f"{model}[temp:{temp}]",
        outcome=outcome or ("passed" if score >= 0.5 else "failed"),
        score=score,
        prompt_weight=weight,
    )


def test_rollup_intervals_cluster_by_blueprint_across_blueprints_and_by_prompt_within_one():
    items = [
        _item("a.yml", "p1", "m", 1.0),
        _item("a.yml", "p1", "m", 0.0, temp=0.7),  # a variant of p1: the same cluster
        _item("a.yml", "p2", "m", 1.0),
        _item("b.yml", "q1", "m", 0.5),
        _item("b.yml", "q2", "m", 0.5),
    ]
    rollup = build_rollup(items, agreement={})
    # run-wide: clusters a.yml (1, 0, 1) and b.yml (0.5, 0.5); mean 3/5 = 0.6;
    # S_a = 2 - 1.8 = 0.2, S_b = 1 - 1.2 = -0.2; clustered se = sqrt(2 * 0.08) / 5 = 0.08;
    # independent: sum (x - 0.6)^2 = 0.16 + 0.36 + 0.16 + 0.01 + 0.01 = 0.7, sqrt(5/4 * 0.7) / 5 = 0.1871,
    # which stands (the two blueprints' means, 2/3 and 1/2, are closer than their items)
    se = math.sqrt(5 / 4 * 0.7) / 5
    half = math.tan(math.pi * 0.475) * se  # t(0.975; 1)
    model = rollup.by_model["m"]
    assert model.interval is not None and model.interval.se == pytest.approx(se)
    assert model.ci95 == (max(0.0, 0.6 - half), min(1.0, 0.6 + half)) == (0.0, 1.0)
    # a.yml alone: clusters p1 (1, 0) and p2 (1): mean 2/3, S_p1 = 1 - 4/3 = -1/3, S_p2 = 1/3
    # se = sqrt(2 * 2/9) / 3 = 2/9; independent: sqrt(3/2 * 2/3) / 3 = 1/3, which stands
    a = rollup.blueprints["a.yml"].by_model["m"]
    assert a.interval is not None and a.interval.clusters == 2 and a.interval.se == pytest.approx(1 / 3)
    # b.yml: two prompts of 0.5: no spread, the interval is the mean
    assert rollup.blueprints["b.yml"].overall.ci95 == (pytest.approx(0.5), pytest.approx(0.5))
    assert rollup.blueprints["b.yml"].overall.to_dict()["ci95"] == [pytest.approx(0.5), pytest.approx(0.5)]


def test_rollup_one_prompt_has_no_interval_and_errors_do_not_count():
    items = [
        _item("a.yml", "p1", "m", 1.0),
        _item("a.yml", "p1", "m", 0.0, temp=0.7),
        ItemResult(
            blueprint_id="a",
            blueprint_path="a.yml",
            prompt_id="p2",
            model_id="m",
            effective_model_id="m[temp:0]",
            outcome="error",
            error="boom",
        ),
    ]
    tally = build_rollup(items, agreement={}).by_model["m"]
    assert tally.mean == pytest.approx(0.5) and tally.ci95 is None
    assert tally.to_dict()["ci95"] is None


def test_rollup_reports_the_within_item_variance_of_repeats():
    one = _item("a.yml", "p1", "m", 0.83).model_copy(update={"sample_scores": [0.5, 1.0, 1.0]})
    two = _item("a.yml", "p2", "m", 1.0).model_copy(update={"sample_scores": [1.0, 1.0, 1.0]})
    tally = build_rollup([one, two], agreement={}).by_model["m"]
    # variances 1/12 (mean 5/6: (1/9 + 1/36 + 1/36) / 2) and 0: their mean is 1/24
    assert tally.within_item_variance == pytest.approx(1 / 24)
    assert tally.to_dict()["withinItemVariance"] == pytest.approx(1 / 24)
    assert "withinItemVariance" not in build_rollup([_item("a.yml", "p", "m", 1.0)], agreement={}).overall.to_dict()


def _half_width(interval: MeanInterval) -> float:
    assert interval.lo is not None and interval.hi is not None
    return (interval.hi - interval.lo) / 2.0
