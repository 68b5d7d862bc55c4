"""Roll-up numbers, computed by hand from report_data, and their independence of item order."""

from __future__ import annotations

import random

import pytest
from report_data import PRIVACY, TONE, TOP, TRIAGE, A, B, eff, make_results

from pytest_weval.report.rollup import ROOT, build_rollup, folder_of, mean_interval, tally
from pytest_weval.report.terminal import render_summary
from pytest_weval.results import ItemResult, Usage

NO_AGREEMENT = {}  # an empty precomputed agreement: keeps these tests off the judges layer


@pytest.fixture
def rollup(results):
    return build_rollup(results, agreement=NO_AGREEMENT)


def test_blueprint_by_model_means_are_prompt_weighted(rollup):
    triage = rollup.blueprints[TRIAGE]
    # chest-pain weighs 2, headache (no weight) 1; headache x B errored and is left out.
    assert triage.by_model[A].mean == pytest.approx((0.44 * 2 + 0.8 * 1) / 3)
    assert triage.by_model[B].mean == pytest.approx(0.9)
    assert triage.overall.mean == pytest.approx((0.44 * 2 + 0.9 * 2 + 0.8) / 5)
    assert triage.overall.weighted and triage.by_model[B].weighted
    assert (triage.overall.items, triage.overall.passed, triage.overall.failed, triage.overall.errors) == (4, 2, 1, 1)
    assert triage.overall.scored == 3
    assert triage.overall.total_weight == 5
    assert triage.title == "Medical triage"


def test_unweighted_blueprint_is_a_plain_mean(rollup):
    privacy = rollup.blueprints[PRIVACY]
    assert not privacy.overall.weighted
    assert privacy.by_model[A].mean == pytest.approx((1.0 + 0.2) / 2)
    assert privacy.by_model[B].mean == pytest.approx((0.6 + 0.5) / 2)
    assert privacy.overall.mean == pytest.approx(2.3 / 4)
    assert (privacy.overall.passed, privacy.overall.failed) == (3, 1)


def test_weights_change_the_mean_only_when_set():
    base = [r for r in make_results() if r.blueprint_path == TRIAGE and r.model_id == A]
    unweighted = [r.model_copy(update={"prompt_weight": None}) for r in base]
    assert tally(base).mean == pytest.approx((0.44 * 2 + 0.8) / 3)
    assert tally(unweighted).mean == pytest.approx((0.44 + 0.8) / 2)
    assert not tally(unweighted).weighted
    # docs/scoring.md, 'Prompt weights and roll-ups': only numbers > 0 count; anything else weighs 1.
    zero = [r.model_copy(update={"prompt_weight": 0.0}) for r in base]
    assert tally(zero).mean == pytest.approx((0.44 + 0.8) / 2)


def test_effective_ids_are_kept_beside_base_models(rollup):
    tone = rollup.blueprints[TONE]
    assert list(tone.by_model) == [A]
    assert tone.by_model[A].mean == pytest.approx(0.5)
    assert list(tone.by_effective_model) == [eff(A, 0.7), eff(A, 0)]
    assert tone.by_effective_model[eff(A, 0)].mean == pytest.approx(0.7)
    assert rollup.effective_models[A] == (eff(A, 0.7), eff(A, 0))
    assert rollup.models == (B, A)  # sorted


def test_folder_tree_means_pool_items_not_blueprint_means(rollup):
    f = rollup.folders
    assert list(f) == [ROOT, "evals", "evals/safety", "evals/safety/medical", "evals/style"]
    assert f["evals/safety/medical"].overall.mean == pytest.approx(3.48 / 5)
    assert f["evals/safety"].overall.mean == pytest.approx((3.48 + 2.3) / 9)
    assert f["evals/style"].overall.mean == pytest.approx(0.5)
    assert f["evals"].overall.mean == pytest.approx((3.48 + 2.3 + 1.0) / 11)
    assert f[ROOT].overall.mean == pytest.approx((3.48 + 2.3 + 1.0 + 1.9) / 13)
    assert f["evals/safety"].by_model[A].mean == pytest.approx((0.88 + 0.8 + 1.2) / 5)
    assert f["evals/safety"].by_model[B].mean == pytest.approx((1.8 + 1.1) / 4)
    assert f[ROOT].folders == ("evals",)
    assert f[ROOT].blueprints == (TOP,)
    assert f["evals"].folders == ("evals/safety", "evals/style")
    assert f["evals/safety"].blueprints == (PRIVACY,)
    assert (f["evals"].overall.items, f["evals"].overall.passed, f["evals"].overall.errors) == (10, 6, 1)
    assert f["evals/safety/medical"].depth == 3 and f[ROOT].depth == 0


