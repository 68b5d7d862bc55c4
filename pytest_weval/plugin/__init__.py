"""The pytest glue. Hooks stay thin: each calls a plain, typed function of another layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_weval.plugin.fixtures import weval_client, weval_judge  # noqa: F401 - fixtures
from pytest_weval.plugin.options import add_options
from pytest_weval.plugin.state import create_state, state_of


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "weval: an item generated from a Weval blueprint")
    create_state(config)
    # One unreadable blueprint must not stop the others: pytest would otherwise interrupt the
    # session after any collection error. The errors still fail the run's exit status.
    config.option.continue_on_collection_errors = True
    from pytest_weval.plugin.reporting import ResultHooks

    config.pluginmanager.register(ResultHooks(config), "weval-results")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    from pytest_weval.plugin.collect import BlueprintFile, is_blueprint_path

    state = state_of(parent.config)
    if is_blueprint_path(file_path, parent.config, state):
        return BlueprintFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    from pytest_weval.plugin.running import start_runner

    start_runner(session)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    from pytest_weval.plugin.running import announce

    announce(item, nextitem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    from pytest_weval.plugin.reporting import decorate_report

    report = yield
    decorate_report(item, call, report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from pytest_weval.plugin.reporting import finish_session

    finish_session(session)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from pytest_weval.plugin.reporting import write_terminal_summary

    write_terminal_summary(terminalreporter, config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from pytest_weval.plugin.reporting import close_runner

    close_runner(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist controller: every worker learns when the run began, so a reply another worker
    fetched during this run is not mistaken for a replay from an earlier one."""
    import time

    node.workerinput.setdefault("weval_run_started", time.time())
