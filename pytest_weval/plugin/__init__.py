"""The pytest glue, registered as the ``weval`` plugin (``-p no:weval`` turns it off).

This module only adds the options and hooks and registers the plugin's concerns
(``registration.py``: one object per concern, as this process's role in the run needs them).
Hooks stay thin: each calls a plain, typed function of another layer.
"""

from __future__ import annotations

import pytest

from pytest_weval.plugin import hookspec, html_columns, lint, tag_markers
from pytest_weval.plugin.fixtures import weval_client, weval_judge
from pytest_weval.plugin.options import add_options
from pytest_weval.plugin.registration import register, unregister
from pytest_weval.plugin.summary_reasons import SummaryReasons

__all__ = ["weval_client", "weval_judge"]  # fixtures: pytest finds them in this module


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)
    # Its pytest_configure runs last, for `pytest --markers` only (so `-p no:weval` drops it too).
    if not pluginmanager.is_registered(tag_markers):
        pluginmanager.register(tag_markers, "weval-tag-markers")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "weval: an item generated from a Weval blueprint")
    lint.register_marker(config)  # listed by --markers, and -m weval_lint works with --strict-markers
    lint.configure(config)  # ini weval_lint_ignore / weval_lint_per_file_ignores, checked before anything runs
    # One unreadable blueprint must not stop the others: pytest would otherwise interrupt the
    # session after any collection error. The errors still fail the run's exit status.
    config.option.continue_on_collection_errors = True
    _default_asyncio_loop_scope(config)
    role = register(config)
    config.pluginmanager.register(SummaryReasons(), "weval-summary-reasons")
    if role.reports:
        html_columns.register(config)  # pytest-html's columns, when it writes a report


@pytest.hookimpl(trylast=True)  # after each concern's own pytest_unconfigure
def pytest_unconfigure(config: pytest.Config) -> None:
    unregister(config)


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