def test_run_totals_and_per_model(rollup):
    assert rollup.overall.mean == rollup.folders[ROOT].overall.mean
    assert rollup.by_model[A].mean == pytest.approx((0.88 + 0.8 + 1.2 + 1.0 + 0.9) / 8)
    assert rollup.by_model[B].mean == pytest.approx((1.8 + 1.1 + 1.0) / 5)
    assert (rollup.overall.items, rollup.overall.passed, rollup.overall.failed, rollup.overall.errors) == (12, 8, 3, 1)


def test_usage_and_cache_hits_are_summed_per_model(rollup):
    assert rollup.usage[A] == Usage(requests=7, cache_hits=1, input_tokens=720, output_tokens=540)
    assert rollup.usage[B] == Usage(requests=5, cache_hits=0, input_tokens=500, output_tokens=200)
    assert rollup.usage["openrouter:google/gemini-2.5-flash"].input_tokens == 2000
    assert rollup.usage_total.requests == 20
    assert rollup.usage_total.cache_hits == 1
    assert list(rollup.usage) == sorted(rollup.usage)


def test_usage_of_results_is_not_mutated(results):
    before = [r.model_dump() for r in results]
    build_rollup(results, agreement=NO_AGREEMENT)
    assert [r.model_dump() for r in results] == before


def test_problems_lists(rollup):
    [item] = rollup.item_problems
    assert (item.blueprint_path, item.prompt_id, item.model) == (TRIAGE, "headache", eff(B))
    assert "ANTHROPIC_API_KEY" in item.error
    points = [(p.prompt_id, p.model, p.point, p.score_kept) for p in rollup.point_problems]
    assert points == [
        ("chest-pain", eff(B), "Advises calling emergency services right away", True),
        ("chest-pain", eff(A), "Mentions aspirin dosage", False),
    ]


def test_agreement_callable_gets_points_in_item_order(results):
    seen = []

    def fake(points):
        seen.append([p.key_point_text for p in points])
        return {"krippendorffsAlpha": 0.9, "interpretation": "reliable", "numItems": len(points)}

    shuffled = results[:]
    random.Random(3).shuffle(shuffled)
    first = build_rollup(results, agreement=fake)
    second = build_rollup(shuffled, agreement=fake)
    assert seen[0] == seen[1]
    assert (
        first.agreement
        == second.agreement
        == {
            "krippendorffsAlpha": 0.9,
            "interpretation": "reliable",
            "numItems": len(seen[0]),
        }
    )


def test_agreement_precomputed_dict_is_used_as_is(results):
    given = {"krippendorffsAlpha": 0.7, "interpretation": "tentative"}
    assert build_rollup(results, agreement=given).agreement == given


def test_default_agreement_uses_the_judges_layer(results):
    judges = pytest.importorskip("pytest_weval.judges")
    if not hasattr(judges, "judge_agreement"):
        pytest.skip("judges.judge_agreement is not there yet")
    agreement = build_rollup(results).agreement
    assert agreement is not None
    # Points with 2+ judgements: 3 in chest-pain x A, 1 in chest-pain x B.
    assert agreement["numItems"] == 4
    assert agreement["interpretation"] in {"reliable", "tentative", "unreliable", "unstable"}


@pytest.mark.parametrize("seed", range(8))
def test_same_rollup_whatever_the_order(results, seed):
    shuffled = results[:]
    random.Random(seed).shuffle(shuffled)
    a = build_rollup(results, agreement=NO_AGREEMENT)
    b = build_rollup(shuffled, agreement=NO_AGREEMENT)
    assert a.to_dict() == b.to_dict()
    assert render_summary(a, width=100) == render_summary(b, width=100)


