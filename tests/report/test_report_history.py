"""report/history.py on its own: a run's record carries summary.json's figures, a recorded item
comes back as the result it was, the changes are the items scored in both runs whose score moved,
a recorded run pairs as a baseline, and the table marks only changes beyond noise."""

from __future__ import annotations

import gc
import weakref

import pytest

from pytest_weval.report.analyses import run_analyses
from pytest_weval.report.baseline import compare
from pytest_weval.report.history import (
    baseline_of,
    beyond_noise,
    changes_from,
    changes_since,
    compare_newest,
    earlier_runs,
    history_rows,
    history_table,
    history_view,
    item_record,
    newest_scores,
    recorded_order,
    result_of,
    run_figures,
    run_selections,
)
from pytest_weval.report.history_record import ItemRecord, ModelFigures, RunRecord, read_run, stored_item
from pytest_weval.report.html_history import history_section
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


def _recorded(
    results: list[ItemResult], run_id: str = "r1", started: float = 100.0
) -> tuple[RunRecord, list[ItemRecord]]:
    run = run_figures(results, build_rollup(results), run_id=run_id, started=started, ended=started + 1, host="h")
    return run, [item_record(r) for r in recorded_order(results)]


def test_the_record_has_summary_json_figures_and_items_come_back_as_they_were():
    run, items = _recorded(RESULTS)
    summary = build_run_summary(RESULTS)
    assert {m: {k: getattr(f, k) for k in ("mean", "ci95", "items")} for m, f in run.figures.items()} == {
        m: {k: summary["models"][m][k] for k in ("mean", "ci95", "items")} for m in ("openai:a", "openai:b")
    }
    assert run.models == ["openai:a", "openai:b"] and run.judges == ["openai:judge"]
    assert [item.nodeid for item in items] == sorted(r.nodeid for r in RESULTS)
    again = [result_of(item) for item in items]
    assert build_run_summary(again)["models"] == summary["models"]
    assert stored_item(item_record(RESULTS[0]))["detail"]["points"] == [
        {"text": "is kind", "score": 1.0, "inverted": False, "error": None, "kind": "judged"}
    ]


def test_the_changes_are_the_items_scored_in_both_runs_whose_score_moved():
    previous, items = _recorded(RESULTS)
    now = [r.model_copy() for r in RESULTS]
    now[0].score = 0.5  # q1, a: worse
    now[3].score = 1.0  # q2, b: better
    now[4].score, now[4].outcome = None, "error"  # q3, a: no score now, not a change
    changes = changes_since(_earlier((previous, items), wanted=now), now)
    assert [(c.nodeid, c.old, c.new) for c in changes.items] == [
        ("blueprints/b.yml::q1[openai:a]", 1.0, 0.5),
        ("blueprints/b.yml::q2[openai:b]", 0.5, 1.0),
    ]
    assert (changes.better, changes.worse) == (1, 1)
    assert changes.line().startswith("since the last run: 2 of 7 items changed (1 better, 1 worse) [run r1, ")
    assert changes.to_dict()["items"][0] == {
        "nodeid": "blueprints/b.yml::q1[openai:a]",
        "old": 1,
        "new": 0.5,
        "run": "r1",
    }
    again = changes_since(_earlier((previous, items)), RESULTS)
    assert again.line().startswith("since the last run: 0 of 8 items changed")


