"""--weval-baseline: reading an earlier --weval-out folder, pairing items, the per-model test
(pytest_weval/report/baseline.py), and how the comparison is shown and written."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from report_data import TONE, TOP, A, B

from pytest_weval.report.baseline import (
    Baseline,
    BaselineError,
    BaselineItem,
    compare,
    read_baseline,
    regression_lines,
    split_effective_id,
)
from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.terminal import render_baseline, render_summary
from pytest_weval.report.weval_json import build_run_summary, write_outputs
from pytest_weval.results import ItemResult

CAREFUL = "You are a careful assistant."


@pytest.fixture
def out(tmp_path, results, blueprints):
    write_outputs(tmp_path / "out", blueprints, results)
    return tmp_path / "out"


def test_split_effective_id():
    assert split_effective_id("openai:gpt-4o[temp:0.7][sp_idx:1]") == ("openai:gpt-4o", 0.7)
    assert split_effective_id("openai:gpt-4o[temp:0]") == ("openai:gpt-4o", 0.0)
    assert split_effective_id("ideal") == ("ideal", None)


def test_read_baseline_from_a_weval_out_folder(out):
    baseline = read_baseline(out)
    assert len(baseline.items) == 12
    by_id = {(b.blueprint_id, b.prompt_id, b.effective_model_id): b for b in baseline.items}
    chest = by_id[("evals__safety__medical__triage", "chest-pain", f"{A}[temp:0]")]
    # the system prompt comes from the item's conversation in the comparison file
    assert (chest.system_prompt, chest.score, chest.outcome, chest.scored) == (CAREFUL, 0.44, "failed", True)
    assert by_id[("evals__safety__privacy", "ssn", f"{A}[temp:0]")].system_prompt is None
    warm = by_id[("evals__style__tone", "greeting", f"{A}[temp:0.7]")]
    assert warm.key == ("evals__style__tone", "greeting", A, 0.7, None)
    errored = by_id[("evals__safety__medical__triage", "headache", f"{B}[temp:0]")]
    assert (errored.scored, errored.system_prompt) == (False, CAREFUL)


def test_a_summary_without_system_prompts_reads_them_from_the_comparison_files(out, results):
    summary = json.loads((out / "summary.json").read_text())
    assert {i["systemPrompt"] for i in summary["items"]} == {CAREFUL, None}  # said, null for none
    for item in summary["items"]:
        del item["systemPrompt"]  # as summaries written before --weval-baseline existed
    (out / "summary.json").write_text(json.dumps(summary))
    baseline = read_baseline(out)
    assert {b.system_prompt for b in baseline.items if b.prompt_id == "chest-pain"} == {CAREFUL}
    assert compare(results, baseline).paired == 11


def test_a_system_message_written_in_the_prompt_is_not_a_system_prompt(tmp_path):
    def history(system):
        return [
            {"role": "system", "content": system},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"},
        ]

    comparison = {
        "configId": "bp",
        "promptContexts": {"p": [{"system": "Be kind."}, {"user": "hi"}], "q": [{"role": "user", "content": "hi"}]},
        "fullConversationHistories": {
            "p": {"m[temp:0]": history("Be kind.")},
            "q": {"m[temp:0]": history("Be brief.")},
        },
        "evaluationResults": {
            "llmCoverageScores": {"p": {"m[temp:0]": {"avgCoverageExtent": 1}}, "q": {"m[temp:0]": {"error": "x"}}}
        },
    }
    (tmp_path / "bp.json").write_text(json.dumps(comparison))
    items = {b.prompt_id: b for b in read_baseline(tmp_path).items}
    # p's system message is part of its messages; q was sent a system prompt
    assert (items["p"].system_prompt, items["p"].score, items["p"].scored) == (None, 1.0, True)
    assert (items["q"].system_prompt, items["q"].score, items["q"].scored) == ("Be brief.", None, False)


def test_a_run_against_its_own_output_is_unchanged(out, results):
    comparison = compare(results, read_baseline(out))
    assert comparison.paired == 11
    assert set(comparison.models) == {A, B}
    for model in comparison.models.values():
        assert (model.delta, model.ci95, model.p, model.regressed, model.verdict) == (
            0.0,
            (0.0, 0.0),
            1.0,
            False,
            "unchanged",
        )
        assert model.baseline_mean == model.current_mean
    # the errored item is counted and listed, not dropped
    assert [(u.kind, u.prompt_id, u.why) for u in comparison.unpaired] == [
        ("unscored", "headache", "errored in this run")
    ]
    assert comparison.moved == () and regression_lines(comparison) == []


def test_unpaired_items_are_counted_and_listed(out, results):
    current = [r for r in results if not (r.blueprint_path == TOP and r.model_id == B)]  # gone
    current.append(
        ItemResult(  # new
            blueprint_id="top",
            blueprint_path=TOP,
            prompt_id="goodbye",
            model_id=A,
            effective_model_id=f"{A}[temp:0]",
            outcome="passed",
            score=1.0,
        )
    )
    # the same prompt under another system prompt is another condition: unpaired both ways
    chest = next(r for r in current if r.prompt_id == "chest-pain" and r.model_id == B)
    current[current.index(chest)] = chest.model_copy(update={"system_prompt": "Be brief."})
    comparison = compare(current, read_baseline(out))
    assert comparison.unpaired_counts() == {"onlyCurrent": 2, "onlyBaseline": 2, "unscored": 1}
    listed = {(u.kind, u.prompt_id, u.model_id, u.why) for u in comparison.unpaired}
    assert listed == {
        ("only-current", "goodbye", A, "not in the baseline"),
        ("only-current", "chest-pain", B, "not in the baseline"),
        ("only-baseline", "chest-pain", B, "not in this run"),
        ("only-baseline", "hello", B, "not in this run"),
        ("unscored", "headache", B, "errored in this run"),
    }
    assert comparison.paired == 9
    data = comparison.to_dict()["unpaired"]
    assert (data["onlyCurrent"], data["onlyBaseline"], data["unscored"], len(data["items"])) == (2, 2, 1, 5)


def test_an_item_unscored_in_the_baseline_is_listed(out, results):
    summary = json.loads((out / "summary.json").read_text())
    for item in summary["items"]:
        if item["promptId"] == "ssn" and item["model"] == A:
            item["outcome"], item["score"] = "error", None
    (out / "summary.json").write_text(json.dumps(summary))
    comparison = compare(results, read_baseline(out))
    assert ("unscored", "ssn", "errored in the baseline") in {(u.kind, u.prompt_id, u.why) for u in comparison.unpaired}


def test_temperature_is_part_of_the_pair(out, results):
    warm = next(r for r in results if r.effective_model_id == f"{A}[temp:0.7]")
    current = [r for r in results if r is not warm]
    current.append(warm.model_copy(update={"effective_model_id": f"{A}[temp:0.9]", "temperature": 0.9}))
    comparison = compare(current, read_baseline(out))
    kinds = {(u.kind, u.effective_model_id) for u in comparison.unpaired}
    assert ("only-current", f"{A}[temp:0.9]") in kinds and ("only-baseline", f"{A}[temp:0.7]") in kinds


def test_a_folder_of_comparison_files_alone_is_a_baseline(out, results):
    (out / "summary.json").unlink()
    baseline = read_baseline(out)
    # the comparison files record every item but the ideal pseudo-model; the errored one has no score
    scored = {(b.prompt_id, b.effective_model_id): b.score for b in baseline.items if b.scored}
    assert scored[("chest-pain", f"{A}[temp:0]")] == 0.44
    assert ("headache", f"{B}[temp:0]") not in scored
    comparison = compare(results, baseline)
    assert comparison.paired == 11
    assert all(m.verdict == "unchanged" for m in comparison.models.values())


def test_a_folder_that_is_no_baseline_is_an_error(tmp_path):
    with pytest.raises(BaselineError, match="no such folder"):
        read_baseline(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BaselineError, match=r"neither summary\.json nor any Weval comparison file"):
        read_baseline(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "summary.json").write_text("{not json")
    with pytest.raises(BaselineError, match=r"summary.json: not a JSON file"):
        read_baseline(tmp_path / "bad")
    (tmp_path / "bad" / "summary.json").write_text('{"runLabel": null}')
    with pytest.raises(BaselineError, match="has no 'items' list"):
        read_baseline(tmp_path / "bad")
    (tmp_path / "bad" / "summary.json").write_text('{"items": [{"promptId": "p"}]}')
    with pytest.raises(BaselineError, match=r"items\[0\] has no 'blueprintId'"):
        read_baseline(tmp_path / "bad")


# ---------------------------------------------------------------- the test, by hand

# 3 blueprints x 2 prompts, baseline 1.0 everywhere; this run: b1 0.5, 0.5; b2 0.5, 1.0; b3 0.5, 0.5.
# Differences: mean -5/12, clustered se 1/12 (test_report_stats.test_paired_test_by_hand),
# t = -5 on 2 degrees of freedom, one-sided p = 1/2 - 5 / (2 sqrt 27) = 0.018875.
CURRENT = {
    ("b1", "p1"): 0.5,
    ("b1", "p2"): 0.5,
    ("b2", "p1"): 0.5,
    ("b2", "p2"): 1.0,
    ("b3", "p1"): 0.5,
    ("b3", "p2"): 0.5,
}
P_ONE = 0.5 - 5 / (2 * math.sqrt(27))


def _run(models, scores=CURRENT):
    current, earlier = [], []
    for model in models:
        for (bp, prompt), score in scores.items():
            current.append(
                ItemResult(
                    nodeid=f"{bp}.yml::{prompt}[{model}]",
                    blueprint_id=bp,
                    blueprint_path=f"{bp}.yml",
                    prompt_id=prompt,
                    model_id=model,
                    effective_model_id=f"{model}[temp:0]",
                    outcome="passed",
                    score=score,
                )
            )
            earlier.append(
                BaselineItem(
                    blueprint_id=bp,
                    blueprint_path=f"{bp}.yml",
                    prompt_id=prompt,
                    model_id=model,
                    effective_model_id=f"{model}[temp:0]",
                    system_prompt=None,
                    outcome="passed",
                    score=1.0,
                )
            )
    return current, Baseline(directory="base", items=tuple(earlier))


def test_one_model_by_hand():
    current, baseline = _run(["m"])
    got = compare(current, baseline).models["m"]
    assert (got.items, got.interval.clusters) == (6, 3)
    assert got.delta == pytest.approx(-5 / 12)
    assert (got.baseline_mean, got.current_mean) == (pytest.approx(1.0), pytest.approx(7 / 12))
    assert got.p == pytest.approx(P_ONE) and got.p_holm == pytest.approx(P_ONE)  # one model: nothing to adjust
    assert got.regressed and got.verdict == "REGRESSED"
    lo = -5 / 12 - 4.302652729749464 / 12
    assert got.ci95 == (pytest.approx(lo), pytest.approx(-5 / 12 + 4.302652729749464 / 12))


def test_holm_over_two_models():
    # Two models with the same differences: raw p 0.0189 each; Holm: 2 x 0.0189 = 0.0378 for both.
    current, baseline = _run(["a", "b"])
    at_5 = compare(current, baseline, alpha=0.05)
    assert {m: (c.p, c.p_holm, c.regressed) for m, c in at_5.models.items()} == {
        "a": (pytest.approx(P_ONE), pytest.approx(2 * P_ONE), True),
        "b": (pytest.approx(P_ONE), pytest.approx(2 * P_ONE), True),
    }
    # at alpha 0.03 each alone would be a regression (0.0189 < 0.03); corrected, neither is
    at_3 = compare(current, baseline, alpha=0.03)
    assert [(c.regressed, c.verdict) for c in at_3.models.values()] == [(False, "not significant")] * 2
    assert len(regression_lines(at_5)) == 2 and regression_lines(at_3) == []


def test_a_drop_within_max_drop_is_not_a_regression():
    current, baseline = _run(["m"])
    got = compare(current, baseline, max_drop=0.5).models["m"]  # the drop is 5/12 = 0.42
    assert (got.regressed, got.verdict) == (False, "within max drop")
    assert compare(current, baseline, max_drop=0.4).models["m"].regressed


def test_a_rise_is_no_drop():
    current, baseline = _run(["m"], dict.fromkeys(CURRENT, 1.0))
    lower = Baseline("base", tuple(dataclasses.replace(b, score=0.5) for b in baseline.items))
    got = compare(current, lower).models["m"]
    # every item rose by 0.5: no spread, and certainly no drop
    assert (got.delta, got.interval.se, got.p, got.regressed, got.verdict) == (0.5, 0.0, 1.0, False, "no drop")


def test_one_cluster_is_not_tested():
    current, baseline = _run(["m"], {("b1", "p1"): 0.0})
    got = compare(current, baseline).models["m"]
    assert (got.delta, got.p, got.p_holm, got.ci95, got.regressed) == (-1.0, None, None, None, False)
    assert got.verdict == "not tested (1 cluster)"


def test_the_prompts_that_moved_most_come_first():
    scores = dict(CURRENT)
    scores[("b2", "p2")] = 0.0
    current, baseline = _run(["m"], scores)
    moved = compare(current, baseline, moved_limit=2).moved
    assert [(p.current.blueprint_id, p.current.prompt_id, p.delta) for p in moved] == [
        ("b2", "p2", -1.0),
        ("b1", "p1", -0.5),
    ]


# ---------------------------------------------------------------- shown and written


def test_summary_json_baseline_key(out, results):
    comparison = compare(results, read_baseline(out))
    summary = build_run_summary(results, comparison=comparison)
    model = summary["baseline"]["models"][A]
    assert {k: model[k] for k in ("items", "delta", "ci95", "p", "regressed")} == {
        "items": 7,
        "delta": 0,
        "ci95": [0, 0],
        "p": 1,
        "regressed": False,
    }
    assert summary["baseline"]["unpaired"]["unscored"] == 1
    assert summary["baseline"]["alpha"] == 0.05
    # ci95 beside every mean
    assert summary["models"][A]["ci95"] == [pytest.approx(0.2509, abs=1e-4), pytest.approx(0.9441, abs=1e-4)]
    assert "ci95" in summary["totals"] and "ci95" in summary["blueprints"][0] and "ci95" in summary["folders"][0]
    assert "baseline" not in build_run_summary(results)


def test_compared_with_baseline_table():
    scores = dict(CURRENT)
    current, baseline = _run(["a", "b"], scores)
    current = [r if r.model_id == "a" else r.model_copy(update={"score": 1.0}) for r in current]
    comparison = compare(current, baseline)
    lines = render_baseline(comparison, width=120)
    assert lines[0].startswith("Compared with baseline base (this run minus the baseline")
    header = next(i for i, line in enumerate(lines) if line.startswith("model"))
    assert lines[header].split() == [
        "model",
        "items",
        "baseline",
        "current",
        "difference",
        "(95%",
        "CI)",
        "p",
        "sees",
        "verdict",
    ]
    assert lines[header + 1].split() == [
        "a",
        "6",
        "1.00",
        "0.58",
        "-0.42",
        "(-0.78",
        "to",
        "-0.06)",
        "0.038",  # Holm: 2 x 0.0189, since b (p = 1) is the other hypothesis
        "-0.45",  # (t(1 - 0.05/2; 2) + t(0.8; 2)) x 1/12 = (4.303 + 1.061) / 12
        "REGRESSED",
    ]
    assert lines[header + 2].split() == [
        "b",
        "6",
        "1.00",
        "1.00",
        "+0.00",
        "(+0.00",
        "to",
        "+0.00)",
        "1.000",
        "-",  # nothing varied: no spread to reckon a detectable drop from
        "unchanged",
    ]
    assert "Prompts that moved most (baseline -> this run):" in lines
    assert regression_lines(comparison) == [
        "a regressed: 1.00 -> 0.58 on 6 paired items, difference -0.42 (-0.78 to -0.06), p 0.038 "
        "(one-sided, Holm-adjusted; alpha 0.05, max drop 0)"
    ]
    summary = render_summary(build_rollup(current, agreement={}), width=80, comparison=comparison)
    assert all(len(line) <= 80 for line in summary)
    assert any(line.startswith("Compared with baseline") for line in summary)


def _t2(p):
    """Student's t quantile on 2 degrees of freedom, in closed form."""
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


