"""The run's place in its store's history (docs/history.md), for the plugin at session end: read
the runs recorded before this one (for "since the last run" and ``--weval-baseline=last``), then
record this one. Once per run: on the xdist controller, and once per ``--weval-run-id`` however
many machines share it (the store keeps the first record of an id).

A history that cannot be read or written never fails the run: the terminal says why.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import secrets
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pytest_weval.engine.store.common import StoreError
from pytest_weval.plugin.settings import WevalSettings, samples_from_history
from pytest_weval.report.analyses import RunAnalyses, RunAnalysis
from pytest_weval.report.baseline import Baseline
from pytest_weval.report.finish import FinishedRun
from pytest_weval.report.history import (
    Changes,
    Earlier,
    baseline_of,
    changes_from,
    changes_since,
    compare_newest,
    earlier_runs,
    history_branch,
    history_view,
    is_history_baseline,
    item_record,
    newest_scores,
    recorded_order,
    run_figures,
    run_selections,
)
from pytest_weval.report.history_record import ItemRecord, RecordedHistory, RunRecord
from pytest_weval.results import Result
from pytest_weval.run.sampling import HISTORY_RUNS, Past

GIT_TIMEOUT_S = 10
DAMAGED_SAID = 5  # damaged records named one by one; beyond that, counted
# --weval-repeat=auto reads an item's results in the newest runs this many: enough that a few
# runs which skipped or left it out (-k, --weval-batch=submit) do not hide its older ones.
PAST_WINDOW = 4 * HISTORY_RUNS
# Where CI systems say the branch when the checkout is a detached HEAD.
_BRANCH_VARS = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BUILDKITE_BRANCH", "BRANCH_NAME")


def new_run_id(started: float) -> str:
    """A run id people can read and sort: its start in UTC and a few random letters."""
    return f"{dt.datetime.fromtimestamp(started, dt.timezone.utc):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def git_facts(folder: Path) -> tuple[str | None, str | None]:
    """(commit, branch) of the repository holding ``folder``, or Nones outside one."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() or None if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    if branch in (None, "HEAD"):
        branch = next((os.environ[name] for name in _BRANCH_VARS if os.environ.get(name)), None)
    return commit, branch


