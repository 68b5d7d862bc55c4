"""The plugin as one object per concern (issue 42, item 2): which concerns each role registers,
the role decided from the process once, settings reaching the engine through ``WevalSettings``,
and the objects that can be exercised alone (the xdist transfer, the results kept from reports)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from plugin_helpers import Project

from pytest_weval.plugin.interruption import Interruption
from pytest_weval.plugin.item_results import ItemResults
from pytest_weval.plugin.role import Role, role_of
from pytest_weval.plugin.run_engine import RunEngine
from pytest_weval.plugin.run_state import Blueprints, EngineTally, RunOutputs, read_inputs
from pytest_weval.plugin.session_checks import output_problems
from pytest_weval.plugin.settings import settings_from_config
from pytest_weval.plugin.xdist_transfer import ControllerInput, WorkerOutput
from pytest_weval.results import ItemResult, Usage

BLUEPRINT = """\
models: [ideal]
---
- id: p1
  prompt: Say hello.
  ideal: hello there
  should:
    - $contains: hello
- id: p2
  prompt: Say bye.
  ideal: bye now
  should:
    - $contains: bye
"""

# Each process writes the weval concerns registered while it ran, and those left after it ended.
CONFTEST = """\
import json, os

def _names(config):
    return sorted(name for name, _ in config.pluginmanager.list_name_plugin() if str(name).startswith("weval-"))

def _write(config, when):
    who = getattr(config, "workerinput", {}).get("workerid", "main")
    path = os.path.join(str(config.rootpath), f"concerns-{who}-{when}.json")
    with open(path, "w") as f:
        json.dump(_names(config), f)

import pytest

@pytest.hookimpl(tryfirst=True)  # the plugin may activate during collection: all are in by the end
def pytest_sessionfinish(session):
    _write(session.config, "running")
    session.config.add_cleanup(lambda: _write(session.config, "after"))
