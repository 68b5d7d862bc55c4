"""Confidence intervals of a mean, the paired test between two runs, and Holm's correction.

Pure functions on numbers, standard library only (docs/statistics.md says what they mean):

- ``clustered_mean``: a (weighted) mean with its cluster-robust standard error and a t interval
  on clusters - 1 degrees of freedom. Items of one cluster (one blueprint's prompts, say) move
  together, so the spread that counts is the spread between clusters; an interval that took
  every item as independent would be several times too narrow ("Adding Error Bars to Evals",
  Miller 2024, eq. 4; Inspect AI's clustered ``stderr``).
- ``paired_test``: the same on per-item differences (this run minus the baseline), with a
  one-sided p-value for a drop.
- ``holm``: Holm's step-down adjustment of p-values across models.
- ``betainc``, ``t_cdf``, ``t_quantile``: Student's t from the regularized incomplete beta.

The formula (weights ``w_i``, scores ``x_i``, clusters ``g`` of which there are ``G``)::

    mean = sum(w_i x_i) / W,  W = sum(w_i)
    S_g  = sum over items i of cluster g of w_i (x_i - mean)
    se_g = sqrt(G / (G - 1) * sum_g S_g^2) / W          (clustered)
    se_1 = sqrt(n / (n - 1) * sum_i (w_i (x_i - mean))^2) / W   (every item its own cluster)
    se   = max(se_g, se_1)
    interval = mean -+ t(0.975; G - 1) * se

With every item its own cluster and equal weights ``se_1`` is the textbook ``s / sqrt(n)``;
with equal clusters of equal weight ``se_g`` is the t interval on the cluster means. The
clustered error is never taken below the independent one: with few clusters it is itself a noisy
estimate, and clusters whose means happen to agree would otherwise give an interval of zero
width around items that plainly vary (docs/statistics.md, 'Few clusters').
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Hashable, Mapping, Sequence
from statistics import NormalDist

LEVEL = 0.95  # two-sided confidence level of every interval shown

# ---------------------------------------------------------------- Student's t


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1.

    The continued fraction of Numerical Recipes (6.4), evaluated by Lentz's method, on the side
    of ``x`` where it converges fast; the other side by I_x(a, b) = 1 - I_{1-x}(b, a).
    """
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a, b > 0 (got a={a}, b={b})")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1 (got {x})")
    if x == 0.0 or x == 1.0:
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"betainc({a}, {b}, {x}) did not converge")  # pragma: no cover


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` > 0 degrees of freedom."""
    if df <= 0:
        raise ValueError(f"t_cdf needs df > 0 (got {df})")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))  # P(T <= -|t|)
    return tail if t < 0 else 1.0 - tail


def t_pdf(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` > 0 degrees of freedom (0 < p < 1).

    Newton's method on ``t_cdf`` from the normal quantile, kept inside a bracket (bisection when
    a step would leave it), to about 1e-12.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1 (got {p})")
    if df <= 0:
        raise ValueError(f"t_quantile needs df > 0 (got {df})")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    t = min(max(NormalDist().inv_cdf(p), lo), hi)
    for _ in range(200):
        f = t_cdf(t, df) - p
        if f < 0:
            lo = t
        else:
            hi = t
        density = t_pdf(t, df)
        step = f / density if density > 0 else math.inf
        candidate = t - step
        if not lo < candidate < hi:
            candidate = (lo + hi) / 2.0
        if abs(candidate - t) <= 1e-12 * max(1.0, abs(t)) or hi - lo <= 1e-13 * max(1.0, abs(t)):
            return candidate
        t = candidate
    return t  # pragma: no cover - the bracket has shrunk to nothing long before


# ---------------------------------------------------------------- a mean and its interval


@dataclasses.dataclass(frozen=True)
class MeanInterval:
    """A mean with its clustered standard error and ``LEVEL`` t interval.

    ``se``, ``lo`` and ``hi`` are None with fewer than two clusters: the spread between
    clusters cannot be estimated from one (docs/statistics.md, 'One cluster'). With no spread at
    all (every cluster's deviations sum to zero) ``se`` is 0 and the interval is the mean.
    """

    mean: float
    n: int  # items
    clusters: int
    se: float | None
    lo: float | None
    hi: float | None

    @property
    def df(self) -> int | None:
        return self.clusters - 1 if self.clusters >= 2 else None

    def bounded(self, low: float, high: float) -> tuple[float, float] | None:
        """The interval cut to what the quantity can be (a mean score is within [0, 1])."""
        if self.lo is None or self.hi is None:
            return None
        return max(self.lo, low), min(self.hi, high)