def test_float_sums_do_not_depend_on_order():
    # Plain left-to-right sums of these differ with the order; fsum does not.
    scores = [0.1, 0.7, 0.2, 0.9, 0.3, 0.33, 0.01, 0.47]
    items = [
        ItemResult(
            blueprint_id="x",
            blueprint_path="x.yml",
            prompt_id=f"p{i}",
            model_id=A,
            effective_model_id=eff(A),
            outcome="passed",
            score=s,
            prompt_weight=1.1 + i / 7,
        )
        for i, s in enumerate(scores)
    ]
    means = set()
    for seed in range(30):
        random.Random(seed).shuffle(items)
        means.add(tally(items).mean)
    assert len(means) == 1


def test_a_tally_weighs_what_its_interval_weighs():
    # weights that count (> 0) and ones that do not (None, 0, negative, NaN, text), a repeated
    # prompt id (the later one counts), repeats, and items without a score
    weights = [None, 2.0, 0.0, -1.0, float("nan"), "3", 0.5, None, 1.5, None]
    outcomes = ["passed", "failed", "passed", "error", "passed", "skipped", "passed", "failed", "passed", "passed"]
    items = [
        ItemResult(
            blueprint_id="x",
            blueprint_path=f"x{i % 2}.yml",
            prompt_id="dup" if i in (3, 7) else f"p{i}",
            prompt_line=i,
            model_id=A,
            effective_model_id=eff(A),
            outcome=outcome,
            score=None if outcome in ("error", "skipped") else (i + 1) / 11,
            prompt_weight=weight,
            sample_scores=[0.2, 0.6, (i + 1) / 11] if i % 3 == 0 else [],
        )
        for i, (weight, outcome) in enumerate(zip(weights, outcomes))
    ]
    counted = tally(items)
    scored = [items[i] for i in (0, 1, 2, 4, 6, 7, 8, 9)]  # 3 and 7 share a prompt id: 7 counts
    weighs = [1.0, 2.0, 1.0, 1.0, 0.5, 1.0, 1.5, 1.0]
    assert counted.scored == len(scored)
    assert counted.total_weight == sum(weighs)
    assert counted.mean == pytest.approx(sum(r.score * w for r, w in zip(scored, weighs)) / sum(weighs))
    assert counted.interval == mean_interval(scored)
    assert counted.within_item_variance is not None


def test_no_results():
    r = build_rollup([], agreement=NO_AGREEMENT)
    assert r.blueprints == {} and r.overall.mean is None and r.overall.items == 0
    assert list(r.folders) == [ROOT]


def test_folder_of():
    assert folder_of("a/b/c.yml") == "a/b"
    assert folder_of("c.yml") == ""
    assert folder_of("./c.yml") == ""


def test_partial_consensus_problem_names_the_failing_judge():
    from pytest_weval.blueprint.model import EvalPoint
    from pytest_weval.judges import JudgeOutcome, JudgeSpec, consensus_assessment

    point = EvalPoint(text="Mentions the deadline", display_text="Mentions the deadline")
    good, bad = JudgeSpec(None, "test:a", "holistic"), JudgeSpec(None, "test:b", "standard")
    assessment = consensus_assessment(
        point,
        [JudgeOutcome(good, score=1.0, reflection="yes"), JudgeOutcome(bad, error="HTTP 503: overloaded")],
        uses_defaults=False,
    )
    result = ItemResult(
        blueprint_id="b",
        blueprint_path="b.yml",
        prompt_id="p",
        model_id="m",
        effective_model_id="m",
        outcome="passed",
        threshold=0.5,
        score=1.0,
        points=[assessment],
    )
    (problem,) = build_rollup([result]).point_problems
    assert problem.score_kept
    assert problem.error.startswith("1 of 2 judges failed to return a valid assessment.")
    assert problem.error.endswith("Failed: standard(test:b): HTTP 503: overloaded.")
