"""Stopping a run: SIGINT and SIGTERM stop sending at once (``signals.py``), Ctrl-C cancels the
requests in flight, and an xdist controller tells its workers through the claims store, in case
the signal reached it alone (docs/engine.md, 'Stopping a run')."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_weval.engine.store.backends import request_stop
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.run_engine import RunEngine
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.plugin.signals import StopSignals


class Interruption:
    def __init__(self, settings: WevalSettings, role: Role, engine: RunEngine):
        self._settings = settings
        self._role = role
        self._engine = engine
        self._session_id: str | None = None  # xdist controller: the session its workers share
        self.signals = StopSignals(engine.interrupt)
        self.signals.install()
        if role.is_worker:
            self.signals.watch_parent()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: the session whose workers a Ctrl-C stops."""
        self._session_id = node.workerinput.get("testrunuid")

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """No request starts from now on and those in flight are cancelled (replies already
        received are in the cache)."""
        self._engine.interrupt()
        if self._session_id is not None:
            settings = self._settings.engine_settings(dataclasses.replace(self._role, session_id=self._session_id))
            # This session's workers only: the other machines of a shared run (--weval-run-id) go on.
            request_stop(settings, self._settings.run_id_or(self._session_id), f"stop:{self._session_id}")

    @pytest.hookimpl(trylast=True)  # after the worker's output is written
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._role.is_worker:
            self.signals.end_if_orphaned()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.signals.restore()
