"""The --weval-repeat=auto rule (run/sampling.py, docs/sampling.md): when an item has enough
samples, and its exact error rates and cost for a two-valued item."""

from __future__ import annotations

import math

import pytest

from pytest_weval.run.sampling import (
    DEFAULT_MAX,
    HISTORY_RUNS,
    Past,
    expect,
    expected_samples,
    first_samples,
    settled,
    should_stop,
)
from tests.run.sampling_history import expect_with_history


@pytest.mark.parametrize(
    "scores,stop",
    [
        ([1.0], False),  # two samples first
        ([1.0, 1.0], True),  # they agree: done
        ([0.5, 0.5], True),
        ([0.8, 1.0], True),  # different scores on the same side of 0.75 agree
        ([1.0, 0.5], False),  # they disagree: more
        ([1.0, 0.5, 1.0], False),  # a lead of 1
        ([1.0, 0.5, 1.0, 1.0], False),  # a lead of 2
        ([1.0, 0.5, 1.0, 1.0, 1.0], True),  # a lead of 3
        ([0.5, 1.0, 0.5, 0.5, 0.5], True),
        ([1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5], True),  # the most samples
    ],
)
def test_when_an_item_has_enough_samples(scores, stop):
    assert should_stop(scores, 0.75, 8) is stop


def test_samples_that_could_not_change_the_outcome_are_not_asked_for():
    # 4 of 7 pass (sum 5.5): an 8th scoring 0 leaves the mean at 5.5 / 8 = 0.69 < 0.75, one
    # scoring 1 makes it 0.81: it could change the outcome, so it is asked for
    assert not should_stop([1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0], 0.75, 8)
    # 4 pass and 3 fail against 0.5 (a lead of 1), but the sum 5.2 keeps the mean of 8 at 0.65
    # or more whatever the 8th scores: done
    assert should_stop([1.0, 0.4, 1.0, 0.4, 1.0, 0.4, 1.0], 0.5, 8)
    assert not should_stop([1.0, 0.4, 1.0, 0.4, 1.0, 0.4, 1.0], 0.5, 20)  # 13 samples still to come


def test_max_repeat_bounds_the_samples_and_the_first_step():
    assert first_samples(8) == 2 and first_samples(1) == 1
    assert should_stop([1.0], 0.75, 1)
    assert should_stop([1.0, 0.5, 1.0], 0.75, 3)
    assert expect(0.8, 1).samples == pytest.approx(1.0)


def test_exact_error_rates_and_cost_for_a_two_valued_item():
    # q = 0.8 (a sample passes 80% of the time). Paths: two passes (0.64, stop, pass), two fails
    # (0.04, stop, fail), else (0.32) on to a lead of 3 within 8 samples.
    got = expect(0.8, 8)
    assert got.passes == pytest.approx(0.9533, abs=1e-4) and got.samples == pytest.approx(3.3409, abs=1e-4)
    # the first step alone: the two agreeing wrong samples are a floor on the error
    assert 1 - got.passes > 0.2**2
    # a steady item: 2 samples, never wrong
    assert (expect(1.0, 8).samples, expect(1.0, 8).passes, expect(0.0, 8).passes) == (2.0, 1.0, 0.0)
    # a coin: ties (4 of 8 samples each way) give a mean on the threshold, which passes
    assert expect(0.5, 8).passes == pytest.approx(0.5703, abs=1e-4)
    assert 2 < expected_samples(8) < 8 and math.isclose(expected_samples(8), 3.5286, abs_tol=1e-3)


def test_five_repeats_by_the_binomial_for_comparison():
    # the docs' repeat=5 column: pass when at least 3 of 5 samples pass
    five = sum(math.comb(5, k) * 0.8**k * 0.2 ** (5 - k) for k in range(3, 6))
    assert five == pytest.approx(0.9421, abs=1e-4)
    assert 1 - expect(0.8, 8).passes < 1 - five  # auto is wrong less often at q = 0.8