"""

ALWAYS = {"weval-item-results", "weval-notices", "weval-item-running", "weval-interruption", "weval-summary-reasons"}
RUNS_ITEMS = {"weval-collection", "weval-run-start"}
REPORTS = {"weval-session-checks", "weval-summary"}


def _concerns(project: Project, who: str, when: str) -> set[str]:
    names = set(json.loads((project.path / f"concerns-{who}-{when}.json").read_text()))
    return names - {"weval-tag-markers"}  # registered at addhooks, for `pytest --markers`


def test_a_plain_run_registers_every_concern_but_the_xdist_transfer(project: Project):
    project.write("blueprints/a.yml", BLUEPRINT)
    project.write("conftest.py", CONFTEST)
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    assert _concerns(project, "main", "running") == ALWAYS | RUNS_ITEMS | REPORTS
    assert _concerns(project, "main", "after") == set()  # the concerns are unregistered


def test_under_xdist_the_controller_reports_and_the_workers_run(project: Project):
    project.write("blueprints/a.yml", BLUEPRINT)
    project.write("conftest.py", CONFTEST)
    result = project.run("-p", "no:randomly", "-n", "2", sub=True)
    result.assert_outcomes(passed=2)
    # weval-xdist-controller: the light watcher that activated the controller once a worker collected the blueprint
    controller = ALWAYS | REPORTS | {"weval-controller-input", "weval-xdist-controller"}
    assert _concerns(project, "main", "running") == controller
    for worker in ("gw0", "gw1"):
        assert _concerns(project, worker, "running") == ALWAYS | RUNS_ITEMS | {"weval-worker-output"}


def test_the_role_is_read_from_the_process_once(pytester: pytest.Pytester):
    assert role_of(pytester.parseconfig()) == Role("serial")
    # What xdist makes of -n 2 before pytest configures its plugins (its pytest_cmdline_main)
    distributed = ("--dist", "load", "--tx", "2*popen")
    assert role_of(pytester.parseconfig(*distributed)).kind == "controller"
    collect_only = role_of(pytester.parseconfig(*distributed, "--collect-only"))  # xdist starts no workers then
    assert (collect_only.kind, collect_only.dry_run) == ("serial", True)
    config = pytester.parseconfig()
    config.workerinput = {  # type: ignore[attr-defined]  # as xdist gives it to a worker
        "workerid": "gw1",
        "workercount": 3,
        "testrunuid": "abc",
        "weval_run_started": 12.5,
    }
    worker = role_of(config)
    assert worker == Role("worker", worker_id="gw1", worker_count=3, session_id="abc", run_started=12.5)
    assert (worker.reports, worker.runs_items, worker.makes_plan) == (False, True, False)


def test_the_engine_settings_come_from_the_role(pytester: pytest.Pytester):
    settings = settings_from_config(pytester.parseconfig())
    worker = Role("worker", worker_id="gw1", worker_count=3, session_id="abc", run_started=12.5)
    engine = settings.engine_settings(worker)
    assert (engine.worker_id, engine.worker_count, engine.run_id, engine.session_id, engine.run_started) == (
        "gw1",
        3,
        "abc",
        "abc",
        12.5,
    )
    shared = settings_from_config(pytester.parseconfig("--weval-run-id", "nightly")).engine_settings(worker)
    assert (shared.run_id, shared.session_id, shared.coordinate) == ("nightly", "abc", True)
    alone = settings.engine_settings(Role("serial"))
    assert (alone.worker_count, alone.worker_id, alone.run_id, alone.session_id) == (1, "main", None, None)


def _report(
    nodeid: str, result: ItemResult | None, *, when: str = "call", outcome: str = "passed"
) -> pytest.TestReport:
    report = pytest.TestReport(nodeid, ("a.yml", None, nodeid), {}, outcome, None, when)  # type: ignore[arg-type]
    if result is not None:
        report.weval_result = result.model_dump_json()  # type: ignore[attr-defined]
    return report


def _result(nodeid: str, blueprint_path: str, score: float) -> ItemResult:
    return ItemResult.model_validate(
        {
            "nodeid": nodeid,
            "blueprint_id": "a",
            "blueprint_path": blueprint_path,
            "prompt_id": nodeid.rsplit("::", 1)[-1],
            "model_id": "ideal",
            "effective_model_id": "ideal",
            "outcome": "passed",
            "score": score,
            "threshold": 0.5,
        }
    )


def test_item_results_keep_each_items_last_result_and_count_what_did_not_run():
    results = ItemResults()
    results.pytest_runtest_logreport(_report("a.yml::p1", _result("a.yml::p1", "a.yml", 0.2)))
    results.pytest_runtest_logreport(_report("a.yml::p1", _result("a.yml::p1", "a.yml", 0.9)))  # a rerun
    results.pytest_runtest_logreport(_report("a.yml::p2", None, when="setup", outcome="failed"))
    assert [r.score for r in results.results] == [0.9]
    assert results.not_run(collected=5) == 3


def test_a_workers_output_is_what_its_controller_takes_in(pytester: pytest.Pytester):
    config = pytester.parseconfig()
    inputs = read_inputs(settings_from_config(config), [])
    path = Path(pytester.path / "blueprints" / "a.yml")
    path.parent.mkdir()
    path.write_text(BLUEPRINT)
    worker_blueprints = Blueprints(inputs)
    blueprint = worker_blueprints.load(path)
    results = ItemResults()
    results.pytest_runtest_logreport(_report("blueprints/a.yml::p1", _result("x", blueprint.path, 1.0)))
    tally = EngineTally()
    tally.usage["openai:gpt-4o-mini"] = Usage(requests=1, input_tokens=3, output_tokens=4)
    tally.store_faults.unstored = 2
    workeroutput: dict[str, object] = {}
    WorkerOutput(
        workeroutput, worker_blueprints, results, tally, RunOutputs(stop_message="stopped")
    ).pytest_sessionfinish(
        session=None,  # type: ignore[arg-type]  # not read
        exitstatus=0,
    )

    controller_blueprints, controller_tally, controller_outputs = Blueprints(inputs), EngineTally(), RunOutputs()
    controller = ControllerInput(controller_blueprints, controller_tally, controller_outputs)
    for _ in range(2):  # two workers handing over the same
        controller.pytest_testnodedown(
            node=SimpleNamespace(workeroutput=json.loads(json.dumps(workeroutput))), error=None
        )
    assert controller_blueprints.by_path() == {blueprint.path: blueprint}
    assert controller_tally.usage["openai:gpt-4o-mini"] == Usage(requests=2, input_tokens=6, output_tokens=8)
    assert controller_tally.store_faults.unstored == 4
    assert controller_outputs.stop_message == "stopped"


def test_session_checks_name_each_output_that_cannot_be_written(pytester: pytest.Pytester):
    (pytester.path / "taken").write_text("a file where --weval-out wants a folder")
    config = pytester.parseconfig("--weval-out", "taken", "--weval-html", "report.html")
    problems = dict(output_problems(config, settings_from_config(config)))
    assert list(problems) == ["--weval-out (ini weval_out)"]


def test_interruption_holds_the_stop_signals_until_unconfigure(pytester: pytest.Pytester):
    config = pytester.parseconfig()
    inputs = read_inputs(settings_from_config(config), [])
    outer = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # this test session's own weval handler, set aside
    try:
        interruption = Interruption(inputs.settings, Role("serial"), RunEngine(inputs, Role("serial"), EngineTally()))
        try:
            installed = signal.getsignal(signal.SIGTERM)
            # Ctrl-C before any engine started: nothing to stop, nothing to tell
            interruption.pytest_keyboard_interrupt(excinfo=None)  # type: ignore[arg-type]  # not read
        finally:
            interruption.pytest_unconfigure(config)
        assert installed not in (signal.SIG_DFL, outer)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, outer)