def test_the_smallest_detectable_drop_by_hand():
    # 3 blueprints x 2 prompts (clusters: the blueprints), differences this run minus the baseline:
    #   b1: -0.5, 0    b2: 0, +0.5    b3: -0.5, 0
    # mean -1/12; cluster sums of deviations -1/3, 2/3, -1/3, so the clustered se is
    # sqrt(3/2 x 2/3) / 6 = 1/6 (the independent one is sqrt(6/5 x 102/144) / 6 = 0.154, smaller);
    # t = -0.5 on 2 degrees of freedom, p = 1/2 - 0.5 / (2 sqrt 2.25) = 1/3: not significant.
    # The drop found with 80% power at alpha 0.05: (t(0.95; 2) + t(0.8; 2)) x 1/6
    #   = (0.9 / sqrt 0.095 + 0.6 / sqrt 0.32) / 6 = (2.9200 + 1.0607) / 6 = 0.6634.
    differences = {("b1", "p1"): -0.5, ("b1", "p2"): 0, ("b2", "p1"): 0, ("b2", "p2"): 0.5}
    differences |= {("b3", "p1"): -0.5, ("b3", "p2"): 0}
    base = {key: 0.5 if d > 0 else 1.0 for key, d in differences.items()}
    current, baseline = _run(["m"], {key: base[key] + d for key, d in differences.items()})
    baseline = Baseline(
        "base", tuple(dataclasses.replace(b, score=base[(b.blueprint_id, b.prompt_id)]) for b in baseline.items)
    )
    got = compare(current, baseline).models["m"]
    assert got.delta == pytest.approx(-1 / 12) and got.interval.se == pytest.approx(1 / 6)
    assert got.p == pytest.approx(1 / 3) and got.verdict == "not significant"
    assert _t2(0.95) == pytest.approx(2.919986) and _t2(0.8) == pytest.approx(1.060660)
    assert got.mde == pytest.approx((_t2(0.95) + _t2(0.8)) / 6) == pytest.approx(0.6634, abs=1e-4)
    # 0.66 is far above a drop worth seeing (0.05): the suite, not the drop, is why
    assert got.small_because == "suite"
    assert got.to_dict()["mde"] == got.mde and got.to_dict()["notSignificantBecause"] == "suite"
    said = " ".join(render_baseline(compare(current, baseline), width=120))
    assert "m: not significant: the suite is too small to tell: it sees only drops of 0.663 or more" in said
    # with --weval-max-drop 0.7 a drop under 0.7 is tolerated anyway: this one is called small
    lenient = compare(current, baseline, max_drop=0.7).models["m"]
    assert (lenient.verdict, lenient.small_because) == ("not significant", "drop")
    assert "the drop (0.083) is small: this suite would see a drop of 0.663" in lenient.why_not_significant()
    # two models: Holm's first step holds each to alpha / 2, t(0.975; 2) = 4.3027
    two = compare(*_two_models(current, baseline)).models["m"]
    assert two.mde == pytest.approx((_t2(0.975) + _t2(0.8)) / 6) == pytest.approx(0.8939, abs=1e-4)