def _past(outcome: str, *scores: float, digest: str = "d") -> Past:
    return Past(digest, outcome, tuple(scores))


def test_an_item_is_settled_after_agreeing_runs_of_its_content_far_from_the_threshold():
    steady = [_past("passed", 1.0, 1.0)] * (HISTORY_RUNS - 1) + [_past("passed", 0.9)]
    assert settled(steady, "d", 0.75) is True
    assert settled([_past("failed", 0.5)] * HISTORY_RUNS, "d", 0.75) is False
    assert settled(steady[:-1], "d", 0.75) is None  # too few runs
    assert settled(steady, "other", 0.75) is None  # another prompt, model or threshold
    assert settled(steady[:-1] + [_past("passed", 1.0, 0.5, 1.0)], "d", 0.75) is None  # it varied once
    assert settled(steady[:-1] + [_past("passed", 0.8)], "d", 0.75) is None  # 0.05 from the threshold
    assert settled(steady[:-1] + [_past("failed", 0.5)], "d", 0.75) is None
    assert settled(steady[:-1] + [_past("error")], "d", 0.75) is None
    assert settled([_past("failed", 0.5)] + steady, "d", 0.75) is None  # the newest runs count


def test_a_settled_item_starts_from_one_sample_and_goes_on_when_it_disagrees():
    assert first_samples(DEFAULT_MAX, True) == 1 and first_samples(DEFAULT_MAX) == 2
    assert should_stop([1.0], 0.75, DEFAULT_MAX, True)
    assert not should_stop([0.5], 0.75, DEFAULT_MAX, True)  # against its history: the rule from here
    assert should_stop([0.5, 0.5], 0.75, DEFAULT_MAX, True)
    assert not should_stop([0.5, 1.0], 0.75, DEFAULT_MAX, True)


def test_the_history_start_keeps_the_error_and_saves_samples():
    # A settled item is wrong only when its one sample is wrong and so is the next: the same
    # two wrong samples that make the rule wrong without a history.
    settled_right, fresh = expect(0.8, DEFAULT_MAX, settled=True), expect(0.8, DEFAULT_MAX)
    assert 0.2 * 0.2 < 1 - settled_right.passes < 1 - fresh.passes  # 4.40% against 4.81%
    assert settled_right.samples < fresh.samples
    steady = expect_with_history(1.0, DEFAULT_MAX)
    assert (steady.samples, steady.passes) == (1.0, 1.0)
    varies, before = expect_with_history(0.8, DEFAULT_MAX), expect(0.8, DEFAULT_MAX)
    assert varies.samples < before.samples and abs(varies.passes - before.passes) < 0.002
    # a model changed behind the same id: an item settled on pass that now passes 30% of the time
    assert expect(0.3, DEFAULT_MAX, settled=True).passes > expect(0.3, DEFAULT_MAX).passes


def test_one_pass_rule_decides_items_samples_and_flakiness() -> None:
    """A score exactly at its threshold passes everywhere the pass rule is read: the item's
    outcome (run/outcome.py), a sample's vote (sampling) and the flaky report, all through
    ``results.passes``."""
    from pytest_weval.report.flaky import describe
    from pytest_weval.results import ItemResult, passes
    from pytest_weval.run.outcome import decide

    assert passes(0.5, 0.5) and not passes(0.49, 0.5) and not passes(None, 0.5)
    assert decide([], 0.5, 0.5).outcome == "passed"
    assert should_stop([0.5], 0.5, 4, settled=True)
    item = ItemResult(
        blueprint_id="b",
        blueprint_path="b.yml",
        prompt_id="p",
        model_id="m",
        effective_model_id="m",
        outcome="passed",
        score=0.5,
        threshold=0.5,
        sample_scores=[0.5, 0.4],
    )
    assert item.flaky and describe(item).startswith("1 of 2 samples pass")
