"""A run as a point in a history (docs/history.md): the record a finished run leaves in its store,
what changed since the run before, a recorded run as a baseline, and the history as a table.

Records are the plain dicts ``engine.store.history`` keeps; this module makes and reads them and
never opens a store (the plugin and ``python -m pytest_weval history`` do, and hand the records
over). A run's per model figures are its roll-up's, the very numbers of ``summary.json``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_weval.report._fmt import fmt_score, fmt_signed, plural
from pytest_weval.report.baseline import Baseline, BaselineItem
from pytest_weval.report.rollup import Rollup, tally
from pytest_weval.report.weval_json import js_data
from pytest_weval.results import ItemResult, PointAssessment

NOISE_MARK = "*"

Record = dict[str, Any]


# ---------------------------------------------------------------- recording


def model_figures(rollup: Rollup) -> dict[str, dict[str, Any]]:
    """Per model: ``mean``, ``ci95`` and ``items``, as ``summary.json`` writes them."""
    figures = {}
    for model, t in rollup.by_model.items():
        shown = js_data(t.to_dict())
        figures[model] = {"mean": shown["mean"], "ci95": shown["ci95"], "items": shown["items"]}
    return figures


def _points(points: Iterable[PointAssessment]) -> list[dict[str, Any]]:
    return [
        {
            "text": p.key_point_text,
            "score": p.coverage_extent,
            "inverted": p.is_inverted,
            "error": p.error,
            "kind": p.kind,
        }
        for p in points
    ]


def item_record(result: ItemResult) -> Record:
    """One item as the history keeps it: its score and answer, and what rebuilding its place in
    the roll-up and pairing it with a later run need."""
    return {
        "nodeid": result.nodeid,
        "blueprint": result.blueprint_id,
        "prompt": result.prompt_id,
        "model": result.model_id,
        "score": result.score,
        "outcome": result.outcome,
        "answer": result.response,
        "detail": {
            "blueprintPath": result.blueprint_path,
            "effectiveModel": result.effective_model_id,
            "systemPrompt": result.system_prompt,
            "threshold": result.threshold,
            "promptWeight": result.prompt_weight,
            "promptLine": result.prompt_line,
            "source": result.source,
            "points": _points(result.points),
            "digest": result.content_digest,  # with the samples, read by --weval-repeat=auto
            "samples": result.sample_scores,
        },
    }


def judges_of(results: Iterable[ItemResult]) -> list[str]:
    """The judge models that gave a verdict in the run."""
    seen: set[str] = set()
    for r in results:
        for p in r.points:
            for verdict in p.individual_judgements or ():
                seen.add(verdict.judge_model_id)
    return sorted(seen)


def run_record(
    results: Sequence[ItemResult],
    rollup: Rollup,
    *,
    run_id: str,
    started: float,
    ended: float,
    host: str,
    commit: str | None = None,
    branch: str | None = None,
    judges: Sequence[str] = (),
) -> tuple[Record, list[Record]]:
    """The run and its items, as the history records them."""
    run = {
        "id": run_id,
        "started": started,
        "ended": ended,
        "commit": commit,
        "branch": branch,
        "host": host,
        "models": list(rollup.models),
        "judges": list(judges) or judges_of(results),
        "figures": model_figures(rollup),
    }
    items = [item_record(r) for r in sorted(results, key=lambda r: r.nodeid) if r.nodeid]
    return run, items


def result_of(item: Mapping[str, Any]) -> ItemResult:
    """A recorded item as an ``ItemResult`` again, as far as the roll-up needs one."""
    detail = item.get("detail") or {}
    return ItemResult(
        nodeid=item["nodeid"],
        blueprint_id=item["blueprint"],
        blueprint_path=detail.get("blueprintPath") or "",
        prompt_id=item["prompt"],
        prompt_line=detail.get("promptLine"),
        prompt_weight=detail.get("promptWeight"),
        model_id=item["model"],
        effective_model_id=detail.get("effectiveModel") or item["model"],
        system_prompt=detail.get("systemPrompt"),
        outcome=item["outcome"],
        score=item.get("score"),
        threshold=detail.get("threshold", 0.5),
        source=detail.get("source") or "blueprint",
        response=item.get("answer"),
    )


# ---------------------------------------------------------------- naming runs


def when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_label(run: Mapping[str, Any]) -> str:
    """``<id>, <start>, <branch>@<commit>``: how a recorded run is named to people."""
    parts = [str(run["id"]), when(run["started"])]
    commit = (run.get("commit") or "")[:10]
    if commit or run.get("branch"):
        parts.append(f"{run.get('branch') or ''}@{commit}" if run.get("branch") else commit)
    return ", ".join(parts)


def previous_run(
    runs: Sequence[Mapping[str, Any]], *, current_id: str, started: float, branch: str | None = None
) -> Mapping[str, Any] | None:
    """The newest run recorded before this one began (another run id; of ``branch`` if given)."""
    earlier = [
        run
        for run in runs
        if run["id"] != current_id and run["started"] <= started and (branch is None or run.get("branch") == branch)
    ]
    return earlier[-1] if earlier else None


# ---------------------------------------------------------------- what changed


@dataclasses.dataclass(frozen=True)
class Change:
    nodeid: str
    old: float
    new: float
    previous: Mapping[str, Any]  # the recorded item
    current: ItemResult


@dataclasses.dataclass(frozen=True)
class Changes:
    """The items whose score differs from the previous run's (both scored)."""

    previous: Mapping[str, Any]  # the previous run's record
    items: tuple[Change, ...]

    @property
    def better(self) -> int:
        return sum(1 for c in self.items if c.new > c.old)

    @property
    def worse(self) -> int:
        return sum(1 for c in self.items if c.new < c.old)

    def line(self) -> str:
        count = len(self.items)
        return (
            f"since the last run: {plural(count, 'item')} changed ({self.better} better, {self.worse} worse) "
            f"[run {run_label(self.previous)}]"
        )

    def to_dict(self) -> dict[str, Any]:
        return js_data(
            {
                "previousRun": self.previous["id"],
                "better": self.better,
                "worse": self.worse,
                "items": [{"nodeid": c.nodeid, "old": c.old, "new": c.new} for c in self.items],
            }
        )


