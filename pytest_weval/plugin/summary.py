"""The run's end, said once (on the xdist controller, or in a plain run): the roll-up and the
session gates (``report.finish``), the history's comparison and record (``history.py``), the
output files, the exit status, and the terminal summary."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_weval.files import each_file_tried
from pytest_weval.plugin.blueprint_paths import uncollected_hints
from pytest_weval.plugin.history import RunHistory
from pytest_weval.plugin.item_results import ItemResults
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.run_state import Blueprints, EngineTally, RunInputs, RunOutputs
from pytest_weval.plugin.running import was_interrupted
from pytest_weval.plugin.settings import WevalSettings, options_in_effect
from pytest_weval.plugin.similarity import embed_answers
from pytest_weval.plugin.teardown_index import index_teardown_reports
from pytest_weval.report._fmt import plural, visible
from pytest_weval.report.baseline import Baseline
from pytest_weval.report.facts import RunFacts
from pytest_weval.report.finish import FinishedRun, RunGates, finish_run
from pytest_weval.report.terminal import render_summary


@dataclasses.dataclass(frozen=True)
class RunParts:
    """What the run's end reads, made by the other concerns."""

    inputs: RunInputs
    results: ItemResults
    blueprints: Blueprints
    tally: EngineTally
    outputs: RunOutputs


class RunSummary:
    def __init__(self, config: pytest.Config, parts: RunParts):
        self._config = config
        self._parts = parts
        # --weval-baseline: read before anything runs (a folder that cannot be read stops the
        # run first), compared once at the end (docs/statistics.md)
        self._baseline = parts.inputs.settings.baseline_folder()
        self.finished: FinishedRun | None = None  # the run's roll-up and gates
        self.history: RunHistory | None = None  # the store's history (docs/history.md)

    # tryfirst: pytest's junit writer (a plain hook) writes the interruption's property
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        index_teardown_reports(self._config.pluginmanager.get_plugin("terminalreporter"))
        parts = self._parts
        if parts.outputs.stop_message is not None:  # xdist: a worker's pre-flight stopped the run
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        interrupted = was_interrupted(session)
        if parts.inputs.settings.embeds and not interrupted:  # the answers' similarities, before the reports
            self._embed_answers()
        # Ctrl-C, SIGTERM, -x: the reports say how many selected items never ran
        not_run = parts.results.not_run(session.testscollected) if interrupted else None
        if not parts.results.results and not (not_run and session.testscollected):
            return
        self.history = RunHistory.for_run(parts.inputs.settings, parts.inputs.started)
        run = self.finished = self._finish(not_run, record=not interrupted)
        if not_run is not None:
            _junit_property(
                self._config, "weval_interrupted", f"{not_run} of {session.testscollected} items did not run"
            )
        if run.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        settings = parts.inputs.settings
        with each_file_tried() as unwritten:
            try:
                settings.write_run_files(run, self._run_facts(not_run) if settings.html_path is not None else None)
            finally:
                run.full.close()
        parts.outputs.unwritten += unwritten
        if unwritten and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # what was asked for is missing

    def _embed_answers(self) -> None:
        parts = self._parts
        role = parts.outputs.session_role or Role("serial")  # under xdist, one more process of the session
        full = parts.results.full()
        try:
            answers = full.of(parts.results.results)  # the one step that reads every answer at once
        finally:
            full.close()
        embedded = embed_answers(
            parts.inputs.settings,
            self._config,
            answers,
            parts.blueprints.by_path(),
            role=role,
            usage=parts.tally.usage,
            faults=parts.tally.store_faults,
        )
        parts.results.replace(embedded.values())

    def _finish(self, not_run: int | None, *, record: bool) -> FinishedRun:
        parts = self._parts
        results = parts.results.results
        gates, baseline = self._gates_and_baseline()
        run = finish_run(
            results,
            parts.blueprints.by_path(),
            parts.tally.usage,
            gates,
            baseline=baseline,
            not_run=not_run,
            full=parts.results.full(),
        )
        return self.history.finish(run, record=record) if self.history is not None else run

    def _gates_and_baseline(self) -> tuple[RunGates, Baseline | None]:
        """The gates, and the baseline they compare with: a folder read at the start, or the
        history's run ``last`` names (none: no baseline gate, and a note says why)."""
        settings = self._parts.inputs.settings
        gates = settings.run_gates()
        last = settings.history_baseline()
        if last is None:
            return gates, self._baseline
        baseline, missing = self.history.baseline(last, self._parts.results.results) if self.history else (None, None)
        if baseline is None:
            gates = dataclasses.replace(gates, baseline=None)
            if self.history is not None and missing:
                self.history.notes.append(f"weval: {missing}")
        return gates, baseline

    def _run_facts(self, not_run: int | None) -> RunFacts:
        """When the run began, how long it took and what shaped it, for the HTML report."""
        option = self._config.option
        shown = options_in_effect(self._config)
        for flag, value in (
            ("-k", getattr(option, "keyword", "")),
            ("-m", getattr(option, "markexpr", "")),
            ("-n", getattr(option, "numprocesses", None)),
        ):
            if value:
                shown.append((flag, str(value)))
        started = self._parts.inputs.started
        return RunFacts(
            started=dt.datetime.fromtimestamp(started, dt.timezone.utc),
            duration_s=time.time() - started,
            options=tuple(shown),
            judges=self._parts.inputs.settings.recorded_judges(),
            not_run=not_run,
        )

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        parts = self._parts
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            for line in uncollected_hints(config.args, config.invocation_params.dir):
                terminalreporter.write_line(line, yellow=True)
        if parts.outputs.stop_message is not None:
            for number, line in enumerate(visible(parts.outputs.stop_message).splitlines()):
                terminalreporter.write_line(f"ERROR: {line}" if number == 0 else line, red=True)
        if parts.outputs.plan is not None and config.option.collectonly:
            self._say_plan(terminalreporter)
        # Replies paid for and not kept, entries bought again: said at the end of every run
        for line in parts.tally.store_faults.lines(parts.inputs.settings.store_fix_command()):
            terminalreporter.write_line(visible(line), red=True)
        # pytest's junit file is written after this summary's run section, but before this hook
        for file in parts.outputs.unwritten:
            terminalreporter.write_line(visible(f"weval: {file.path} was not written: {file.reason}"), red=True)
        if self.finished is not None:
            self._say_scores(terminalreporter, self.finished, quiet=config.get_verbosity() < 0)
            for option, lines, why, counted_as in gate_sections(self.finished, parts.inputs.settings):
                _gate_section(terminalreporter, option, lines, why, counted_as)

    def _say_plan(self, terminalreporter: Any) -> None:
        outputs, settings = self._parts.outputs, self._parts.inputs.settings
        assert outputs.plan is not None
        terminalreporter.section("weval plan")
        terminalreporter.write_line("The distinct requests this run would send (nothing was sent):")
        for line in outputs.plan.lines():
            terminalreporter.write_line(visible(line))
        if settings.out_dir is not None and not outputs.unwritten:
            terminalreporter.write_line(f"plan written to {Path(settings.out_dir) / 'plan.json'}")

    def _say_scores(self, terminalreporter: Any, run: FinishedRun, *, quiet: bool) -> None:
        settings = self._parts.inputs.settings
        terminalreporter.section("weval scores")
        for line in render_summary(
            run.rollup,
            width=terminalreporter._tw.fullwidth,
            comparison=run.comparison,
            quiet=quiet,
            results=run.results,
        ):
            terminalreporter.write_line(visible(line))
        unwritten = {file.path for file in self._parts.outputs.unwritten}
        out_dir = settings.out_dir
        if out_dir is not None and not any(out_dir in path.parents for path in unwritten):
            terminalreporter.write_line(f"weval results written to {out_dir}")
        if settings.html_path is not None and settings.html_path not in unwritten:
            terminalreporter.write_line(f"weval HTML report written to {settings.html_path}")
        for note in self.history.notes if self.history is not None else ():
            terminalreporter.write_line(visible(note), yellow=True)
        if run.changes is not None:
            terminalreporter.write_line(visible(run.changes.line()))
        if run.not_run is not None:
            terminalreporter.write_line(
                f"weval: the run was stopped early: {plural(run.not_run, 'item')} did not run; "
                "the scores above cover the items that did",
                red=True,
            )


