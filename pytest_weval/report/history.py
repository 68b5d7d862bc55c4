"""A run as a point in a history (docs/history.md): the record a finished run leaves in its store,
what changed since the run before, a recorded run as a baseline, and the history as a table.

Records are the typed ``RunRecord`` and ``ItemRecord`` of ``report/history_record.py`` (the one
reader of what ``engine.store.history`` keeps); this module makes and reads them and never opens
a store (the plugin and ``python -m pytest_weval history`` do, and hand the records over). A
run's per model figures are its roll-up's, the very numbers of ``summary.json``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_weval.report._fmt import fmt_score, fmt_signed, plural
from pytest_weval.report.analyses import RunAnalyses, RunAnalysis
from pytest_weval.report.baseline import Baseline, BaselineItem
from pytest_weval.report.history_record import ItemDetail, ItemRecord, ModelFigures, PointRecord, RunRecord
from pytest_weval.report.rollup import Rollup, tally
from pytest_weval.report.weval_json import js_data
from pytest_weval.results import ItemResult, Point, Result

NOISE_MARK = "*"


# ---------------------------------------------------------------- recording


FIGURES = ("mean", "ci95", "items")  # what summary.json says of a model, and `history --json` too


def selection_digest(nodeids: Iterable[str]) -> str:
    """Which items a model's mean is over, in a few characters: two runs' means compare like
    with like only when their selections match (a ``-k`` run's mean is over other items)."""
    return hashlib.sha256("\n".join(sorted(set(nodeids))).encode()).hexdigest()[:16]


def selections(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Per model, the selection digest of a run's (model, node id) pairs."""
    by_model: dict[str, list[str]] = {}
    for model, nodeid in items:
        by_model.setdefault(model, []).append(nodeid)
    return {model: selection_digest(nodeids) for model, nodeids in by_model.items()}


def item_selections(items: Iterable[ItemRecord]) -> dict[str, str]:
    """Per model, the selection digest of a run's recorded items."""
    return selections((item.model, item.nodeid) for item in items)


def _figures(t: Any, selection: str | None) -> ModelFigures:
    shown = js_data(t.to_dict())
    return ModelFigures(**{key: shown[key] for key in FIGURES}, selection=selection)


def model_figures(rollup: Rollup, results: Iterable[Result] = ()) -> dict[str, ModelFigures]:
    """Per model: ``mean``, ``ci95`` and ``items``, as ``summary.json`` writes them, and the
    ``selection`` of items they are over (the history's, to compare like with like)."""
    chosen = selections((r.model_id, r.nodeid) for r in results if r.nodeid)
    return {model: _figures(t, chosen.get(model)) for model, t in rollup.by_model.items()}


def _points(points: Iterable[Point]) -> list[PointRecord]:
    return [
        PointRecord(text=p.key_point_text, score=p.coverage_extent, inverted=p.is_inverted, error=p.error, kind=p.kind)
        for p in points
    ]


def item_record(result: Result) -> ItemRecord:
    """One item as the history keeps it: its score and answer, and what rebuilding its place in
    the roll-up and pairing it with a later run need."""
    return ItemRecord(
        nodeid=result.nodeid,
        blueprint=result.blueprint_id,
        prompt=result.prompt_id,
        model=result.model_id,
        score=result.score,
        outcome=result.outcome,
        answer=result.response,
        detail=ItemDetail(
            blueprint_path=result.blueprint_path,
            effective_model=result.effective_model_id,
            system_prompt=result.system_prompt,
            threshold=result.threshold,
            prompt_weight=result.prompt_weight,
            prompt_line=result.prompt_line,
            source=result.source,
            points=_points(result.points),
            digest=result.content_digest,
            samples=list(result.sample_scores),
        ),
    )


def judges_of(results: Iterable[Result]) -> list[str]:
    """The judge models that gave a verdict in the run."""
    seen: set[str] = set()
    for r in results:
        for p in r.points:
            for verdict in p.individual_judgements or ():
                seen.add(verdict.judge_model_id)
    return sorted(seen)


def run_figures(
    results: Sequence[Result],
    rollup: Rollup,
    *,
    run_id: str,
    started: float,
    ended: float,
    host: str,
    commit: str | None = None,
    branch: str | None = None,
    judges: Sequence[str] = (),
) -> RunRecord:
    """The run as the history records it, without its items (``recorded_order`` gives those)."""
    return RunRecord(
        id=run_id,
        started=started,
        ended=ended,
        commit=commit,
        branch=branch,
        host=host,
        models=list(rollup.models),
        judges=list(judges) or judges_of(results),
        figures=model_figures(rollup, results),
    )


def recorded_order(results: Iterable[Result]) -> list[Result]:
    """The results the history records an item of (those with a node id), in its order: by
    node id. ``item_record`` of each is the item recorded."""
    return sorted((r for r in results if r.nodeid), key=lambda r: r.nodeid)


def result_of(item: ItemRecord) -> ItemResult:
    """A recorded item as an ``ItemResult`` again, as far as the roll-up needs one."""
    detail = item.detail
    return ItemResult(
        nodeid=item.nodeid,
        blueprint_id=item.blueprint,
        blueprint_path=detail.blueprint_path,
        prompt_id=item.prompt,
        prompt_line=detail.prompt_line,
        prompt_weight=detail.prompt_weight,
        model_id=item.model,
        effective_model_id=item.effective_model,
        system_prompt=detail.system_prompt,
        outcome=item.outcome,
        score=item.score,
        threshold=detail.threshold,
        source=detail.source,
        response=item.answer,
    )


# ---------------------------------------------------------------- naming runs


def when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_label(run: RunRecord) -> str:
    """``<id>, <start>, <branch>@<commit>``: how a recorded run is named to people."""
    parts = [run.id, when(run.started)]
    commit = (run.commit or "")[:10]
    if commit or run.branch:
        parts.append(f"{run.branch}@{commit}" if run.branch else commit)
    return ", ".join(parts)


def earlier_runs(
    runs: Sequence[RunRecord], *, current_id: str, started: float, branch: str | None = None
) -> list[RunRecord]:
    """The runs recorded before this one began (another run id; of ``branch`` if given), newest first."""
    return [
        run
        for run in reversed(runs)
        if run.id != current_id and run.started <= started and (branch is None or run.branch == branch)
    ]


@dataclasses.dataclass(frozen=True)
class Earlier:
    """Each item's newest scored result in the earlier runs (docs/history.md, 'Which earlier
    result an item is compared with'): a run that skipped, errored on or did not select an item
    (``-k``, ``--lf``, ``--weval-batch=submit``) hides no older score of it."""

    scored: dict[str, tuple[RunRecord, ItemRecord]]  # node id -> (run, item)
    unscored: dict[str, tuple[RunRecord, ItemRecord]]  # never scored: the newest record
    newest: RunRecord | None  # the newest earlier run
    newest_items: tuple[ItemRecord, ...]  # and its items

    def runs_used(self) -> list[RunRecord]:
        """The runs the scores come from, newest first."""
        seen: dict[str, RunRecord] = {}
        for run, _ in self.scored.values():
            seen.setdefault(run.id, run)
        return sorted(seen.values(), key=lambda run: (run.started, run.id), reverse=True)


def newest_scores(
    earlier: Sequence[RunRecord],
    items_of: Callable[[Sequence[str]], Mapping[str, Sequence[ItemRecord]]],
    wanted: Iterable[str],
    *,
    chunk: int = 8,
) -> Earlier:
    """Read ``earlier`` (newest first) until every node id of ``wanted`` has a score, or the
    runs are all read: one run first (the usual case: the run before covered this one), then
    twice as many each time, up to ``chunk`` runs a read."""
    missing = set(wanted)
    scored: dict[str, tuple[RunRecord, ItemRecord]] = {}
    unscored: dict[str, tuple[RunRecord, ItemRecord]] = {}
    newest_items: tuple[ItemRecord, ...] = ()
    start, size = 0, 1
    while start < len(earlier) and (missing or not start):
        runs = earlier[start : start + size]
        found = items_of([run.id for run in runs])
        for number, run in enumerate(runs):
            items = found.get(run.id) or ()
            if start == 0 and number == 0:
                newest_items = tuple(items)
            for item in items:
                nodeid = item.nodeid
                if nodeid not in missing:
                    continue
                if item.scored:
                    scored[nodeid] = (run, item)
                    missing.discard(nodeid)
                    unscored.pop(nodeid, None)
                else:
                    unscored.setdefault(nodeid, (run, item))
        start, size = start + size, min(chunk, size * 2)
    return Earlier(scored, unscored, earlier[0] if earlier else None, newest_items)


# ---------------------------------------------------------------- what changed


@dataclasses.dataclass(frozen=True)
class Change:
    nodeid: str
    old: float
    new: float
    previous: ItemRecord  # the recorded item
    current: Result
    run: RunRecord | None = None  # the run that recorded ``previous``


@dataclasses.dataclass(frozen=True)
class Changes:
    """The items whose score differs from their newest earlier score (both scored)."""

    previous: RunRecord  # the newest run the earlier scores come from
    items: tuple[Change, ...]
    compared: int = 0  # items of this run scored in both
    older: int = 0  # of those, how many were last scored before ``previous``
    scored_now: int = 0  # items this run scored

    @property
    def better(self) -> int:
        return sum(1 for c in self.items if c.new > c.old)

    @property
    def worse(self) -> int:
        return sum(1 for c in self.items if c.new < c.old)

    def line(self) -> str:
        if not self.compared:
            why = (
                "this run scored no item" if not self.scored_now else "no item of this run was scored by an earlier run"
            )
            return f"since the last run: {why}, nothing to compare [run {run_label(self.previous)}]"
        older = f"; {self.older} of them last scored in older runs" if self.older else ""
        return (
            f"since the last run: {self.count_text()} ({self.better} better, {self.worse} worse) "
            f"[run {run_label(self.previous)}{older}]"
        )

    def count_text(self) -> str:
        changed = len(self.items)
        return f"{changed} of {plural(self.compared, 'item')} changed"

    def to_dict(self) -> dict[str, Any]:
        return js_data(
            {
                "previousRun": self.previous.id,
                "compared": self.compared,
                "better": self.better,
                "worse": self.worse,
                "items": [
                    {"nodeid": c.nodeid, "old": c.old, "new": c.new, "run": (c.run or self.previous).id}
                    for c in self.items
                ],
            }
        )


def changes_since(earlier: Earlier, results: Iterable[Result]) -> Changes | None:
    """Each scored item of this run against its newest earlier score; None with no earlier run."""
    if earlier.newest is None:
        return None

    def scored(nodeid: str) -> EarlierScore | None:
        found = earlier.scored.get(nodeid)
        return None if found is None else (found[0], found[1].score, found[1])

    return changes_from(earlier.newest, results, scored)


# An item's newest earlier score: the run, the score, and the record (needed, and kept by a
# reader that streams the runs, only where the score differs from this run's: a change).
EarlierScore = tuple[RunRecord, "float | int | None", "ItemRecord | None"]


def changed(result: Result, score: float | int | None) -> bool:
    """This run's ``result`` is scored and its score differs from the earlier ``score``."""
    return (
        result.score is not None
        and result.outcome in ("passed", "failed")
        and score is not None
        and float(score) != float(result.score)
    )


def changes_from(newest: RunRecord, results: Iterable[Result], scored: Callable[[str], EarlierScore | None]) -> Changes:
    """``changes_since`` with each item's newest earlier score from ``scored``."""
    found = []
    compared = scored_now = 0
    runs: dict[str, RunRecord] = {}
    for r in sorted(results, key=lambda r: r.nodeid):
        if r.score is None or r.outcome not in ("passed", "failed"):
            continue
        scored_now += 1
        run, old_score, old = scored(r.nodeid) or (None, None, None)
        if run is None or old_score is None:  # the earlier scores are of scored items only
            continue
        compared += 1
        runs[r.nodeid] = run
        if changed(r, old_score):
            assert old is not None, r.nodeid
            found.append(Change(r.nodeid, float(old_score), float(r.score), old, r, run))
    used = sorted(runs.values(), key=lambda run: (run.started, run.id))
    previous = used[-1] if used else newest
    older = sum(1 for run in runs.values() if run.id != previous.id)
    return Changes(previous=previous, items=tuple(found), compared=compared, older=older, scored_now=scored_now)


def compare_newest(
    newest: RunRecord, items: Iterable[ItemRecord], results: Sequence[Result]
) -> tuple[dict[str, EarlierScore], RunAnalysis]:
    """One pass over the ``items`` of ``newest``, the newest earlier run, as they come: each is
    paired with this run's result of its node id at once, for the changes (``changes_from``
    reads the scores found) and the analyses' regressions (the ``RunAnalysis``, to which this
    run's items are then given a blueprint at a time). Of the earlier records only those of
    changed items are kept (the page shows their answers): a run's items are read from the
    store one at a time and never all held, whatever their answers' length."""
    now = {r.nodeid: r for r in results if r.nodeid}
    scored: dict[str, EarlierScore] = {}
    analysis = RunAnalysis(newest)
    for item in items:
        result = now.get(item.nodeid)
        if result is None:
            continue
        if item.scored:
            scored[item.nodeid] = (newest, item.score, item if changed(result, item.score) else None)
        if not _same_scores(item, result):  # else nothing moved: no regression to look for
            analysis.pair(item, item_record(result))
    return scored, analysis


def _same_scores(item: ItemRecord, result: Result) -> bool:
    """``result`` scored as the earlier ``item`` did: the same score, the same points with the
    same scores and errors (what ``analyses.moves`` compares)."""
    points = item.detail.points
    now: Sequence[Point] = result.points
    return (
        item.score == result.score
        and len(points) == len(now)
        and all(
            old.text == new.key_point_text and old.score == new.coverage_extent and old.error == new.error
            for old, new in zip(points, now)
        )
    )


# ---------------------------------------------------------------- a recorded run as a baseline


def is_history_baseline(value: object) -> bool:
    """``--weval-baseline=last`` or ``last:<branch>``: the history's newest scores, not a folder."""
    return isinstance(value, str) and (value == "last" or value.startswith("last:"))


def history_branch(value: str) -> str | None:
    """The branch of ``last:<branch>`` (None for ``last``)."""
    return value.partition(":")[2] or None if value.startswith("last:") else None


def _baseline_item(item: ItemRecord) -> BaselineItem:
    return BaselineItem(
        blueprint_id=item.blueprint,
        blueprint_path=item.detail.blueprint_path,
        prompt_id=item.prompt,
        model_id=item.model,
        effective_model_id=item.effective_model,
        system_prompt=item.detail.system_prompt,
        outcome=item.outcome,
        score=item.score,
        nodeid=item.nodeid,
    )


def baseline_of(earlier: Earlier) -> Baseline:
    """``--weval-baseline=last``: each item's newest earlier score as the paired gate's
    baseline; items that no earlier run scored come as their newest record (said unpaired,
    with why), and the newest run's items this run lacks as "not in this run"."""
    chosen: dict[str, ItemRecord] = {nodeid: item for nodeid, (_, item) in earlier.unscored.items()}
    chosen.update((nodeid, item) for nodeid, (_, item) in earlier.scored.items())
    for item in earlier.newest_items:
        chosen.setdefault(item.nodeid, item)
    used = earlier.runs_used() or ([earlier.newest] if earlier.newest is not None else [])
    assert used, "a baseline needs an earlier run"
    newest = used[0]
    if len(used) == 1:
        name = f"run {run_label(newest)} from the history"
    else:
        older = sum(1 for run, _ in earlier.scored.values() if run.id != newest.id)
        name = (
            f"runs {run_label(newest)} and {len(used) - 1} older from the history "
            f"(each item's newest score; {plural(older, 'item')} from the older runs)"
        )
    return Baseline(
        directory=name,
        items=tuple(_baseline_item(item) for _, item in sorted(chosen.items())),
        run_label=newest.id,
        timestamp=iso(newest.started),
    )


# ---------------------------------------------------------------- the history as a table


def _half_width(figure: ModelFigures) -> float | None:
    low, high = figure.ci95 or (None, None)
    return None if low is None or high is None else (float(high) - float(low)) / 2


def beyond_noise(before: ModelFigures | None, after: ModelFigures | None) -> bool:
    """The change of a model's mean is larger than the two runs' 95% intervals allow (taken as
    independent: the half widths add in quadrature). The paired test of --weval-baseline is the
    sharper one; this marks what deserves a look."""
    if before is None or after is None or before.mean is None or after.mean is None:
        return False
    old, new = _half_width(before), _half_width(after)
    if old is None or new is None:
        return False
    return abs(float(after.mean) - float(before.mean)) > math.hypot(old, new)


def run_selections(run: RunRecord, items_of: Callable[[str], Sequence[ItemRecord]]) -> dict[str, str]:
    """Per model, which items the run's means are over: recorded with its figures, or (a run
    recorded before the figures said it) read from its items."""
    said = {name: f.selection for name, f in run.figures.items() if f.selection is not None}
    if len(said) == len(run.figures):
        return said
    return {**item_selections(items_of(run.id)), **said}


@dataclasses.dataclass(frozen=True)
class HistoryRow:
    """A run as ``history`` shows it: its facts and, per model, its figures over the items asked
    for, with the ``selection`` they are over (None when unknown)."""

    run: RunRecord
    figures: dict[str, ModelFigures]

    def to_dict(self) -> dict[str, Any]:
        """The run as ``history --json`` writes it."""
        return {
            "id": self.run.id,
            "started": iso(self.run.started),
            "ended": iso(self.run.ended),
            "commit": self.run.commit,
            "branch": self.run.branch,
            "host": self.run.host,
            "judges": list(self.run.judges),
            "models": {
                name: f.model_dump(exclude={"selection"}) | {"selection": f.selection}
                for name, f in self.figures.items()
            },
        }


def _blueprint_figures(items: Sequence[ItemRecord], blueprint: str) -> dict[str, ModelFigures]:
    """A run's figures over the items of one blueprint (by id or path)."""
    recorded = [item for item in items if blueprint in (item.blueprint, item.detail.blueprint_path)]
    chosen = [result_of(item) for item in recorded]
    chosen_selections = item_selections(recorded)
    return {
        name: _figures(tally(r for r in chosen if r.model_id == name), chosen_selections[name])
        for name in sorted({r.model_id for r in chosen})
    }


def history_rows(
    runs: Sequence[RunRecord],
    items_of: Callable[[str], Sequence[ItemRecord]],
    *,
    model: str | None = None,
    blueprint: str | None = None,
    last: int | None = None,
) -> list[HistoryRow]:
    """``history --json``'s runs, oldest first: each with its models' ``mean``, ``ci95``,
    ``items`` (the run's own figures; with ``blueprint``, the same figures over that blueprint's
    items, by id or path) and ``selection`` (which items those are over)."""
    rows = []
    for run in runs:
        if blueprint is not None:
            figures = _blueprint_figures(items_of(run.id), blueprint)
        else:
            chosen_selections = run_selections(run, items_of)
            figures = {
                name: figure.model_copy(update={"selection": chosen_selections.get(name)})
                for name, figure in run.figures.items()
            }
        if model is not None:
            figures = {name: f for name, f in figures.items() if name == model}
        if figures:
            rows.append(HistoryRow(run, figures))
    return rows[-last:] if last else rows


def history_table(rows: Sequence[HistoryRow]) -> list[str]:
    """Runs, oldest first; per model its mean and the change from the newest earlier run over
    the same items (like with like: a ``-k`` run is compared with none but its own kind),
    marked when beyond noise."""
    if not rows:
        return ["no run recorded"]
    models = sorted({name for row in rows for name in row.figures})
    cells: list[list[str]] = [["run", "started", "commit", *models]]
    last_seen: dict[tuple[str, str | None], ModelFigures] = {}
    seen_model: set[str] = set()
    marked = unlike = False
    for row in rows:
        line = [row.run.id, iso(row.run.started).replace("T", " ").rstrip("Z"), (row.run.commit or "")[:10]]
        for name in models:
            figure = row.figures.get(name)
            if figure is None:
                line.append("")
                continue
            text = fmt_score(figure.mean)
            key = (name, figure.selection)
            before = last_seen.get(key)
            if before is not None and before.mean is not None and figure.mean is not None:
                text += " " + fmt_signed(float(figure.mean) - float(before.mean))
                if beyond_noise(before, figure):
                    text += " " + NOISE_MARK
                    marked = True
            elif name in seen_model and figure.mean is not None:
                text += f" ({plural(int(figure.items or 0), 'item')})"
                unlike = True
            if figure.mean is not None:
                last_seen[key] = figure
                seen_model.add(name)
            line.append(text)
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    if marked:
        lines.append(
            f"{NOISE_MARK} a change beyond noise: larger than the two runs' 95% intervals allow "
            "(--weval-baseline=last tests it item by item)"
        )
    if unlike:
        lines.append(
            "(N items): a mean over other items than every earlier run's (-k, --lf, a changed suite): "
            "no change is shown against a different selection"
        )
    return lines


# ---------------------------------------------------------------- the HTML report's view


@dataclasses.dataclass(frozen=True)
class HistoryView:
    """What the HTML report shows of the history: the means of each model of this run over the
    recorded runs of the same selection of items and this one, oldest first, and the changes
    since the earlier runs."""

    trends: dict[str, list[float]]  # model -> means, oldest first (this run last)
    trend_runs: dict[str, list[str]]  # model -> the run ids of those means
    changes: Changes | None
    analyses: RunAnalyses | None = None  # regressions, pain points, deltas: when an earlier run exists


def history_view(
    runs: Sequence[RunRecord],
    current: RunRecord,
    changes: Changes | None,
    selections_of: Callable[[RunRecord], Mapping[str, str]] = lambda run: {},
    analyses: RunAnalyses | None = None,
) -> HistoryView:
    """Like with like: a model's trend holds the earlier runs whose mean is over the very items
    of this run's (``selections_of`` gives a run's, per model), and only models of this run."""
    trends: dict[str, list[float]] = {}
    trend_runs: dict[str, list[str]] = {}
    now = {name: figure for name, figure in current.figures.items() if figure.mean is not None and figure.selection}
    for run in runs:
        if run.id == current.id or not any(name in run.figures for name in now):
            continue
        chosen = selections_of(run)
        for name, figure in run.figures.items():
            if name not in now or figure.mean is None or chosen.get(name) != now[name].selection:
                continue
            trends.setdefault(name, []).append(figure.mean)
            trend_runs.setdefault(name, []).append(run.id)
    for name, figure in now.items():
        if figure.mean is not None:
            trends.setdefault(name, []).append(figure.mean)
            trend_runs.setdefault(name, []).append(current.id)
    return HistoryView(trends=trends, trend_runs=trend_runs, changes=changes, analyses=analyses)


__all__ = [
    "Change",
    "Changes",
    "Earlier",
    "HistoryRow",
    "HistoryView",
    "baseline_of",
    "beyond_noise",
    "changed",
    "changes_from",
    "changes_since",
    "compare_newest",
    "earlier_runs",
    "history_branch",
    "history_rows",
    "history_table",
    "history_view",
    "is_history_baseline",
    "item_record",
    "model_figures",
    "newest_scores",
    "recorded_order",
    "result_of",
    "run_figures",
    "run_label",
]
