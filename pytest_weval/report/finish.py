"""The end of a run, once: from its item results to its roll-up, gates and files.

The plugin calls ``finish_run`` at session end, and ``python -m pytest_weval merge`` calls it on
the records of several ``--weval-out`` folders, so a merged folder holds exactly what one run
over every shard writes (``minScore`` and ``baseline`` included): the gates a run was held to
are kept in its record (``RunGates``, ``.weval/run.json``) and applied again to the merged items.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest_weval.defaults as defaults
from pytest_weval.blueprint.model import Blueprint
from pytest_weval.report.agent_results import write_agent_results
from pytest_weval.report.baseline import (
    Baseline,
    BaselineError,
    Comparison,
    compare,
    read_baseline,
    regression_lines,
)
from pytest_weval.report.facts import RunFacts
from pytest_weval.report.flaky import flaky_gate_lines
from pytest_weval.report.gates import check_min_score
from pytest_weval.report.history import Changes, HistoryView, is_history_baseline
from pytest_weval.report.promptfoo_json import write_promptfoo_results
from pytest_weval.report.rollup import Rollup, build_rollup
from pytest_weval.report.run_record import MergeError, describe, identity, read_run_record, substance, write_run_record
from pytest_weval.report.spool import FullResults
from pytest_weval.report.weval_json import write_outputs
from pytest_weval.results import ItemResult, Result, Usage


@dataclasses.dataclass(frozen=True)
class RunGates:
    """What a run's results were held to as a whole (docs/statistics.md)."""

    min_score: float | None = None  # --weval-min-score
    baseline: str | None = None  # --weval-baseline: the earlier run's folder
    alpha: float = defaults.ALPHA  # --weval-alpha
    max_drop: float = defaults.MAX_DROP  # --weval-max-drop
    fail_flaky: bool = False  # --weval-fail-flaky

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunGates:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in fields})


@dataclasses.dataclass(frozen=True)
class FinishedRun:
    """One view of a finished run, which every output is rendered from."""

    results: Sequence[Result]  # kept or whole: what the roll-up, gates and terminal read
    blueprints: Mapping[str, Blueprint]  # by ItemResult.blueprint_path
    usage: Mapping[str, Usage]
    rollup: Rollup
    gates: RunGates
    gate_lines: list[str]  # --weval-min-score failures
    comparison: Comparison | None
    regression_lines: list[str]  # --weval-baseline failures
    flaky_lines: list[str] = dataclasses.field(default_factory=list)  # --weval-fail-flaky failures
    not_run: int | None = None  # the run was stopped early (Ctrl-C, SIGTERM, -x): selected items that never ran
    # the store's history (docs/history.md), set by the plugin; merge reads no history
    changes: Changes | None = None
    history: HistoryView | None = None
    # the results' texts, read back a blueprint at a time by the files written at the end
    full: FullResults = dataclasses.field(default_factory=FullResults)

    @property
    def failed(self) -> bool:
        """A session gate failed (each item was still judged on its own threshold)."""
        return bool(self.gate_lines or self.regression_lines or self.flaky_lines)


def finish_run(
    results: Sequence[Result],
    blueprints: Mapping[str, Blueprint],
    usage: Mapping[str, Usage],
    gates: RunGates,
    *,
    baseline: Baseline | None = None,
    not_run: int | None = None,
    full: FullResults | None = None,
) -> FinishedRun:
    """Roll the results up and apply the gates. ``baseline`` is ``gates.baseline`` already read
    (the plugin reads it before anything runs, so a folder that cannot be read stops the run
    first); read here when not given."""
    rollup = build_rollup(results, usage=usage or None)
    gate_lines = check_min_score(rollup, gates.min_score) if gates.min_score is not None else []
    if baseline is None and gates.baseline is not None:
        if is_history_baseline(gates.baseline):
            raise BaselineError(f"{gates.baseline} names a run of the store's history, which only pytest reads")
        baseline = read_baseline(gates.baseline)
    comparison = None
    if baseline is not None:
        comparison = compare(results, baseline, alpha=gates.alpha, max_drop=gates.max_drop)
    return FinishedRun(
        results=results,
        blueprints=blueprints,
        usage=usage,
        rollup=rollup,
        gates=gates,
        gate_lines=gate_lines,
        comparison=comparison,
        regression_lines=regression_lines(comparison) if comparison is not None else [],
        flaky_lines=flaky_gate_lines(results) if gates.fail_flaky else [],
        not_run=not_run,
        full=full if full is not None else FullResults(),
    )