def gate_sections(run: FinishedRun, settings: WevalSettings) -> Iterator[tuple[str, list[str], str, str]]:
    """Each session gate that failed, as (option, its lines, why the session failed, what
    pytest's last line counts it as)."""
    if run.gate_lines:
        count = len(run.gate_lines)
        why = f"{count} mean{'s' if count != 1 else ''} below --weval-min-score {settings.min_score:g}"
        yield "--weval-min-score", run.gate_lines, why, "gates failed"
    if run.regression_lines:
        count = len(run.regression_lines)
        why = f"{count} model{'s' if count != 1 else ''} regressed against the baseline {_baseline_name(run, settings)}"
        yield "--weval-baseline", run.regression_lines, why, "regressed"
    if run.flaky_lines:
        why = f"{plural(len(run.flaky_lines), 'item')} flaky (samples on both sides of the threshold)"
        yield "--weval-fail-flaky", run.flaky_lines, why, "flaky"


def _gate_section(terminalreporter: Any, option: str, lines: list[str], why: str, counted_as: str) -> None:
    """A session gate that failed: a titled section, its lines, a sentence saying the session
    failed and why, and a count in pytest's last line ("22 passed, 2 gates failed"), which would
    otherwise read as a success (pytest caches that line's colour, so it is worked out again)."""
    terminalreporter.section(f"weval gate: {option}", red=True, bold=True)
    for line in lines:
        terminalreporter.write_line(visible(line), red=True)
    terminalreporter.write_line(
        f"The session failed: {why}, though each item was judged on its own threshold.", red=True, bold=True
    )
    terminalreporter.stats.setdefault(counted_as, []).extend(lines)
    terminalreporter._main_color = None


def _junit_property(config: pytest.Config, name: str, value: str) -> None:
    """A ``<property>`` of the junit test suite (``--junitxml``), as pytest's
    ``record_testsuite_property`` fixture adds one."""
    for plugin in config.pluginmanager.get_plugins():
        add = getattr(plugin, "add_global_property", None)
        if callable(add):
            add(name, value)


def _baseline_name(run: FinishedRun, settings: WevalSettings) -> str:
    """The baseline as people know it: its folder, or which of the history's runs ``last`` was."""
    last = settings.history_baseline()
    if last is not None and run.comparison is not None:
        return f"{last} ({run.comparison.directory})"
    return str(settings.baseline)
