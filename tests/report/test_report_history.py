"""report/history.py on its own: a run's record carries summary.json's figures, a recorded item
comes back as the result it was, the changes are the items scored in both runs whose score moved,
a recorded run pairs as a baseline, and the table marks only changes beyond noise."""

from __future__ import annotations

import pytest

from pytest_weval.report.baseline import compare
from pytest_weval.report.history import (
    baseline_of,
    beyond_noise,
    changes_since,
    history_rows,
    history_table,
    item_record,
    previous_run,
    result_of,
    run_record,
)
from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.weval_json import build_run_summary
from pytest_weval.results import ItemResult, JudgeVerdict, PointAssessment


def _result(prompt: str, model: str, score: float | None, outcome: str = "passed", answer: str = "a") -> ItemResult:
    return ItemResult(
        nodeid=f"blueprints/b.yml::{prompt}[{model}]",
        blueprint_id="b",
        blueprint_path="blueprints/b.yml",
        prompt_id=prompt,
        model_id=model,
        effective_model_id=model,
        outcome=outcome,
        score=score,
        response=answer,
        points=[
            PointAssessment(
                key_point_text="is kind",
                coverage_extent=score,
                kind="judged",
                individual_judgements=[JudgeVerdict(judge_model_id="openai:judge", coverage_extent=score or 0)],
            )
        ],
    )


RESULTS = [_result(f"q{n}", m, s) for n, s in enumerate((1.0, 0.5, 0.75, 0.25), 1) for m in ("openai:a", "openai:b")]


def _recorded(results: list[ItemResult], run_id: str = "r1", started: float = 100.0) -> tuple[dict, list[dict]]:
    return run_record(results, build_rollup(results), run_id=run_id, started=started, ended=started + 1, host="h")


def test_the_record_has_summary_json_figures_and_items_come_back_as_they_were():
    run, items = _recorded(RESULTS)
    summary = build_run_summary(RESULTS)
    assert run["figures"] == {
        m: {k: summary["models"][m][k] for k in ("mean", "ci95", "items")} for m in ("openai:a", "openai:b")
    }
    assert run["models"] == ["openai:a", "openai:b"] and run["judges"] == ["openai:judge"]
    assert [item["nodeid"] for item in items] == sorted(r.nodeid for r in RESULTS)
    again = [result_of(item) for item in items]
    assert build_run_summary(again)["models"] == summary["models"]
    assert item_record(RESULTS[0])["detail"]["points"] == [
        {"text": "is kind", "score": 1.0, "inverted": False, "error": None, "kind": "judged"}
    ]


def test_the_changes_are_the_items_scored_in_both_runs_whose_score_moved():
    previous, items = _recorded(RESULTS)
    now = [r.model_copy() for r in RESULTS]
    now[0].score = 0.5  # q1, a: worse
    now[3].score = 1.0  # q2, b: better
    now[4].score, now[4].outcome = None, "error"  # q3, a: no score now, not a change
    changes = changes_since(previous, items, now)
    assert [(c.nodeid, c.old, c.new) for c in changes.items] == [
        ("blueprints/b.yml::q1[openai:a]", 1.0, 0.5),
        ("blueprints/b.yml::q2[openai:b]", 0.5, 1.0),
    ]
    assert (changes.better, changes.worse) == (1, 1)
    assert changes.line().startswith("since the last run: 2 items changed (1 better, 1 worse) [run r1, ")
    assert changes.to_dict()["items"][0] == {"nodeid": "blueprints/b.yml::q1[openai:a]", "old": 1, "new": 0.5}
    assert changes_since(previous, items, RESULTS).line().startswith("since the last run: 0 items changed")


def test_a_recorded_run_pairs_as_a_baseline():
    run, items = _recorded(RESULTS)
    worse = [r.model_copy(update={"score": 0.0}) if r.model_id == "openai:b" else r for r in RESULTS]
    compared = compare(worse, baseline_of(run, items))
    assert compared.models["openai:b"].items == 4 and compared.models["openai:b"].delta == pytest.approx(-0.625)
    assert compared.models["openai:a"].delta == 0


def test_the_previous_run_is_the_newest_that_began_before_this_one():
    runs = [
        {"id": "old", "started": 1.0, "branch": "main"},
        {"id": "pr", "started": 2.0, "branch": "feature"},
        {"id": "this", "started": 3.0, "branch": "feature"},
        {"id": "later", "started": 4.0, "branch": "main"},
    ]
    assert previous_run(runs, current_id="this", started=3.0)["id"] == "pr"
    assert previous_run(runs, current_id="this", started=3.0, branch="main")["id"] == "old"
    assert previous_run(runs, current_id="old", started=1.0) is None


def test_only_a_change_beyond_both_intervals_is_marked():
    wide = {"mean": 0.8, "ci95": [0.6, 1.0]}
    assert not beyond_noise(wide, {"mean": 0.6, "ci95": [0.4, 0.8]})  # 0.2 < sqrt(0.2^2 + 0.2^2)
    assert beyond_noise(wide, {"mean": 0.4, "ci95": [0.3, 0.5]})  # 0.4 > sqrt(0.2^2 + 0.1^2)
    assert not beyond_noise(wide, {"mean": 0.1, "ci95": None})  # no interval, no verdict
    runs = [
        {"id": "r1", "started": 1.0, "ended": 2.0, "commit": "abc", "figures": {"m": wide}},
        {
            "id": "r2",
            "started": 3.0,
            "ended": 4.0,
            "commit": "def",
            "figures": {"m": {"mean": 0.4, "ci95": [0.3, 0.5]}},
        },
    ]
    rows = history_rows(runs, lambda run_id: [])
    lines = history_table(rows)
    assert lines[0].split() == ["run", "started", "commit", "m"]
    assert lines[1].split()[-1] == "0.80" and lines[2].endswith("0.40 -0.40 *") and lines[3].startswith("* ")
    assert history_table([]) == ["no run recorded"]
    assert [row["id"] for row in history_rows(runs, lambda run_id: [], last=1)] == ["r2"]
