"""``--weval-repeat=auto``: how many samples an item needs before its outcome can be trusted
(docs/sampling.md).

Each sample votes pass or fail (its own score against the item's threshold). The item takes
``FIRST`` samples; when they agree it stops there. Once they disagree it goes on, one sample at
a time, until one side leads by ``LEAD`` votes, or no sample left under ``max_samples`` could
change the outcome, or it holds ``max_samples``. The outcome is the mean's, as with
``--weval-repeat=N``. Read as a test, the middle part is Wald's sequential probability ratio test
between "a sample passes with probability q" and "with probability 1 - q" (the gambler's ruin
walk with barriers at +-LEAD); the first step is cheaper, so that an item that never varies
costs ``FIRST`` samples and the items near their threshold pay for the rest.

With a history (docs/history.md), an item whose last ``HISTORY_RUNS`` recorded runs of the same
content all came out the same way, every sample on that side and none within ``MARGIN`` of the
threshold, is *settled*: it starts from one sample, and stops there when that sample votes as
the history did; otherwise the rule goes on as above from that sample.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import pytest_weval.defaults as defaults
from pytest_weval.results import passes

FIRST = 2  # samples an item always takes (fewer only when --weval-max-repeat is lower)
LEAD = 3  # once the samples disagree, the lead in votes that ends the sampling
HISTORY_RUNS = 5  # recorded runs that must agree before an item starts from one sample
MARGIN = 0.1  # a recorded score this close to the threshold could have gone the other way
DEFAULT_MAX = defaults.MAX_REPEAT  # --weval-max-repeat


@dataclasses.dataclass(frozen=True)
class Past:
    """One recorded run of an item, as the history keeps it."""

    digest: str | None  # ItemResult.content_digest: the same model, prompt, points and threshold
    outcome: str
    scores: tuple[float, ...]  # its samples' scores (its score alone when it was not sampled)


def settled(past: Sequence[Past], digest: str, threshold: float) -> bool | None:
    """The outcome (True: pass) of an item the history shows never varied: its newest
    ``HISTORY_RUNS`` recorded runs (``past``, newest first) are of this content, all passed or
    all failed, and every sample of theirs voted that way at least ``MARGIN`` from the
    threshold. None for any other item."""
    recent = past[:HISTORY_RUNS]
    if len(recent) < HISTORY_RUNS or any(p.digest != digest for p in recent):
        return None
    if len({p.outcome for p in recent}) != 1 or recent[0].outcome not in ("passed", "failed"):
        return None
    passed = recent[0].outcome == "passed"
    steady = all(
        p.scores and all(passes(s, threshold) == passed and abs(s - threshold) >= MARGIN for s in p.scores)
        for p in recent
    )
    return passed if steady else None


def first_samples(max_samples: int, settled: bool | None = None) -> int:
    return 1 if settled is not None else min(FIRST, max_samples)


def should_stop(scores: Sequence[float], threshold: float, max_samples: int, settled: bool | None = None) -> bool:
    """Whether an item whose samples scored ``scores`` (each in 0..1) needs no more of them;
    ``settled``: the outcome its history shows it never varied from (``settled``)."""
    n = len(scores)
    if n >= max_samples:
        return True
    if n == 1 and settled is not None:
        return passes(scores[0], threshold) == settled
    if n < first_samples(max_samples):
        return False
    ayes = sum(1 for s in scores if passes(s, threshold))
    if ayes in (0, n):  # every sample on one side (after a disagreement this cannot come back)
        return True
    if abs(2 * ayes - n) >= LEAD:
        return True
    # Curtailed: the samples still allowed could not move the mean across the threshold even
    # if they all scored 0 or all scored 1, so asking for them would change nothing.
    left = max_samples - n
    total = math.fsum(scores)
    return passes(total / max_samples, threshold) == passes((total + left) / max_samples, threshold)


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What the rule does to an item whose samples score ``high`` with probability ``q`` and
    ``low`` otherwise (the worked example: both terms 1.0, one term 0.5, threshold 0.75)."""

    q: float
    samples: float  # expected samples
    passes: float  # probability the item's outcome is pass
    all_pass: float = 0.0  # probability every sample passes (a run the history may call settled)
    all_fail: float = 0.0


def expect(
    q: float,
    max_samples: int,
    high: float = 1.0,
    low: float = 0.5,
    threshold: float = 0.75,
    settled: bool | None = None,
) -> Expectation:
    """Exact, by walking every sequence of samples the rule can stop on (merged by counts: the
    rule reads only how many samples scored high, and whether they disagreed, which the counts
    say too); ``settled``: the item starts from the history (``settled``)."""
    samples = passing = all_pass = all_fail = 0.0
    paths: dict[int, float] = {0: 1.0}  # samples that scored high -> probability, at n samples
    n = 0
    while paths:
        n += 1
        more: dict[int, float] = {}
        for highs, prob in paths.items():
            for is_high, p in ((True, q), (False, 1.0 - q)):
                if p == 0.0:
                    continue
                h = highs + is_high
                scores = [high] * h + [low] * (n - h)
                if not should_stop(scores, threshold, max_samples, settled):
                    more[h] = more.get(h, 0.0) + prob * p
                    continue
                samples += n * prob * p
                if passes(math.fsum(scores) / n, threshold):
                    passing += prob * p
                all_pass += prob * p if h == n else 0.0
                all_fail += prob * p if h == 0 else 0.0
        paths = more
    return Expectation(q, samples, passing, all_pass, all_fail)


def expected_samples(max_samples: int) -> float:
    """Samples per item the plan expects of an item it knows nothing about: the rule's expected
    count for a two-valued item, averaged over a uniform pass probability (Simpson's rule)."""
    steps = 40
    total = 0.0
    for i in range(steps + 1):
        weight = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += weight * expect(i / steps, max_samples).samples
    return total / (3 * steps)