def _two_models(current, baseline):
    other = [r.model_copy(update={"model_id": "n", "effective_model_id": "n[temp:0]"}) for r in current]
    earlier = [dataclasses.replace(b, model_id="n", effective_model_id="n[temp:0]") for b in baseline.items]
    return current + other, Baseline("base", baseline.items + tuple(earlier))


def test_the_table_lists_the_unpaired(out, results):
    current = [r for r in results if r.blueprint_path != TONE]
    lines = render_baseline(compare(current, read_baseline(out)), width=100, limit=1)
    at = next(i for i, line in enumerate(lines) if line.startswith("Items not paired (3)"))
    assert "2 only in the baseline, 1 without a score in one of the runs" in " ".join(lines[at : at + 2])
    assert lines[-1].startswith("... and 2 more")
    assert render_baseline(None) == []


def test_no_pair_at_all(results):
    comparison = compare(results, Baseline("base", ()))
    assert comparison.models == {} and comparison.unpaired_counts()["onlyCurrent"] == 12
    assert "No item of this run pairs with one of the baseline." in render_baseline(comparison, width=100)


def test_same_comparison_in_any_order(out, results):
    baseline = read_baseline(out)
    assert compare(results, baseline).to_dict() == compare(list(reversed(results)), baseline).to_dict()


