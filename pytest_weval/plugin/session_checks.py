"""Before anything is collected or sent: every output path can be written and the store can be
used, else the session ends on one line (docs/options.md, 'Files written'; docs/engine.md,
'Claims across machines'). At the end, a store that passed and took every write is marked
checked, so the next run need not check the file again unless it changes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.junitxml import LogXML  # pytest's --junitxml writer (not exported by pytest)

from pytest_weval.engine.store.backends import StoreError, check_store, is_postgres, mark_store_checked, redact_url
from pytest_weval.files import Unwritten, unwritable
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.run_engine import store_error
from pytest_weval.plugin.run_state import EngineTally, RunInputs, RunOutputs
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.report._fmt import visible


class SessionChecks:
    def __init__(self, config: pytest.Config, role: Role, inputs: RunInputs, outputs: RunOutputs, tally: EngineTally):
        self._config = config
        self._role = role
        self._inputs = inputs
        self._outputs = outputs
        self._tally = tally
        self._store_checked = False  # the store passed the session-start check

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        """Where the replies are kept, so a run that starts a new cache says so."""
        return cache_header(self._inputs.settings, new=self._inputs.cache_was_new)

    @pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.check()

    def check(self) -> None:
        """At the session's start, or once collection is over for a plugin activated by the
        first blueprint collected (``activation.py``): still before anything is sent."""
        settings = self._inputs.settings
        # Before the usage error: activated late, the session's end still runs after it (and
        # writes pytest's junit file).
        keep_junit_failure_to_a_line(self._config, self._outputs.unwritten)
        problem = next(output_problems(self._config, settings), None)
        if problem is not None:
            option, why = problem
            raise pytest.UsageError(f"{option}: {visible(why)}; nothing was sent")
        if self._role.dry_run:
            return
        try:
            check_store(settings.engine_settings(self._role))
        except StoreError as exc:
            raise store_error(settings, exc) from None
        self._store_checked = True

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._store_checked and not self._tally.store_faults.damaged:
            # Checked at start, every writer done (workers, the history).
            mark_store_checked(self._inputs.settings.engine_settings(self._role))


def cache_header(settings: WevalSettings, *, new: bool) -> str:
    if settings.cache_mode == "off":
        return "weval: cache off"
    if is_postgres(settings.cache_store):
        return f"weval: cache in {redact_url(settings.cache_store)} ({settings.cache_mode})"
    state = ", new" if new else ""
    return f"weval: cache {settings.cache_dir} ({settings.cache_store}, {settings.cache_mode}{state})"


def output_problems(config: pytest.Config, settings: WevalSettings) -> Iterator[tuple[str, str]]:
    """Each output the run was asked for that cannot be written, as (option, why): said before
    anything is sent, not found at the end of a run already paid for."""
    yield from settings.unwritable_outputs()
    xmlpath = getattr(config.option, "xmlpath", None)
    if xmlpath:  # pytest's own --junitxml, resolved as pytest resolves it
        junit = Path(os.path.abspath(os.path.expanduser(os.path.expandvars(xmlpath))))
        problem = unwritable(junit, folder=False)
        if problem is not None:
            yield "--junitxml", problem


def keep_junit_failure_to_a_line(config: pytest.Config, unwritten: list[Unwritten]) -> None:
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