def clustered_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    weights: Sequence[float] | None = None,
    *,
    level: float = LEVEL,
) -> MeanInterval:
    """The weighted mean of ``values`` and its t interval, clustered by ``clusters`` (one label
    per value; pass each value's own index for independent items). Weights must be > 0."""
    n = len(values)
    if n == 0:
        raise ValueError("clustered_mean needs at least one value")
    if len(clusters) != n or (weights is not None and len(weights) != n):
        raise ValueError("values, clusters and weights must have the same length")
    w = [1.0] * n if weights is None else [float(x) for x in weights]
    total = math.fsum(w)
    mean = math.fsum(wi * xi for wi, xi in zip(w, values)) / total
    sums: dict[Hashable, list[float]] = {}
    for wi, xi, g in zip(w, values, clusters):
        sums.setdefault(g, []).append(wi * (xi - mean))
    count = len(sums)
    if count < 2:
        return MeanInterval(mean=mean, n=n, clusters=count, se=None, lo=None, hi=None)
    spread = math.fsum(math.fsum(parts) ** 2 for parts in sums.values())
    clustered = math.sqrt(count / (count - 1) * spread) / total
    independent = math.sqrt(n / (n - 1) * math.fsum((wi * (xi - mean)) ** 2 for wi, xi in zip(w, values))) / total
    se = max(clustered, independent)
    if se <= 1e-12 * max(1.0, abs(mean)):  # rounding noise of a spread that is exactly zero
        se = 0.0
    half = t_quantile(0.5 + level / 2.0, count - 1) * se
    return MeanInterval(mean=mean, n=n, clusters=count, se=se, lo=mean - half, hi=mean + half)


# ---------------------------------------------------------------- two runs compared


@dataclasses.dataclass(frozen=True)
class PairedTest:
    """This run minus the baseline on paired items: the mean difference, its clustered
    interval, and the one-sided p-value of the hypothesis "no drop" (a small p: a drop)."""

    interval: MeanInterval  # of the differences
    p: float | None  # None with fewer than two clusters

    @property
    def delta(self) -> float:
        return self.interval.mean


def drop_p_value(interval: MeanInterval) -> float | None:
    """One-sided p for a drop: P(T <= mean / se) on clusters - 1 degrees of freedom.

    With no spread at all the data decide alone: every paired item moved by the same amount, so
    a drop is certain (p = 0) and anything else is certainly not one (p = 1)."""
    if interval.se is None or interval.df is None:
        return None
    if interval.se == 0.0:
        return 0.0 if interval.mean < 0 else 1.0
    return t_cdf(interval.mean / interval.se, interval.df)


POWER = 0.8  # the chance of seeing a drop that the smallest detectable drop is worked out for


def detectable_drop(interval: MeanInterval, alpha: float, power: float = POWER) -> float | None:
    """The smallest drop a one-sided test at ``alpha`` on this interval's standard error and
    degrees of freedom would find with probability ``power``: ``(t(1 - alpha) + t(power)) * se``
    on clusters - 1 degrees of freedom (the usual approximation of the noncentral t; it
    assumes the next run's differences spread as these did). None with one cluster (no test)
    and when nothing varied (``se`` 0: there is no spread to reckon from)."""
    if interval.se is None or interval.df is None or interval.se == 0.0:
        return None
    return (t_quantile(1.0 - alpha, interval.df) + t_quantile(power, interval.df)) * interval.se


def paired_test(
    current: Sequence[float],
    baseline: Sequence[float],
    clusters: Sequence[Hashable],
    weights: Sequence[float] | None = None,
) -> PairedTest:
    if len(current) != len(baseline):
        raise ValueError("paired_test needs as many baseline values as current ones")
    differences = [c - b for c, b in zip(current, baseline)]
    interval = clustered_mean(differences, clusters, weights)
    return PairedTest(interval=interval, p=drop_p_value(interval))


def holm(p_values: Mapping[str, float | None]) -> dict[str, float | None]:
    """Holm's step-down adjusted p-values (a None stays None and is not counted among the m
    hypotheses). Reject hypothesis i at level alpha when its adjusted p is <= alpha; the chance
    of any false rejection among the m is then at most alpha."""
    tested = sorted((p, name) for name, p in p_values.items() if p is not None)
    m = len(tested)
    adjusted: dict[str, float | None] = dict.fromkeys(p_values)
    running = 0.0
    for rank, (p, name) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[name] = running
    return adjusted
