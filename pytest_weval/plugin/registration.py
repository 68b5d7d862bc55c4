"""The one place that decides what this process does in the run (``role.role_of``) and
registers the concerns that role needs with pytest's plugin manager, as pytest registers its
``LogXML`` and ``TerminalReporter``; each is unregistered at ``pytest_unconfigure``.

=================  ======  ==========  ======  ===============================================
concern            serial  controller  worker  what it does
=================  ======  ==========  ======  ===============================================
SessionChecks      yes     yes                 outputs writable, store usable; the header
Collection         yes                 yes     blueprint and agent eval files become items
RunStart           yes                 yes     pre-flight, plan, the engine set running
ItemRunning        yes     yes         yes     items hurried; the engine closed at the end
ItemResults        yes     yes         yes     each item's result, from its report
Notices            yes     yes         yes     lines between the progress lines
Interruption       yes     yes         yes     SIGINT/SIGTERM, Ctrl-C reaching the workers
WorkerOutput                           yes     what a worker hands its controller
ControllerInput            yes                 what the controller takes from each worker
RunSummary         yes     yes                 gates, history, output files, terminal summary
SummaryReasons     yes     yes         yes     each failed item's reason in the short summary
=================  ======  ==========  ======  ===============================================

Loaded only when the run uses the plugin (``activation.py``), by ``activate``.

Each concern's module is imported by the roles that register it: an xdist worker never loads
the summary and the reports' code (``summary.py``, ``session_checks.py``), nor the controller
the collection and the run's start (``collection.py``, ``run_start.py``).

Shared state lives in small records passed to the concerns that need it (``run_state.py``,
``run_engine.RunEngine``, ``item_results.ItemResults``); no concern reaches another through a hub.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_weval.plugin import lint
from pytest_weval.plugin.interruption import Interruption
from pytest_weval.plugin.item_results import ItemResults, spool_folder
from pytest_weval.plugin.notices import Notices
from pytest_weval.plugin.role import Role, role_of
from pytest_weval.plugin.run_engine import RunEngine
from pytest_weval.plugin.run_state import Blueprints, EngineTally, RunInputs, RunOutputs, read_inputs
from pytest_weval.plugin.running import ItemRunning
from pytest_weval.plugin.settings import settings_from_config
from pytest_weval.plugin.summary_reasons import SummaryReasons

if TYPE_CHECKING:
    from pytest_weval.plugin.session_checks import SessionChecks

_INPUTS = pytest.StashKey[RunInputs]()
_ENGINE = pytest.StashKey[RunEngine]()
_ROLE = pytest.StashKey[Role]()
_REGISTERED = pytest.StashKey[list[str]]()


def activate(config: pytest.Config) -> Role:
    """What the plugin does in a run that uses it, from its configuration on."""
    lint.configure(config)  # ini weval_lint_ignore / weval_lint_per_file_ignores, checked before anything runs
    return register(config)


def say_header(config: pytest.Config) -> None:
    """Activated after the session started (``activation.py``): the header's cache line, said now."""
    checks: SessionChecks | None = config.pluginmanager.get_plugin("weval-session-checks")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if checks is None or reporter is None:
        return
    header = checks.pytest_report_header(config)
    if header:
        reporter.ensure_newline()
        reporter.write_line(header)


def check_session(config: pytest.Config) -> None:
    """Activated after the session started: its checks, run once collection is over, before
    anything is sent (a usage error there ends the session as one at its start would)."""
    checks: SessionChecks | None = config.pluginmanager.get_plugin("weval-session-checks")
    if checks is None:
        return
    try:
        checks.check()
    except pytest.UsageError:
        # The session's end still runs (at its start it would not): nothing of the run's may
        # be written, so the concerns leave now.
        unregister(config)
        raise


def register(config: pytest.Config) -> Role:
    role = config.stash[_ROLE] = role_of(config)
    inputs = config.stash[_INPUTS] = read_inputs(settings_from_config(config), config.args)
    tally, outputs = EngineTally(), RunOutputs()
    results = ItemResults(lambda: spool_folder(config), worker=role.is_worker)
    blueprints = Blueprints(inputs)
    engine = config.stash[_ENGINE] = RunEngine(inputs, role, tally)
    notices = Notices(config, engine, says_here=not role.is_worker)
    concerns: dict[str, object] = {
        "weval-item-results": results,
        "weval-notices": notices,
        "weval-item-running": ItemRunning(config, engine, results, stop_grace_s=inputs.settings.stop_grace_s),
        "weval-interruption": Interruption(inputs.settings, role, engine),
        "weval-summary-reasons": SummaryReasons(),
    }
    if role.reports:
        from pytest_weval.plugin.session_checks import SessionChecks
        from pytest_weval.plugin.summary import RunParts, RunSummary

        concerns["weval-session-checks"] = SessionChecks(config, role, inputs, outputs, tally)
        concerns["weval-summary"] = RunSummary(config, RunParts(inputs, results, blueprints, tally, outputs))
    if role.runs_items:
        from pytest_weval.plugin.collection import Collection
        from pytest_weval.plugin.run_start import RunStart

        concerns["weval-collection"] = Collection(config, inputs, blueprints, engine)
        concerns["weval-run-start"] = RunStart(config, role, inputs, blueprints, engine, notices, outputs)
    if role.kind == "worker":
        from pytest_weval.plugin.xdist_transfer import WorkerOutput

        workeroutput = config.workeroutput  # type: ignore[attr-defined]  # set by xdist on its workers
        concerns["weval-worker-output"] = WorkerOutput(workeroutput, blueprints, results, tally, outputs)
    if role.kind == "controller":
        from pytest_weval.plugin.xdist_transfer import ControllerInput

        concerns["weval-controller-input"] = ControllerInput(blueprints, tally, outputs)
    for name, concern in concerns.items():
        config.pluginmanager.register(concern, name)
    config.stash[_REGISTERED] = list(concerns)
    return role


def unregister(config: pytest.Config) -> None:
    for name in config.stash.get(_REGISTERED, []):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
    config.stash[_REGISTERED] = []


def inputs_of(config: pytest.Config) -> RunInputs:
    """The settings and the files they name (``pytest --markers`` reads them)."""
    return config.stash[_INPUTS]


def engine_of(config: pytest.Config) -> RunEngine:
    """The process's engine (the ``weval_client`` and ``weval_judge`` fixtures send through it)."""
    return config.stash[_ENGINE]