@dataclasses.dataclass
class RunHistory:
    """One run's dealings with its store's history."""

    settings: WevalSettings
    started: float
    run_id: str
    notes: list[str] = dataclasses.field(default_factory=list)  # said in the terminal summary
    _runs: list[RunRecord] | None = None
    _store: RecordedHistory | None = None
    _scores: dict[str | None, Earlier] = dataclasses.field(default_factory=dict)  # by branch, read once

    @classmethod
    def for_run(cls, settings: WevalSettings, started: float) -> RunHistory | None:
        """None when the run keeps no store (``--weval-cache=off``)."""
        if settings.cache_mode == "off":
            return None
        return cls(settings, started, settings.run_id_or(new_run_id(started)))

    @property
    def records(self) -> bool:
        """``ro`` reads the store and never writes it (committed recordings stay as they are)."""
        return self.settings.cache_mode in ("rw", "refresh")

    def _history(self) -> RecordedHistory:
        if self._store is None:
            self._store = RecordedHistory(self.settings.history())
        return self._store

    def _say(self, what: str, exc: Exception) -> None:
        self.notes.append(f"weval history: {what}: {exc}")

    def _say_damage(self) -> None:
        """One line per damaged record the reads skipped (a few, then a count), naming the fix."""
        damaged = self._store.damaged if self._store is not None else []
        for line in damaged[:DAMAGED_SAID]:
            self.notes.append(f"weval history: {line}")
        if len(damaged) > DAMAGED_SAID:
            self.notes.append(
                f"weval history: {len(damaged) - DAMAGED_SAID} more damaged records skipped "
                "(`python -m pytest_weval cache repair` removes them)"
            )

    def earlier(self) -> list[RunRecord]:
        """The runs recorded so far, oldest first, read once."""
        if self._runs is None:
            try:
                history = self._history()
                self._runs = history.runs() if history.exists() else []
            except StoreError as exc:
                self._say("cannot read the earlier runs", exc)
                self._runs = []
        return self._runs

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[ItemRecord]]:
        try:
            return self._history().items_of(run_ids)
        except StoreError as exc:
            self._say(f"cannot read the items of run {', '.join(run_ids)}", exc)
            return {}

    def items(self, run_id: str) -> list[ItemRecord]:
        return self.items_of([run_id]).get(run_id, [])

    def _newest_scores(self, results: Sequence[Result], branch: str | None = None) -> Earlier:
        """Each item's newest earlier score (docs/history.md); the baseline and the changes
        share one reading."""
        if branch not in self._scores:
            earlier = earlier_runs(self.earlier(), current_id=self.run_id, started=self.started, branch=branch)
            self._scores[branch] = newest_scores(earlier, self.items_of, (r.nodeid for r in results if r.nodeid))
        return self._scores[branch]

    def finish(self, run: FinishedRun, *, record: bool) -> FinishedRun:
        """Compare with the previous run, record this one (unless ``record`` is false: an
        interrupted run is no point of the history), and give the run with its changes and
        history view."""
        runs = self.earlier()
        analysis: RunAnalysis | None = None
        try:
            changes, analysis = self._compare(run.results)
            if changes is not None and changes.items:  # the page shows a changed item's answer
                whole = run.full.each(change.current for change in changes.items)
                changed = tuple(dataclasses.replace(c, current=r) for c, r in zip(changes.items, whole, strict=True))
                changes = dataclasses.replace(changes, items=changed)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # the history never fails a run
            self._say("cannot compare with the earlier runs", exc)
            changes = analysis = None
        commit, branch = git_facts(Path(self.settings.rootdir))
        current = run_figures(
            run.results,
            run.rollup,
            run_id=self.run_id,
            started=self.started,
            ended=time.time(),
            host=socket.gethostname(),
            commit=commit,
            branch=branch,
            judges=self.settings.recorded_judges(),
        )
        ordered = recorded_order(run.results)
        recorded = record and self.records
        if recorded:
            # each item with its answer, read back from the spool (the run kept none) as the
            # store writes it: the run's answers are never all in memory at once
            try:
                self._history().record(current, map(item_record, run.full.each(ordered)))
            except StoreError as exc:
                self._say("could not record this run", exc)
        try:
            view = history_view(
                runs,
                current,
                changes,
                lambda earlier: run_selections(earlier, self.items),
                analyses=self._analyses(analysis, run, current, ordered, answers=recorded),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._say("cannot draw the trends", exc)
            view = None
        self._say_damage()
        return dataclasses.replace(run, changes=changes, history=view)

    def _compare(self, results: Sequence[Result]) -> tuple[Changes | None, RunAnalysis | None]:
        """The changes since the earlier runs, and the analyses' regressions against the newest
        of them (docs/history.md). The newest run's items are read one at a time and each paired
        with this run's at once: of them only the changed items' records are kept (the page
        shows their answers); the few items that run did not score are looked for in the older
        runs, as ``newest_scores`` does. Read whole when ``--weval-baseline=last`` read them."""
        whole = self._scores.get(None)
        if whole is not None:
            changes = changes_since(whole, results)
            if whole.newest is None:
                return changes, None
            return changes, compare_newest(whole.newest, whole.newest_items, results)[1]
        earlier = earlier_runs(self.earlier(), current_id=self.run_id, started=self.started)
        if not earlier:
            return None, None
        newest = earlier[0]
        try:
            scored, analysis = compare_newest(newest, self._history().each_item(newest.id), results)
        except StoreError as exc:
            self._say(f"cannot read the items of run {newest.id}", exc)
            scored, analysis = {}, RunAnalysis(newest)
        missing = [r.nodeid for r in results if r.nodeid and r.nodeid not in scored]
        if missing and len(earlier) > 1:
            older = newest_scores(earlier[1:], self.items_of, missing)
            scored.update((nodeid, (run, item.score, item)) for nodeid, (run, item) in older.scored.items())
        return changes_from(newest, results, scored.get), analysis

    def _analyses(
        self,
        analysis: RunAnalysis | None,
        run: FinishedRun,
        current: RunRecord,
        ordered: Sequence[Result],
        *,
        answers: bool,
    ) -> RunAnalyses | None:
        """The history commands' analyses of this run for the page (docs/history.md, 'In the
        HTML report'): against the run recorded before it, which the changes read already;
        None when there is none. This run's items are the compact records' (no answers), made a
        blueprint at a time; a run that records itself shows its pain points' answers, as
        recorded, read back for those alone."""
        if analysis is None:
            return None
        by_blueprint: dict[str, list[Result]] = {}
        for result in ordered:
            by_blueprint.setdefault(result.blueprint_id, []).append(result)
        for results in by_blueprint.values():
            analysis.blueprint(current, [item_record(r) for r in results])
        analyses = analysis.analyses()
        if answers and analyses.pain_points:
            by_id = {r.nodeid: r for r in ordered}
            shown = analyses.pain_points
            for point, whole in zip(shown, run.full.each(by_id[p["nodeid"]] for p in shown), strict=True):
                point["answer"] = whole.response
        return analyses

    def baseline(self, setting: str, results: Sequence[Result]) -> tuple[Baseline | None, str | None]:
        """``--weval-baseline=last[:<branch>]``: each item's newest earlier score (of that
        branch), or why there is none."""
        if not is_history_baseline(setting):
            return None, None
        branch = history_branch(setting)
        try:
            earlier = self._newest_scores(results, branch)
            baseline = baseline_of(earlier) if earlier.newest is not None else None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self._say("cannot read the baseline", exc)
            baseline = None
        if baseline is None:
            where = f" of branch {branch}" if branch else ""
            return None, f"--weval-baseline={setting}: the history holds no earlier run{where}: nothing to compare with"
        return baseline, None


def past_samples(settings: WevalSettings) -> dict[str, tuple[Past, ...]]:
    """Under ``--weval-repeat=auto``, each item's newest recorded results (as many as the
    sampling rule reads), newest first, by node id: the history an item may start from one
    sample on (docs/sampling.md, 'Starting from the history'). A run that skipped an item or did
    not select it (``--weval-batch=submit``, ``-k``) is no result of it: the item's older runs
    count instead, among the newest ``PAST_WINDOW`` runs. Nothing when there is no history to
    read, or it cannot be read (the items then sample as without one)."""
    if not samples_from_history(settings):
        return {}
    found: dict[str, list[Past]] = {}
    try:
        history = RecordedHistory(settings.history())
        if not history.exists():
            return {}
        newest = [run.id for run in reversed(history.runs()[-PAST_WINDOW:])]
        for start in range(0, len(newest), HISTORY_RUNS):
            chunk = newest[start : start + HISTORY_RUNS]
            items_of = history.items_of(chunk)
            for run_id in chunk:
                for item in items_of.get(run_id, ()):
                    past = found.setdefault(item.nodeid, [])
                    if item.outcome == "skipped" or len(past) >= HISTORY_RUNS:
                        continue
                    scores = tuple(item.detail.samples or (() if item.score is None else (item.score,)))
                    past.append(Past(item.detail.digest, item.outcome, scores))
    except StoreError:
        return {}
    return {nodeid: tuple(past) for nodeid, past in found.items() if past}
