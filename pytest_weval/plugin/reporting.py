"""Carrying results from items to the reporters, also across xdist workers.

Each item's ``ItemResult`` rides on its test report as a JSON string (``report.weval_result``);
xdist serialises report attributes, so the controller rebuilds the same records the workers
made and every reporter runs once, on the controller, from those records only. A string, not
nested dicts: execnet's serialiser and pydantic's dict validation cost ten times more.
"""

from __future__ import annotations

import gc

import pytest

from pytest_weval.plugin.state import state_of

_GATE_LINES = pytest.StashKey[list]()


def decorate_report(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport) -> None:
    from pytest_weval.plugin.running import WevalItemError, describe_failure

    result = getattr(item, "weval_result", None)
    if result is None:
        return
    errored_in_setup = call.when == "setup" and report.outcome != "passed"
    if call.when == "call" or errored_in_setup:
        report.weval_result = result.model_dump_json()
    if errored_in_setup and call.excinfo is not None and isinstance(call.excinfo.value, WevalItemError):
        # pytest renders setup errors as tracebacks; an item error is the provider's or the
        # blueprint's problem, so say it in words instead.
        report.longrepr = describe_failure(item, call.excinfo)


def record_report(config: pytest.Config, report: pytest.TestReport) -> None:
    data = getattr(report, "weval_result", None)
    if not data:
        return
    from pytest_weval.results import ItemResult  # not at start-up: the xdist controller needs it late

    result = ItemResult.model_validate_json(data)
    if not result.nodeid:
        result.nodeid = report.nodeid
    state_of(config).results.append(result)


class ResultHooks:
    """Hooks that need the session's config; registered by ``pytest_configure``."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record_report(self.config, report)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def finish_session(session: pytest.Session) -> None:
    from pytest_weval.report.gates import check_min_score
    from pytest_weval.report.rollup import build_rollup

    config = session.config
    state = state_of(config)
    ran_items = state.runner is not None or bool(state.results)
    interrupted = bool(session.shouldstop or session.shouldfail) or session.exitstatus == pytest.ExitCode.INTERRUPTED
    close_runner(config, drain=not interrupted)
    if ran_items:
        # The results held here stay until exit, where each full collection of the heap costs
        # ~0.1 s, several times (running.settle_collected_objects froze what collection built;
        # the xdist controller collects nothing).
        gc.freeze()
    if _is_worker(config) or not state.results:
        return
    rollup = build_rollup(state.results)
    config.stash[_ROLLUP] = rollup
    if state.settings.min_score is not None:
        lines = check_min_score(rollup, state.settings.min_score)
        config.stash[_GATE_LINES] = lines
        if lines and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if state.settings.out_dir is not None:
        write_out_files(state, rollup)


_ROLLUP = pytest.StashKey[object]()


def write_out_files(state, rollup) -> None:
    from pytest_weval.report.weval_json import write_outputs

    blueprints = {}
    for result in state.results:
        if result.blueprint_path not in blueprints:
            path = state.settings.rootdir / result.blueprint_path
            try:
                blueprints[result.blueprint_path] = state.load(path)
            except Exception:  # noqa: BLE001 - it loaded on the worker; report what we can
                continue
    write_outputs(state.settings.out_dir, blueprints, state.results, rollup=rollup)


def write_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    from pytest_weval.report.terminal import render_summary

    if _is_worker(config):
        return
    rollup = config.stash.get(_ROLLUP, None)
    if rollup is None:
        return
    terminalreporter.section("weval scores")
    for line in render_summary(rollup, width=terminalreporter._tw.fullwidth):
        terminalreporter.write_line(line)
    for line in config.stash.get(_GATE_LINES, []):
        terminalreporter.write_line(line, red=True, bold=True)
    out_dir = state_of(config).settings.out_dir
    if out_dir is not None:
        terminalreporter.write_line(f"weval results written to {out_dir}")


def close_runner(config: pytest.Config, *, drain: bool = False) -> None:
    state_of(config).close(drain=drain)