def test_the_newest_runs_items_are_paired_as_they_come_and_only_the_changed_ones_kept():
    """A run's end reads the run before it one item at a time (``History.each_item``): each is
    compared with this run's item at once and let go, unless its score changed (the page shows
    the changed items' answers), so the earlier run's items are never all held."""
    previous, items = _recorded(RESULTS)
    now = [r.model_copy() for r in RESULTS]
    now[0].score = 0.5  # q1, a: worse
    now[3].score = 1.0  # q2, b: better
    given: list[weakref.ref[ItemRecord]] = []
    held_while_read: list[int] = []

    def each_item():
        for item in items:
            held_while_read.append(sum(1 for ref in given if ref() is not None))
            copy = item.model_copy()
            given.append(weakref.ref(copy))
            yield copy

    scored, analysis = compare_newest(previous, each_item(), now)
    gc.collect()
    kept = [ref() for ref in given if ref() is not None]
    assert sorted(item.nodeid for item in kept) == [now[0].nodeid, now[3].nodeid]
    assert max(held_while_read) <= 3  # the changed ones and the one in hand: every other item went
    changes = changes_from(previous, now, scored.get)
    assert [(c.nodeid, c.old, c.new) for c in changes.items] == [(now[0].nodeid, 1.0, 0.5), (now[3].nodeid, 0.5, 1.0)]
    assert changes == changes_since(_earlier((previous, items), wanted=now), now)
    current = run_figures(now, build_rollup(now), run_id="now", started=200.0, ended=201.0, host="h")
    analysis.blueprint(current, [item_record(r) for r in recorded_order(now)])
    found = analysis.analyses()
    assert [(r["nodeid"], r["type"], r["delta"]) for r in found.regressions] == [(now[0].nodeid, "prompt", -0.5)]
    assert found.totals == {"regressions": 1, "painPoints": 4, "deltas": 8}


def _earlier(*recorded: tuple[RunRecord, list[ItemRecord]], wanted: list[ItemResult] = RESULTS):
    """The recorded runs (oldest first) as the history hands them to a run that began after them."""
    runs = [run for run, _ in recorded]
    items = {run.id: found for run, found in recorded}
    earlier = earlier_runs(runs, current_id="now", started=1e9)
    return newest_scores(earlier, lambda ids: {i: items[i] for i in ids}, [r.nodeid for r in wanted], chunk=1)


def test_a_recorded_run_pairs_as_a_baseline():
    run, items = _recorded(RESULTS)
    worse = [r.model_copy(update={"score": 0.0}) if r.model_id == "openai:b" else r for r in RESULTS]
    compared = compare(worse, baseline_of(_earlier((run, items))))
    assert compared.models["openai:b"].items == 4 and compared.models["openai:b"].delta == pytest.approx(-0.625)
    assert compared.models["openai:a"].delta == 0


def test_runs_that_skipped_or_left_out_items_hide_no_older_score():
    """A full run, then a -k run of one item, then a submit run whose items were all skipped:
    every item still pairs with its newest score, and the line names what it compared."""
    full = _recorded(RESULTS, "full", 100.0)
    partial = _recorded([RESULTS[0].model_copy(update={"score": 0.5})], "k", 200.0)
    skipped = [r.model_copy(update={"score": None, "outcome": "skipped"}) for r in RESULTS]
    submit = _recorded(skipped, "submit", 300.0)
    earlier = _earlier(full, partial, submit)
    baseline = baseline_of(earlier)
    compared = compare(RESULTS, baseline)
    assert compared.paired == len(RESULTS) and not compared.unpaired
    assert {nodeid: run.id for nodeid, (run, _) in earlier.scored.items()} == {
        r.nodeid: "k" if r is RESULTS[0] else "full" for r in RESULTS
    }
    assert baseline.directory.startswith("runs k, ") and "1 older" in baseline.directory
    changes = changes_since(earlier, RESULTS)
    assert [(c.nodeid, c.old, c.new, c.run.id) for c in changes.items] == [(RESULTS[0].nodeid, 0.5, 1.0, "k")]
    assert changes.line().startswith("since the last run: 1 of 8 items changed (1 better, 0 worse) [run k, ")
    assert changes.line().endswith("; 7 of them last scored in older runs]")
    # With nothing in common, the line says so instead of "0 items changed".
    other = [r.model_copy(update={"nodeid": r.nodeid + "x"}) for r in RESULTS]
    none = changes_since(_earlier(full, wanted=other), other)
    assert none.compared == 0 and "no item of this run was scored by an earlier run" in none.line()
    unscored = [r.model_copy(update={"score": None, "outcome": "error"}) for r in RESULTS]
    assert "this run scored no item, nothing to compare" in changes_since(_earlier(full), unscored).line()