def write_run_files(
    run: FinishedRun,
    *,
    out_dir: str | os.PathLike[str] | None = None,
    html_path: str | os.PathLike[str] | None = None,
    facts: RunFacts | None = None,
) -> list[Path]:
    """``--weval-out`` (comparison files, ``summary.json``, agent results, the run's record) and
    ``--weval-html``; returns the paths written."""
    written: list[Path] = []
    # The page's blueprint blocks are made as the comparison files read each blueprint's whole
    # results, which are then read once for both (they are small: the page is compact).
    blocks: dict[str, str] | None = None
    if out_dir is not None:
        each_blueprint = None
        if html_path is not None:
            blocks = {}
            each_blueprint = _page_blocks(run, blocks)
        written += write_outputs(
            out_dir,
            run.blueprints,
            run.results,
            rollup=run.rollup,
            min_score=run.gates.min_score,
            gate_lines=run.gate_lines if run.gates.min_score is not None else None,
            comparison=run.comparison,
            not_run=run.not_run,
            changes=run.changes.to_dict() if run.changes is not None else None,
            full=run.full,
            each_blueprint=each_blueprint,
        )
        written += write_agent_results(out_dir, run.results, full=run.full)
        written += write_promptfoo_results(out_dir, run.results)
        # what `python -m pytest_weval merge` rebuilds every file from
        write_run_record(
            out_dir, run.blueprints, run.results, run.usage, gates=json.dumps(run.gates.to_dict()), full=run.full
        )
    if html_path is not None:
        from pytest_weval.report.html import write_html

        written.append(
            write_html(
                html_path,
                run.blueprints,
                run.results,
                rollup=run.rollup,
                facts=facts,
                comparison=run.comparison,
                history=run.history,
                full=run.full,
                blocks=blocks,
            )
        )
    return written


def _page_blocks(run: FinishedRun, blocks: dict[str, str]) -> Callable[[str, Sequence[ItemResult]], None]:
    """What adds a blueprint's block of the HTML page to ``blocks`` from its whole results."""
    from pytest_weval.report.html import blueprint_block

    numbers = {path: i for i, path in enumerate(sorted({r.blueprint_path for r in run.results}))}

    def add(path: str, results: Sequence[ItemResult]) -> None:
        rollup = run.rollup.blueprints.get(path)
        if rollup is not None:
            blocks[path] = blueprint_block(numbers[path], path, results, rollup, run.blueprints.get(path))

    return add


def merge_outputs(dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> list[Path]:
    """Combine the ``--weval-out`` folders ``dirs`` into ``out`` (the files one run over all of
    them writes). Raises ``MergeError``; writes nothing then."""
    if not dirs:
        raise MergeError("no folder to merge")
    records = [read_run_record(d) for d in dirs]
    results: dict[str, tuple[ItemResult, Path]] = {}
    blueprints: dict[str, tuple[Blueprint, Path]] = {}
    usage: dict[str, Usage] = {}
    for record in records:
        for result in record.results:
            key = identity(result)
            seen = results.get(key)
            if seen is None:
                results[key] = (result, record.folder)
            elif substance(seen[0]) != substance(result):
                raise MergeError(
                    f"conflicting results for {key}: {seen[1]} has {describe(seen[0])}, "
                    f"{record.folder} has {describe(result)}"
                )
        for path, blueprint in record.blueprints.items():
            known = blueprints.get(path)
            if known is None:
                blueprints[path] = (blueprint, record.folder)
            elif known[0].content_hash != blueprint.content_hash:
                raise MergeError(
                    f"blueprint {path} differs between {known[1]} and {record.folder} (runs of different versions)"
                )
        for model, used in record.usage.items():
            usage.setdefault(model, Usage()).add(used)
    gates = {RunGates.from_dict(record.gates) for record in records}
    if len(gates) > 1:
        raise MergeError(
            "the folders were written by runs held to different gates (--weval-min-score, --weval-baseline)"
        )
    merged = [result for result, _ in results.values()]
    by_path = {path: blueprint for path, (blueprint, _) in blueprints.items()}
    try:
        run = finish_run(merged, by_path, usage, gates.pop())
    except BaselineError as exc:
        raise MergeError(f"--weval-baseline of the merged runs: {exc}") from None
    return write_run_files(run, out_dir=out)