def changes_since(
    previous: Mapping[str, Any], previous_items: Iterable[Mapping[str, Any]], results: Iterable[ItemResult]
) -> Changes:
    before = {item["nodeid"]: item for item in previous_items}
    found = []
    for r in sorted(results, key=lambda r: r.nodeid):
        old = before.get(r.nodeid)
        if old is None or old.get("score") is None or r.score is None:
            continue
        if float(old["score"]) != float(r.score):
            found.append(Change(r.nodeid, float(old["score"]), float(r.score), old, r))
    return Changes(previous=previous, items=tuple(found))


# ---------------------------------------------------------------- a recorded run as a baseline


def is_history_baseline(value: object) -> bool:
    """``--weval-baseline=last`` or ``last:<branch>``: the history's previous run, not a folder."""
    return isinstance(value, str) and (value == "last" or value.startswith("last:"))


def history_branch(value: str) -> str | None:
    """The branch of ``last:<branch>`` (None for ``last``)."""
    return value.partition(":")[2] or None if value.startswith("last:") else None


def baseline_of(run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> Baseline:
    """``--weval-baseline=last``: the recorded run as the paired gate's baseline."""
    found = []
    for item in items:
        detail = item.get("detail") or {}
        found.append(
            BaselineItem(
                blueprint_id=item["blueprint"],
                blueprint_path=detail.get("blueprintPath") or "",
                prompt_id=item["prompt"],
                model_id=item["model"],
                effective_model_id=detail.get("effectiveModel") or item["model"],
                system_prompt=detail.get("systemPrompt"),
                outcome=item["outcome"],
                score=item.get("score"),
                nodeid=item["nodeid"],
            )
        )
    return Baseline(
        directory=f"the history's run {run_label(run)}",
        items=tuple(found),
        run_label=str(run["id"]),
        timestamp=iso(run["started"]),
    )


# ---------------------------------------------------------------- the history as a table


def beyond_noise(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
    """The change of a model's mean is larger than the two runs' 95% intervals allow (taken as
    independent: the half widths add in quadrature). The paired test of --weval-baseline is the
    sharper one; this marks what deserves a look."""
    if not before or not after or before.get("mean") is None or after.get("mean") is None:
        return False
    if not before.get("ci95") or not after.get("ci95"):
        return False
    half = [(float(f["ci95"][1]) - float(f["ci95"][0])) / 2 for f in (before, after)]
    return abs(float(after["mean"]) - float(before["mean"])) > math.hypot(*half)


def history_rows(
    runs: Sequence[Mapping[str, Any]],
    items_of: Callable[[str], list[dict[str, Any]]],
    *,
    model: str | None = None,
    blueprint: str | None = None,
    last: int | None = None,
) -> list[dict[str, Any]]:
    """``history --json``'s runs, oldest first: each with its models' ``mean``, ``ci95`` and
    ``items`` (the run's own figures; with ``blueprint``, the same figures over that blueprint's
    items, by id or path)."""
    rows = []
    for run in runs:
        figures: dict[str, Any] = dict(run.get("figures") or {})
        if blueprint is not None:
            chosen = [
                result_of(item)
                for item in items_of(run["id"])
                if blueprint in (item["blueprint"], (item.get("detail") or {}).get("blueprintPath"))
            ]
            figures = {}
            for name in sorted({r.model_id for r in chosen}):
                t = tally(r for r in chosen if r.model_id == name)
                shown = js_data(t.to_dict())
                figures[name] = {"mean": shown["mean"], "ci95": shown["ci95"], "items": shown["items"]}
        if model is not None:
            figures = {name: f for name, f in figures.items() if name == model}
        if not figures:
            continue
        rows.append(
            {
                "id": run["id"],
                "started": iso(run["started"]),
                "ended": iso(run["ended"]),
                "commit": run.get("commit"),
                "branch": run.get("branch"),
                "host": run.get("host"),
                "judges": list(run.get("judges") or ()),
                "models": figures,
            }
        )
    return rows[-last:] if last else rows


def history_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Runs, oldest first; per model its mean and the change from the run before, marked when
    beyond noise."""
    if not rows:
        return ["no run recorded"]
    models = sorted({name for row in rows for name in row["models"]})
    cells: list[list[str]] = [["run", "started", "commit", *models]]
    last_seen: dict[str, Mapping[str, Any]] = {}
    marked = False
    for row in rows:
        line = [str(row["id"]), str(row["started"]).replace("T", " ").rstrip("Z"), (row.get("commit") or "")[:10]]
        for name in models:
            figure = row["models"].get(name)
            if figure is None:
                line.append("")
                continue
            text = fmt_score(figure.get("mean"))
            before = last_seen.get(name)
            if before is not None and before.get("mean") is not None and figure.get("mean") is not None:
                text += " " + fmt_signed(float(figure["mean"]) - float(before["mean"]))
                if beyond_noise(before, figure):
                    text += " " + NOISE_MARK
                    marked = True
            last_seen[name] = figure
            line.append(text)
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    if marked:
        lines.append(
            f"{NOISE_MARK} a change beyond noise: larger than the two runs' 95% intervals allow "
            "(--weval-baseline=last tests it item by item)"
        )
    return lines


# ---------------------------------------------------------------- the HTML report's view


@dataclasses.dataclass(frozen=True)
class HistoryView:
    """What the HTML report shows of the history: each model's means over the recorded runs and
    this one, oldest first, and the changes since the previous run."""

    trends: dict[str, list[float]]  # model -> means, oldest first (this run last)
    trend_runs: dict[str, list[str]]  # model -> the run ids of those means
    changes: Changes | None


def history_view(runs: Sequence[Mapping[str, Any]], current: Mapping[str, Any], changes: Changes | None) -> HistoryView:
    trends: dict[str, list[float]] = {}
    trend_runs: dict[str, list[str]] = {}
    for run in [*(r for r in runs if r["id"] != current["id"]), current]:
        for name, figure in (run.get("figures") or {}).items():
            if figure.get("mean") is None:
                continue
            trends.setdefault(name, []).append(figure["mean"])
            trend_runs.setdefault(name, []).append(str(run["id"]))
    return HistoryView(trends=trends, trend_runs=trend_runs, changes=changes)


__all__ = [
    "Change",
    "Changes",
    "HistoryView",
    "baseline_of",
    "beyond_noise",
    "changes_since",
    "history_branch",
    "history_rows",
    "history_table",
    "history_view",
    "is_history_baseline",
    "item_record",
    "model_figures",
    "previous_run",
    "result_of",
    "run_label",
    "run_record",
]