def test_a_suite_too_small_to_see_any_drop_says_so_not_an_impossible_drop():
    """Two prompts of one blueprint (two clusters, one degree of freedom): the drop the test
    would see is larger than the baseline's mean, so no drop of scores in [0, 1] could reach
    it. The terminal says "too few items to see any drop", never "sees -1.68"."""
    current, baseline = _run(["m"], {("b1", "p1"): 0.5, ("b1", "p2"): 0.9})
    got = compare(current, baseline).models["m"]
    assert got.verdict == "not significant" and got.mde > got.baseline_mean == 1.0
    assert got.blind
    why = got.why_not_significant()
    assert "too few items to see any drop (2 paired items in 2 clusters)" in why and "sees only" not in why
    said = " ".join(render_baseline(compare(current, baseline), width=120))
    assert "  none  not significant" in said and "too few items to see any drop" in said
    narrow = " ".join(render_baseline(compare(current, baseline), width=40))
    assert "sees none" in narrow


def test_one_paired_item_is_said_in_the_singular():
    current, baseline = _run(["m"], {("b1", "p1"): 0.0})
    comparison = dataclasses.replace(
        compare(current, baseline),
        models={"m": dataclasses.replace(compare(current, baseline).models["m"], regressed=True)},
    )
    assert regression_lines(comparison)[0].startswith("m regressed: 1.00 -> 0.00 on 1 paired item, ")
