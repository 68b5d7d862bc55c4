"""The plugin object: one per pytest process, holding the run's state and implementing its hooks.

Registered by ``pytest_configure`` (``plugin/__init__.py``) the way pytest registers its
``LogXML`` and xdist its ``DSession``: settings, parsed blueprints, the engine, the item runner
and the results all live here, so there is no module-level state and no import circle.

Results travel from items to reporters on the test reports: each item's ``ItemResult`` rides on
its report as a JSON string (``report.weval_result``), which xdist serialises, so the controller
rebuilds the same records the workers made and every reporter runs once, on the controller,
from those records only. (A string, not nested dicts: execnet's serialiser and pydantic's dict
validation cost ten times more.) The parsed blueprints reach the controller once, at the end,
in each worker's ``workeroutput``; reporters never read a blueprint file again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import difflib
import gc
import itertools
import os
import time
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import LogXML  # pytest's --junitxml writer (not exported by pytest)

from pytest_weval.api import Weval
from pytest_weval.blueprint import load_blueprint, load_model_defs
from pytest_weval.blueprint.fixtures import ResponseFixtures, load_fixtures
from pytest_weval.blueprint.model import Blueprint, BlueprintError, Location
from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.store.backends import (
    StoreError,
    check_store,
    is_postgres,
    mark_store_checked,
    redact_url,
    request_stop,
    state_file,
)
from pytest_weval.engine.store.cache import StoreFaults
from pytest_weval.engine.store.sqlite_health import fix_command
from pytest_weval.engine.transport.model_lists import FILE_NAME as MODEL_LISTS_FILE
from pytest_weval.engine.transport.model_lists import ModelLists
from pytest_weval.files import Unwritten, each_file_tried, unwritable
from pytest_weval.formats.discover import is_agent_eval_file
from pytest_weval.plugin.agent_items import AgentEvalFile
from pytest_weval.plugin.collect import BLUEPRINT_SUFFIXES, BlueprintFile, blueprint_rel_path, is_blueprint_path
from pytest_weval.plugin.history import RunHistory, past_samples
from pytest_weval.plugin.items import WevalItem
from pytest_weval.plugin.options import WevalSettings, option_name, options_in_effect, settings_from_config
from pytest_weval.plugin.running import Runner, settle_collected_objects
from pytest_weval.plugin.signals import StopSignals
from pytest_weval.plugin.warning_types import WevalWarning
from pytest_weval.report._fmt import plural, visible
from pytest_weval.report.baseline import Baseline, BaselineError, read_baseline
from pytest_weval.report.finish import FinishedRun, RunGates, finish_run, write_run_files
from pytest_weval.report.history import is_history_baseline
from pytest_weval.report.html import RunFacts
from pytest_weval.report.terminal import render_summary
from pytest_weval.report.weval_json import write_json_atomic
from pytest_weval.results import ItemResult, Usage
from pytest_weval.run.pipeline import ItemWork, Work
from pytest_weval.run.plan import Plan, make_plan
from pytest_weval.run.preflight import Preflight, preflight
from pytest_weval.run.programs.runner import provider_key_reason

BLUEPRINTS_OUTPUT = "weval_blueprints"  # workeroutput key: blueprint path -> Blueprint JSON
STOP_OUTPUT = "weval_stop"  # workeroutput key: why the pre-flight stopped the run
STORE_FAULTS_OUTPUT = "weval_store_faults"  # workeroutput key: the worker's StoreFaults as a dict
USAGE_OUTPUT = "weval_usage"  # workeroutput key: model id -> Usage JSON, as the worker's engine counted it


class WevalPlugin:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.settings: WevalSettings = settings_from_config(config)
        # Seen before anything makes the cache (the store's check at session start does, before
        # pytest writes the header that says whether the cache is new).
        self._cache_was_new = not Path(self.settings.cache_dir).exists()
        self.custom_models = _custom_models(self.settings)
        self.fixtures = _fixtures(self.settings)
        self.named_files = frozenset(
            Path(arg.split("::")[0]).resolve()
            for arg in config.args
            if Path(arg.split("::")[0]).suffix.lower() in (".yml", ".yaml", ".json")
        )
        self.blueprints: dict[Path, Blueprint] = {}  # parsed here, by file
        self.received_blueprints: dict[str, Blueprint] = {}  # xdist controller: from workers
        self.run_usage: dict[str, Usage] = {}  # per model, each distinct request once (all workers)
        self._results: dict[str, ItemResult] = {}  # by node id: a rerun's result replaces the earlier one
        self.finished: FinishedRun | None = None  # the run's roll-up and gates, at session end
        # --weval-baseline: read before anything runs (a folder that cannot be read stops the run
        # first), compared once at the end, on the xdist controller (docs/statistics.md)
        self.baseline: Baseline | None = None if hasattr(config, "workerinput") else _baseline(self.settings)
        self._started = time.time()  # for the HTML report's date and duration
        self._markers: set[str] = set()
        self._runner: Runner | None = None
        self._holding = False  # collection froze what it built (hold_collected)
        self._weval: Weval | None = None  # one engine per process, shared by items and fixtures
        self._said: set[str] = set()
        self._unsaid: list[str] = []  # notices waiting for the end of a progress line
        self._said_once: set[str] = set()  # findings shared by many blueprints, said at the first
        self._pending_notices: list[str] = []  # said with the next item's report
        self.plan: Plan | None = None
        self.stop_message: str | None = None  # the pre-flight stopped the run (xdist: said by the controller)
        self.unwritten: list[Unwritten] = []  # output files a full disk (or the like) kept from being written
        self._xdist_run_id: str | None = None  # xdist controller: the run its workers share
        self.store_faults = StoreFaults()  # replies not stored, entries not read (all workers)
        self._store_checked = False  # the store passed the session-start check
        self.history: RunHistory | None = None  # the store's history, at session end (docs/history.md)
        self._reported: set[str] = set()  # node ids that reported an outcome (what an interrupt left unrun)
        self.signals = StopSignals(self._stop_sending)
        self.signals.install()
        if hasattr(config, "workerinput"):
            self.signals.watch_parent()

    # -- what collection and items ask of the plugin ------------------------------------------
    @property
    def dry_run(self) -> bool:
        """Options under which pytest runs no test, so nothing may be sent: --collect-only,
        --setup-plan, --setup-only, --fixtures (which collects)."""
        option = self.config.option
        return bool(
            option.collectonly
            or getattr(option, "setupplan", False)
            or getattr(option, "setuponly", False)
            or getattr(option, "showfixtures", False)
        )

    def weval(self) -> Weval:
        """The process's engine and pipeline, started on first use (never during collection)."""
        if self._weval is None:
            workerinput = getattr(self.config, "workerinput", None)
            try:
                self._weval = Weval(
                    engine_settings=self.settings.engine_settings(workerinput),
                    pipeline_settings=dataclasses.replace(
                        self.settings.pipeline_settings(self.custom_models, self.fixtures),
                        past=past_samples(self.settings),
                    ),
                )
            except StoreError as exc:  # checked at session start; gone since (or an xdist worker)
                raise _store_error(self.settings, exc) from None
        return self._weval

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        """Where the replies are kept, so a run that starts a new cache says so."""
        settings = self.settings
        if settings.cache_mode == "off":
            return "weval: cache off"
        if is_postgres(settings.cache_store):
            return f"weval: cache in {redact_url(settings.cache_store)} ({settings.cache_mode})"
        state = ", new" if self._cache_was_new else ""
        return f"weval: cache {settings.cache_dir} ({settings.cache_store}, {settings.cache_mode}{state})"

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Every output path can be written, and a PostgreSQL store is reachable, with tables of
        this version, before anything is collected or sent: else the session ends on one line
        (docs/options.md, 'Files written'; docs/engine.md, 'Claims across machines')."""
        if hasattr(self.config, "workerinput"):
            return
        problem = next(output_problems(self.config, self.settings), None)
        if problem is not None:
            option, why = problem
            raise pytest.UsageError(f"{option}: {visible(why)}; nothing was sent")
        _keep_junit_failure_to_a_line(self.config, self.unwritten)
        if self.dry_run:
            return
        try:
            check_store(self.settings.engine_settings(None))
        except StoreError as exc:
            raise _store_error(self.settings, exc) from None
        self._store_checked = True

    def load(self, path: Path) -> Blueprint:
        if path not in self.blueprints:
            root = self.settings.rootdir
            try:
                shown = path.relative_to(root).as_posix()
            except ValueError:
                shown = path.as_posix()
            self.blueprints[path] = load_blueprint(
                path,
                rel_path=blueprint_rel_path(path, root),
                display_path=shown,
                collections_dir=self.settings.collections_dir,
                model_override=list(self.settings.models) if self.settings.models else None,
                custom_models=self.custom_models,
                max_file_mb=self.settings.max_file_mb,
            )
        return self.blueprints[path]

    def first_time(self, message: str) -> bool:
        """True the first time a finding shared by many blueprints is met in this process."""
        if message in self._said_once:
            return False
        self._said_once.add(message)
        return True

    def hold_collected(self) -> None:
        """What a file's collection built lives until collection is final: out of the garbage
        collector's sight meanwhile, or each full collection walks every item built so far
        again (2.4 s of a 164k-item collection). Told apart from garbage once collection is
        final (_collection_finish)."""
        gc.freeze()
        self._holding = True

    def register_marker(self, tag: str) -> str:
        if tag not in self._markers:
            self._markers.add(tag)
            self.config.addinivalue_line("markers", f"{tag}: blueprint tag")
        return tag

    def result_for(self, item: WevalItem, sample: int = 0) -> ItemResult:
        return self._runner_for(item).result_for(item, sample)

    def _runner_for(self, item: WevalItem) -> Runner:
        if self._runner is None:  # not started at collection end (should not happen): this item alone
            self._runner = Runner(self.weval(), [item], concurrency=self.settings.concurrency)
        return self._runner

    # -- collection ----------------------------------------------------------------------------
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> BlueprintFile | AgentEvalFile | None:
        # Agent eval files first: a `*.eval.yaml` below `blueprints/` is still an agent suite.
        if is_agent_eval_file(
            file_path,
            rootdir=self.settings.rootdir,
            named=file_path in self.named_files,
            max_file_mb=self.settings.max_file_mb,
        ):
            return AgentEvalFile.from_parent(parent, path=file_path, source=self)
        if is_blueprint_path(file_path, self.settings, self.named_files):
            return BlueprintFile.from_parent(parent, path=file_path, source=self)
        return None

    @pytest.hookimpl(tryfirst=True)  # before xdist's, which sends the collected ids
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Collection is final: the pre-flight, then start evaluating the selected items (not
        for --collect-only, and not on the xdist controller, which runs nothing)."""
        try:
            self._collection_finish(session)
        except pytest.UsageError as exc:
            if not hasattr(self.config, "workerinput"):
                raise
            session.items[:] = []  # an xdist worker: the controller says why (as the pre-flight's stop)
            self.stop_message = str(exc)

    def _collection_finish(self, session: pytest.Session) -> None:
        if self._holding:  # deselected items are garbage now (an item and its keywords are a cycle)
            self._holding = False
            gc.unfreeze()
            settle_collected_objects()
        selected = [i for i in session.items if isinstance(i, WevalItem)]
        if not selected:
            return
        settings = self.settings
        works = [item.work() for item in selected]  # the pre-flight's, then the plan's
        checked = preflight(
            works,
            judges=settings.judges,
            env=os.environ,
            allowed_env=settings.allow_env,
            custom_models=self.custom_models,
            keys_needed=settings.cache_mode != "ro",
            prices=PriceBook(settings.prices) if settings.budget_usd is not None else None,
            model_lists=self._model_lists(),
            fixtures=self.fixtures,
        )
        # Under xdist every worker holds the whole selection, so one (gw0) makes the plan for all.
        planner = getattr(self.config, "workerinput", {}).get("workerid", "gw0") == "gw0"
        if planner and self.fixtures is not None:
            warn_unused_fixtures(self.fixtures, self.blueprints.values())
        if (self.config.option.collectonly or (self.config.option.verbose > 0 and not self.dry_run)) and planner:
            self._make_plan(works, checked)
        if self.dry_run:
            return
        if checked.must_stop or (checked.missing and settings.missing_keys == "stop"):
            self._stop_before_any_item(session, checked)
            return
        withheld = [name for name in sorted(settings.allow_env) if provider_key_reason(name)]
        if settings.allow_exec and withheld:
            self._pending_notices.append(
                f"weval: {', '.join(withheld)} named by --weval-allow-env "
                "reach custom model addresses only: programs from eval files never get a provider key"
            )
        live = checked.unbatched(self.custom_models) if settings.batch != "off" and planner else []
        if live:
            self._pending_notices.append(
                f"weval: --weval-batch: no batch API for {', '.join(live)}: "
                f"{'its' if len(live) == 1 else 'their'} requests are sent live, at the live price"
            )
        if checked.missing:
            self._pending_notices.append(
                checked.report() + f"\nweval: --weval-missing-keys={settings.missing_keys}: "
                f"{_items_that_need(len(checked.blocked), settings.missing_keys)}; nothing is sent for them"
            )
        if self._runner is None:
            settle_collected_objects()
            self._runner = Runner(
                self.weval(),
                selected,
                concurrency=settings.concurrency,
                blocked=checked.blocked,
                blocked_outcome="skipped" if settings.missing_keys == "skip" else "error",
                maxfail=self.config.option.maxfail,
            )

    def _model_lists(self) -> ModelLists | None:
        """The providers' model lists for the pre-flight's check of model ids: not when nothing
        is sent (a dry run, replay) or when --weval-check-models=off. Kept beside a SQLite cache
        (not with --weval-cache=off), where every xdist worker of the run finds the list the
        first one fetched."""
        settings = self.settings
        if self.dry_run or not settings.check_models or settings.cache_mode == "ro":
            return None
        workerinput = getattr(self.config, "workerinput", None) or {}
        cache_file = None
        if settings.cache_mode != "off":
            try:
                cache_file = state_file(settings.cache_store, settings.cache_dir, MODEL_LISTS_FILE)
            except OSError:  # a folder that cannot be made: the engine says so when it stores
                cache_file = None
        return ModelLists(
            os.environ,
            cache_file=cache_file,
            run_started=float(workerinput.get("weval_run_started") or self._started),
            reuse=settings.cache_mode != "refresh",
        )

    def _make_plan(self, works: list[Work], checked: Preflight) -> None:
        """What the run would send (--collect-only, and the header of a run at -v): said on
        the terminal, and written to ``plan.json`` with --weval-out. It never stops a run."""
        if self.config.option.collectonly:
            # A dry run reads the cache, if there is one, and writes nothing (no cache folder).
            has_cache = Path(self.settings.cache_dir).exists() or is_postgres(self.settings.cache_store)
            engine_settings = dataclasses.replace(
                self.settings.engine_settings(None), cache_mode="ro" if has_cache else "off", batch="off"
            )
            try:
                weval = Weval(
                    engine_settings=engine_settings,
                    pipeline_settings=self.settings.pipeline_settings(self.custom_models, self.fixtures),
                )
            except StoreError as exc:
                raise _store_error(self.settings, exc) from None
        else:
            weval = self.weval()
        try:
            self.plan = make_plan(
                weval.engine,
                weval.pipeline.settings,
                # Agent eval cases are not planned yet: their judges depend on evaluator types
                # the plan does not model (docs/agent-formats.md, 'Not yet').
                _handed_over(works),
                prices=PriceBook(self.settings.prices),
                checked=checked,
                batch=self.settings.batch != "off",
            )
        finally:
            if weval is not self._weval:
                weval.close()
        if self.settings.out_dir is not None:
            with each_file_tried() as unwritten:
                write_json_atomic(Path(self.settings.out_dir) / "plan.json", self.plan.to_dict())
            self.unwritten += unwritten
        if not self.config.option.collectonly:
            header = "\n".join(
                ["weval plan: the distinct requests this run needs", *("  " + x for x in self.plan.lines())]
            )
            if hasattr(self.config, "workerinput"):  # said by the controller, with gw0's first report
                self._pending_notices.append(header)
                return
            _write_lines(self.config, header)

    def _stop_before_any_item(self, session: pytest.Session, checked: Preflight) -> None:
        message = (
            checked.report()
            + "\nNothing was sent. To run the items that need no missing key and report the others in one "
            "line each: --weval-missing-keys=error (or skip)."
        )
        if checked.must_stop:
            message = checked.report() + "\nNothing was sent."
        if hasattr(self.config, "workerinput"):
            # An xdist worker: run nothing (every worker decides the same), and tell the
            # controller, which ends the session with the message and a usage error.
            session.items[:] = []
            self.stop_message = message
            return
        raise pytest.UsageError(visible(message))  # model ids from the blueprints

    @property
    def results(self) -> list[ItemResult]:
        """Every item's result, the last attempt's when an item was rerun."""
        return list(self._results.values())

    # -- running -------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        """pytest is about to run ``item``: start it and the item after it if not yet under way
        (under xdist they may belong to another worker's share)."""
        if not isinstance(item, WevalItem) or self.dry_run:
            return
        runner = self._runner_for(item)
        runner.hurry(item)
        if isinstance(nextitem, WevalItem):
            runner.hurry(nextitem)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        result = getattr(item, "weval_result", None)
        if not isinstance(item, WevalItem) or result is None:
            return report
        errored_in_setup = call.when == "setup" and report.outcome != "passed"
        if call.when == "call" or errored_in_setup:
            report.weval_result = result.model_dump_json()  # type: ignore[attr-defined]
            # What was noticed meanwhile (the pre-flight's missing keys, a provider throttling)
            # travels on the report, so the terminal of the process that shows progress says it.
            notices, self._pending_notices = self._pending_notices, []
            if self._weval is not None:
                notices += self._weval.engine.take_notices()
            report.weval_notices = notices  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The result is kept before the item counts as reported: a signal between the two (its
        # KeyboardInterrupt can come at any line here) then leaves an item both kept and counted
        # as run, never counted as run without its result (``not_run`` takes both sets).
        data = getattr(report, "weval_result", None)
        if data:
            result = ItemResult.model_validate_json(data)
            if not result.nodeid:
                result.nodeid = report.nodeid
            self._results[result.nodeid] = result
        if report.when == "call" or report.outcome != "passed":
            self._reported.add(report.nodeid)
        for notice in getattr(report, "weval_notices", None) or ():
            self._say(notice)

    def _say(self, line: str) -> None:
        """A line for the person watching, once, between the progress lines: held until a
        progress line ends (``pytest_runtest_logstart``), or the run does."""
        if line in self._said:
            return
        self._said.add(line)
        self._unsaid.append(line)

    @pytest.hookimpl(tryfirst=True)  # before pytest's reporter starts the item's progress
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        if not hasattr(self.config, "workerinput"):  # said here; a worker's travel on its reports
            notices, self._pending_notices = self._pending_notices, []
            for notice in notices:
                self._say(notice)
        if self._unsaid and _at_line_end(self.config, nodeid):
            lines, self._unsaid = self._unsaid, []
            _say_between_progress_lines(self.config, "\n".join(lines))

    def _say_the_rest(self) -> None:
        """What is still unsaid when the items are done, after the last progress line."""
        if not hasattr(self.config, "workerinput"):
            notices, self._pending_notices = self._pending_notices, []
            for notice in notices:
                self._say(notice)
        lines, self._unsaid = self._unsaid, []
        if lines:
            _write_lines(self.config, "\n".join(lines), yellow=True)

    def _stop_sending(self) -> None:
        if self._weval is not None:
            self._weval.engine.interrupt()

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C: no request starts from now on and those in flight are cancelled (replies
        already received are in the cache); under xdist the workers are told through the
        claims store, in case the signal reached this process alone."""
        if self._weval is not None:
            self._weval.engine.interrupt()
        if self._xdist_run_id is not None:
            settings = self.settings.engine_settings(
                {"workercount": 2, "workerid": "controller", "testrunuid": self._xdist_run_id}
            )
            # This session's workers only: the other machines of a shared run (--weval-run-id) go on.
            request_stop(settings, settings.run_id or self._xdist_run_id, f"stop:{self._xdist_run_id}")

    # -- xdist ---------------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: every worker learns when the run began, so a reply another worker
        fetched during this run is not mistaken for a replay from an earlier one."""
        node.workerinput.setdefault("weval_run_started", time.time())
        self._xdist_run_id = node.workerinput.get("testrunuid")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """xdist controller: take in what a worker ran and sent (see ``_send_to_controller``)."""
        output = getattr(node, "workeroutput", None) or {}
        for path, data in output.get(BLUEPRINTS_OUTPUT, {}).items():
            if path not in self.received_blueprints:
                self.received_blueprints[path] = Blueprint.model_validate_json(data)
        if output.get(STOP_OUTPUT):
            self.stop_message = output[STOP_OUTPUT]
        for model, data in output.get(USAGE_OUTPUT, {}).items():
            self.run_usage.setdefault(model, Usage()).add(Usage.model_validate_json(data))
        if output.get(STORE_FAULTS_OUTPUT):
            self.store_faults.add(StoreFaults(**output[STORE_FAULTS_OUTPUT]))

    def _send_to_controller(self, workeroutput: dict[str, Any]) -> None:
        """xdist worker: the blueprints of the items this worker reported, and what its engine
        sent, for the controller's reporters (the controller collects and sends nothing)."""
        ran = {result.blueprint_path for result in self.results}
        workeroutput[BLUEPRINTS_OUTPUT] = {
            blueprint.path: blueprint.model_dump_json()
            for blueprint in self.blueprints.values()
            if blueprint.path in ran
        }
        workeroutput[USAGE_OUTPUT] = {model: used.model_dump_json() for model, used in self.run_usage.items()}
        workeroutput[STORE_FAULTS_OUTPUT] = self.store_faults.to_dict()
        if self.stop_message is not None:
            workeroutput[STOP_OUTPUT] = self.stop_message

    def _blueprints_by_path(self) -> dict[str, Blueprint]:
        """Every blueprint with results, by ``ItemResult.blueprint_path``."""
        blueprints = dict(self.received_blueprints)
        blueprints.update((blueprint.path, blueprint) for blueprint in self.blueprints.values())
        return blueprints

    # -- the end -------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self._say_the_rest()
        ran_items = self._runner is not None or bool(self.results)
        interrupted = (
            bool(session.shouldstop or session.shouldfail) or session.exitstatus == pytest.ExitCode.INTERRUPTED
        )
        if self._weval is not None and self._weval.engine.interrupted and self._weval.engine.in_flight:
            _write_lines(
                self.config,
                f"weval: interrupted: waiting up to {self.settings.stop_grace_s:g} s for "
                f"{plural(self._weval.engine.in_flight, 'reply', 'replies')} on the way "
                "(--weval-stop-grace; Ctrl-C again stops at once)",
                yellow=True,
            )
        self.close(drain=not interrupted)
        if ran_items:
            # The results held here stay until exit, where each full collection of the heap
            # costs ~0.1 s, several times (settle_collected_objects froze what collection
            # built; the xdist controller collects nothing).
            gc.freeze()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            self._send_to_controller(workeroutput)
            self.signals.end_if_orphaned()
            return
        if self.stop_message is not None:  # xdist: a worker's pre-flight stopped the run
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        # Ctrl-C, SIGTERM, -x: the reports say how many selected items never ran
        not_run = max(0, session.testscollected - len(self._reported | set(self._results))) if interrupted else None
        if not self.results and not (not_run and session.testscollected):
            return
        settings = self.settings
        gates = RunGates(
            min_score=settings.min_score,
            baseline=str(settings.baseline) if settings.baseline is not None else None,
            alpha=settings.alpha,
            max_drop=settings.max_drop,
            fail_flaky=settings.fail_flaky,
        )
        baseline = self.baseline
        self.history = RunHistory.for_run(settings, self._started)
        if is_history_baseline(settings.baseline):
            baseline, missing = (
                self.history.baseline(str(settings.baseline), self.results) if self.history else (None, None)
            )
            if baseline is None:
                gates = dataclasses.replace(gates, baseline=None)
                if self.history is not None and missing:
                    self.history.notes.append(f"weval: {missing}")
        run = finish_run(
            self.results, self._blueprints_by_path(), self.run_usage, gates, baseline=baseline, not_run=not_run
        )
        if self.history is not None:
            run = self.history.finish(run, record=not interrupted)
        self.finished = run
        if not_run is not None:
            _junit_property(
                self.config, "weval_interrupted", f"{not_run} of {session.testscollected} items did not run"
            )
        if run.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        with each_file_tried() as unwritten:
            write_run_files(
                run,
                out_dir=settings.out_dir,
                html_path=settings.html_path,
                facts=self._run_facts(not_run) if settings.html_path is not None else None,
            )
        self.unwritten += unwritten
        if unwritten and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # what was asked for is missing

    def _run_facts(self, not_run: int | None) -> RunFacts:
        """When the run began, how long it took and what shaped it, for the HTML report."""
        option = self.config.option
        shown = options_in_effect(self.config)
        for flag, value in (
            ("-k", getattr(option, "keyword", "")),
            ("-m", getattr(option, "markexpr", "")),
            ("-n", getattr(option, "numprocesses", None)),
        ):
            if value:
                shown.append((flag, str(value)))
        return RunFacts(
            started=dt.datetime.fromtimestamp(self._started, dt.timezone.utc),
            duration_s=time.time() - self._started,
            options=tuple(shown),
            judges=self.settings.judges or (),
            not_run=not_run,
        )

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            for line in uncollected_hints(config.args, config.invocation_params.dir):
                terminalreporter.write_line(line, yellow=True)
        if self.stop_message is not None and not hasattr(config, "workerinput"):
            for number, line in enumerate(visible(self.stop_message).splitlines()):
                terminalreporter.write_line(f"ERROR: {line}" if number == 0 else line, red=True)
        if self.plan is not None and config.option.collectonly:
            terminalreporter.section("weval plan")
            terminalreporter.write_line("The distinct requests this run would send (nothing was sent):")
            for line in self.plan.lines():
                terminalreporter.write_line(visible(line))
            if self.settings.out_dir is not None and not self.unwritten:
                terminalreporter.write_line(f"plan written to {Path(self.settings.out_dir) / 'plan.json'}")
        # Replies paid for and not kept, entries bought again: said at the end of every run
        for line in self.store_faults.lines(fix_command(self.settings.cache_dir)):
            terminalreporter.write_line(visible(line), red=True)
        # pytest's junit file is written after this summary's run section, but before this hook
        for file in self.unwritten:
            terminalreporter.write_line(visible(f"weval: {file.path} was not written: {file.reason}"), red=True)
        run = self.finished
        if run is None:
            return
        terminalreporter.section("weval scores")
        for line in render_summary(
            run.rollup,
            width=terminalreporter._tw.fullwidth,
            comparison=run.comparison,
            quiet=config.get_verbosity() < 0,
            results=run.results,
        ):
            terminalreporter.write_line(visible(line))
        unwritten = {file.path for file in self.unwritten}
        out_dir = self.settings.out_dir
        if out_dir is not None and not any(out_dir in path.parents for path in unwritten):
            terminalreporter.write_line(f"weval results written to {out_dir}")
        if self.settings.html_path is not None and self.settings.html_path not in unwritten:
            terminalreporter.write_line(f"weval HTML report written to {self.settings.html_path}")
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
        if run.gate_lines:
            count = len(run.gate_lines)
            _gate_section(
                terminalreporter,
                "--weval-min-score",
                run.gate_lines,
                f"{count} mean{'s' if count != 1 else ''} below --weval-min-score {self.settings.min_score:g}",
                "gates failed",
            )
        if run.regression_lines:
            count = len(run.regression_lines)
            _gate_section(
                terminalreporter,
                "--weval-baseline",
                run.regression_lines,
                f"{count} model{'s' if count != 1 else ''} regressed against the baseline {_baseline_name(run, self.settings)}",
                "regressed",
            )
        if run.flaky_lines:
            _gate_section(
                terminalreporter,
                "--weval-fail-flaky",
                run.flaky_lines,
                f"{plural(len(run.flaky_lines), 'item')} flaky (samples on both sides of the threshold)",
                "flaky",
            )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.close()
        if self._store_checked and not self.store_faults.damaged:
            # Checked at start, every writer done (workers, the history): the next run need
            # not check the file again unless it changes.
            mark_store_checked(self.settings.engine_settings(None))
        self.signals.restore()

    def close(self, *, drain: bool = False) -> None:
        """``drain``: the run ended normally, so evaluations another xdist worker may be
        waiting for are finished first."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            runner.close(drain=drain)
        if self._weval is not None:
            weval, self._weval = self._weval, None
            for model, used in weval.engine.run_usage().items():  # the fixtures' requests too
                self.run_usage.setdefault(model, Usage()).add(used)
            self.store_faults.add(weval.engine.store_faults())
            weval.close()


def _write_lines(config: pytest.Config, text: str, **markup: bool) -> None:
    """Lines for the person watching, each on its own line: after pytest's progress characters
    (``-q`` writes them with no file name, so its ``ensure_newline`` does not end that line)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    terminal.ensure_newline()  # pytest's own line ended: it starts the file's line again
    if terminal._tw.width_of_current_line:
        terminal._tw.line()
    terminal.write_line(visible(text), **markup)


def _at_line_end(config: pytest.Config, nodeid: str) -> bool:
    """pytest's reporter is at the start of a line, or ends its line as this item starts: a line
    per item (-v), or a line per file and this item opens the next file. Mid-line (-q, or the
    file's line goes on), a line written would split the progress and repeat its file name."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return False
    if not terminal._tw.width_of_current_line or terminal.showlongtestinfo:
        return True
    return bool(terminal.showfspath) and terminal.currentfspath != config.rootpath / nodeid.split("::")[0]


def _say_between_progress_lines(config: pytest.Config, text: str) -> None:
    """Lines said where pytest's reporter ends a progress line, that line finished first as
    pytest finishes it (with its percentage)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    line_per_file = terminal.showfspath and not terminal.showlongtestinfo
    if line_per_file and terminal.currentfspath is not None and terminal._show_progress_info:
        terminal._write_progress_information_filling_space()
    _write_lines(config, text, yellow=True)


def _junit_property(config: pytest.Config, name: str, value: str) -> None:
    """A ``<property>`` of the junit test suite (``--junitxml``), as pytest's
    ``record_testsuite_property`` fixture adds one."""
    for plugin in config.pluginmanager.get_plugins():
        add = getattr(plugin, "add_global_property", None)
        if callable(add):
            add(name, value)


def _handed_over(works: list[Work]) -> Iterator[ItemWork]:
    """The blueprint items' works, each let go of once the plan has it: a corpus's 164k are
    not all held while the plan's own counts grow."""
    works.reverse()
    while works:
        work = works.pop()
        if isinstance(work, ItemWork):
            yield work


def _keep_junit_failure_to_a_line(config: pytest.Config, unwritten: list[Unwritten]) -> None:
    """pytest's junit file that cannot be written (a full disk) is one line of the summary, not
    a traceback that ends the session before its summary and the other plugins' session ends.
    LogXML's own writer is wrapped: pluggy reads a hook's method when a plugin is registered,
    so the plugin is registered again, under its name, with the wrapped one."""
    pluginmanager = config.pluginmanager
    for plugin in pluginmanager.get_plugins():
        if not isinstance(plugin, LogXML):
            continue
        write = plugin.pytest_sessionfinish

        def write_or_say(plugin: LogXML = plugin, write: Callable[[], None] = write) -> None:
            try:
                write()
            except OSError as exc:
                unwritten.append(Unwritten(Path(plugin.logfile), exc.strerror or str(exc)))
                with contextlib.suppress(OSError):
                    os.unlink(plugin.logfile)  # a cut XML file would read as a broken run

        said = plugin.pytest_terminal_summary

        def said_if_written(
            terminalreporter: Any, config: pytest.Config, plugin: LogXML = plugin, said: Any = said
        ) -> None:
            if not any(file.path == Path(plugin.logfile) for file in unwritten):  # not "generated xml file"
                said(terminalreporter=terminalreporter, config=config)

        name = pluginmanager.get_name(plugin)
        pluginmanager.unregister(plugin)
        plugin.pytest_sessionfinish = write_or_say  # type: ignore[method-assign]
        plugin.pytest_terminal_summary = said_if_written  # type: ignore[method-assign]
        pluginmanager.register(plugin, name)


def output_problems(config: pytest.Config, settings: WevalSettings) -> Iterator[tuple[str, str]]:
    """Each output the run was asked for that cannot be written, as (option, why): said before
    anything is sent, not found at the end of a run already paid for."""
    for ini, path, folder in (
        ("weval_out", settings.out_dir, True),
        ("weval_html", settings.html_path, False),
    ):
        problem = unwritable(Path(path), folder=folder) if path is not None else None
        if problem is not None:
            yield option_name(ini), problem
    xmlpath = getattr(config.option, "xmlpath", None)
    if xmlpath:  # pytest's own --junitxml, resolved as pytest resolves it
        junit = Path(os.path.abspath(os.path.expanduser(os.path.expandvars(xmlpath))))
        problem = unwritable(junit, folder=False)
        if problem is not None:
            yield "--junitxml", problem


def _store_error(settings: WevalSettings, exc: StoreError) -> pytest.UsageError:
    """A store that cannot be used ends the session in one line, before anything is sent."""
    where = option_name("weval_cache_store") if is_postgres(settings.cache_store) else "weval cache"
    return pytest.UsageError(f"{where}: {exc}")


def _items_that_need(count: int, missing_keys: str) -> str:
    if count == 1:
        return "the item that needs them " + ("errors" if missing_keys == "error" else "is skipped")
    return f"the {count} items that need them " + ("error" if missing_keys == "error" else "are skipped")


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


def uncollected_hints(args: list[str], cwd: Path, limit: int = 10_000) -> list[str]:
    """For each folder named on the command line that holds YAML or JSON files of which no
    blueprint was collected: how blueprints are found (nothing is collected silently)."""
    hints = []
    for arg in args:
        folder = (cwd / arg.split("::")[0]).resolve()
        if not folder.is_dir():
            continue
        found = 0
        for path in itertools.islice(folder.rglob("*"), limit):
            # hidden folders below the one named (.git, .venv), not those above it (~/.work/proj)
            hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
            if path.suffix.lower() in BLUEPRINT_SUFFIXES and not hidden:
                found += 1
        if found:
            hints.append(
                f"weval: {arg} holds {found} YAML/JSON file{'s' if found != 1 else ''}, but no blueprint was collected: "
                "blueprints are found below a folder named 'blueprints/', as files named on the command line, or by "
                "ini weval_globs (e.g. weval_globs = evals/*.yml)"
            )
    return hints


def _baseline_name(run: FinishedRun, settings: WevalSettings) -> str:
    """The baseline as people know it: its folder, or which of the history's runs ``last`` was."""
    if is_history_baseline(settings.baseline) and run.comparison is not None:
        return f"{settings.baseline} ({run.comparison.directory})"
    return str(settings.baseline)


def _baseline(settings: WevalSettings) -> Baseline | None:
    if settings.baseline is None or is_history_baseline(settings.baseline):
        return None  # the history's run is read at the end, with the history
    try:
        return read_baseline(settings.baseline)
    except BaselineError as exc:
        raise pytest.UsageError(f"--weval-baseline: {exc}") from None


def _fixtures(settings: WevalSettings) -> ResponseFixtures | None:
    """--weval-fixtures, read before anything is collected or sent: a bad file stops the run."""
    if settings.fixtures is None:
        return None
    try:
        return load_fixtures(settings.fixtures)
    except BlueprintError as exc:
        raise pytest.UsageError(f"{option_name('weval_fixtures')}: {exc}") from None


def warn_unused_fixtures(fixtures: ResponseFixtures, blueprints: Iterable[Blueprint]) -> None:
    """A fixture for a prompt id no collected blueprint has (a typo, or a renamed prompt) would
    silently leave that prompt to the live model: say so, at the fixture's line."""
    prompt_ids = {prompt.id for blueprint in blueprints for prompt in blueprint.prompts}
    for prompt_id, line in fixtures.lines.items():
        if prompt_id not in prompt_ids:
            close = difflib.get_close_matches(prompt_id, prompt_ids, n=1)
            hint = f" (did you mean '{visible(close[0])}'?)" if close else ""
            warnings.warn_explicit(
                WevalWarning(f"the fixture for prompt '{visible(prompt_id)}' matches no collected prompt{hint}"),
                category=WevalWarning,
                filename=fixtures.path,
                lineno=line or 1,
            )


def _custom_models(settings: WevalSettings) -> dict[str, dict[str, Any]]:
    if settings.model_defs is None:
        return {}
    try:
        return load_model_defs(settings.model_defs)
    except BlueprintError as exc:
        raise pytest.UsageError(f"weval_model_defs: {exc}") from None
    except OSError as exc:
        location = Location(path=str(settings.model_defs))
        raise pytest.UsageError(f"weval_model_defs: {location}: cannot read: {exc.strerror}") from None


_KEY = pytest.StashKey[WevalPlugin]()


def register(config: pytest.Config) -> WevalPlugin:
    plugin = config.stash[_KEY] = WevalPlugin(config)
    config.pluginmanager.register(plugin, "weval-plugin")
    return plugin


def plugin_of(config: pytest.Config) -> WevalPlugin:
    return config.stash[_KEY]
