"""The pytest glue, registered as the ``weval`` plugin (``-p no:weval`` turns it off).

pytest loads this module in every run of every project where the plugin is installed, so it
adds the options, markers and hooks and imports nothing heavy: the plugin's concerns
(``registration.py``: one object per concern, as this process's role in the run needs them) are
loaded and registered only when the run uses the plugin (``activation.py``). Hooks stay thin:
each calls a plain, typed function of another module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_weval.plugin import activation, hookspec, html_columns, markers
from pytest_weval.plugin.fixtures import weval_client, weval_judge
from pytest_weval.plugin.options import add_options
from pytest_weval.plugin.role import role_of
from pytest_weval.plugin.rootdir_guard import rootdir_problem

__all__ = ["weval_client", "weval_judge"]  # fixtures: pytest finds them in this module


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)
    if pluginmanager.get_plugin("weval-tag-markers") is None:
        pluginmanager.register(activation.TagMarkers(), "weval-tag-markers")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    markers.register(config)  # listed by --markers, and -m weval_lint works with --strict-markers
    # One unreadable blueprint must not stop the others: pytest would otherwise interrupt the
    # session after any collection error. The errors still fail the run's exit status.
    config.option.continue_on_collection_errors = True
    _default_asyncio_loop_scope(config)
    if role_of(config).reports:
        # pytest-html asks for its table's columns at the session's start, before any blueprint
        # is collected; the columns load nothing heavy until a row holds a Weval result.
        html_columns.register(config)
    asked = activation.asked_for(config)
    if asked:
        problem = rootdir_problem(config)
        if problem is not None:
            raise pytest.UsageError(problem)
    if role_of(config).kind == "controller":
        # Activated once xdist has started the workers, which then start meanwhile.
        config.pluginmanager.register(activation.XdistController(config, asked=asked), "weval-xdist-controller")
    elif asked:
        activation.activate(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return activation.collect_file(file_path, parent)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    activation.collection_done(session, items)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    activation.say_hints(terminalreporter, exitstatus, config)


@pytest.hookimpl(trylast=True)  # after each concern's own pytest_unconfigure
def pytest_unconfigure(config: pytest.Config) -> None:
    activation.deactivate(config)


def _default_asyncio_loop_scope(config: pytest.Config) -> None:
    """Our test extra installs pytest-asyncio, which then warns on every run of a project that
    does not set ``asyncio_default_fixture_loop_scope`` (three lines about an option the project
    never chose). Unset, it takes ``function``, the value pytest-asyncio will default to; a value
    the project sets is left alone. pytest has no public way to default another plugin's ini
    value, so this writes its ini cache; should that change, the warning is back, nothing else."""
    if not config.pluginmanager.has_plugin("asyncio"):
        return
    name = "asyncio_default_fixture_loop_scope"
    try:
        if config.getini(name):
            return
    except ValueError:  # not a known ini name in this pytest-asyncio
        return
    cache = getattr(config, "_inicache", None)
    if isinstance(cache, dict):
        cache[name] = "function"