def test_the_earlier_runs_are_those_that_began_before_this_one_newest_first():
    runs = [
        read_run({"id": "old", "started": 1.0, "ended": 1.0, "branch": "main"}),
        read_run({"id": "pr", "started": 2.0, "ended": 2.0, "branch": "feature"}),
        read_run({"id": "this", "started": 3.0, "ended": 3.0, "branch": "feature"}),
        read_run({"id": "later", "started": 4.0, "ended": 4.0, "branch": "main"}),
    ]
    assert [r.id for r in earlier_runs(runs, current_id="this", started=3.0)] == ["pr", "old"]
    assert [r.id for r in earlier_runs(runs, current_id="this", started=3.0, branch="main")] == ["old"]
    assert earlier_runs(runs, current_id="old", started=1.0) == []


def test_a_trend_holds_only_runs_over_the_same_items_and_only_models_of_this_run():
    full = _recorded(RESULTS, "full", 100.0)
    partial = _recorded([RESULTS[0]], "k", 200.0)
    gone = _recorded([r.model_copy(update={"model_id": "openai:gone"}) for r in RESULTS[:2]], "old-model", 250.0)
    now, _ = _recorded(RESULTS, "now", 300.0)
    items = {run.id: found for run, found in (full, partial, gone)}
    view = history_view([full[0], partial[0], gone[0]], now, None, lambda run: run_selections(run, items.get))
    assert view.trend_runs == {"openai:a": ["full", "now"], "openai:b": ["full", "now"]}
    # Each caption is of a model of this run (one whose points came from old runs only would read
    # "openai:gone: 1.00 in this run").
    page = history_section(view)
    assert "openai:gone" not in page
    assert "openai:a: 0.63 in this run, +0.00 since the last run over the same items (2 runs)" in page


def test_only_a_change_beyond_both_intervals_is_marked():
    wide = ModelFigures(mean=0.8, ci95=[0.6, 1.0])
    assert not beyond_noise(wide, ModelFigures(mean=0.6, ci95=[0.4, 0.8]))  # 0.2 < sqrt(0.2^2 + 0.2^2)
    assert beyond_noise(wide, ModelFigures(mean=0.4, ci95=[0.3, 0.5]))  # 0.4 > sqrt(0.2^2 + 0.1^2)
    assert not beyond_noise(wide, ModelFigures(mean=0.1, ci95=None))  # no interval, no verdict
    runs = [
        read_run({"id": "r1", "started": 1.0, "ended": 2.0, "commit": "abc", "figures": {"m": wide.model_dump()}}),
        read_run(
            {
                "id": "r2",
                "started": 3.0,
                "ended": 4.0,
                "commit": "def",
                "figures": {"m": {"mean": 0.4, "ci95": [0.3, 0.5]}},
            }
        ),
    ]
    rows = history_rows(runs, lambda run_id: [])
    lines = history_table(rows)
    assert lines[0].split() == ["run", "started", "commit", "m"]
    assert lines[1].split()[-1] == "0.80" and lines[2].endswith("0.40 -0.40 *") and lines[3].startswith("* ")
    assert history_table([]) == ["no run recorded"]
    assert [row.run.id for row in history_rows(runs, lambda run_id: [], last=1)] == ["r2"]


def test_the_pages_analyses_cut_to_a_limit_are_the_first_rows_of_the_whole_lists():
    """The page's lists are cut as they grow (a run's thousands of findings are never all kept):
    cut to two rows they are the first two of the uncut lists, whatever order the items came
    in, and the totals count every finding."""
    previous = [_result(f"q{n}", m, s) for n, s in enumerate((1.0, 0.9, 0.8, 0.7, 0.6), 1) for m in ("openai:a", "x:b")]
    now = [r.model_copy(update={"score": 0.1 * n, "outcome": "failed"}) for n, r in enumerate(previous)]
    old_run, old_items = _recorded(previous)
    new_run, new_items = _recorded(now, "r2", 200.0)
    whole = run_analyses(old_run, old_items, new_run, new_items)
    assert min(len(whole.regressions), len(whole.pain_points), len(whole.deltas)) > 2
    for order in (new_items, new_items[::-1]):
        cut = run_analyses(old_run, old_items[::-1], new_run, order, limit=2)
        assert cut.regressions == whole.regressions[:2]
        assert cut.pain_points == whole.pain_points[:2]
        assert cut.deltas == whole.deltas[:2]
        assert cut.totals == whole.totals
