"""Lines for the person watching the run (the pre-flight's missing keys, a provider throttling,
the plan at -v): each said once, between pytest's progress lines, never splitting one.

Where an item runs in an xdist worker, what was noticed there travels on its report
(``report.weval_notices``), so the terminal of the process that shows progress says it.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_weval.plugin.item_results import carries_result
from pytest_weval.plugin.run_engine import RunEngine
from pytest_weval.plugin.terminal_lines import at_line_end, say_between_progress_lines, write_lines


class Notices:
    """``says_here``: this process shows the progress (not an xdist worker)."""

    def __init__(self, config: pytest.Config, engine: RunEngine, *, says_here: bool):
        self._config = config
        self._engine = engine
        self._says_here = says_here
        self._pending: list[str] = []  # said with the next item's report
        self._said: set[str] = set()
        self._unsaid: list[str] = []  # waiting for the end of a progress line

    def hold(self, line: str) -> None:
        """Said with the next item's report."""
        self._pending.append(line)

    def announce(self, text: str) -> None:
        """Said now where this process shows the progress; else with the next item's report."""
        if self._says_here:
            write_lines(self._config, text)
        else:
            self._pending.append(text)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if carries_result(item, call, report):
            notices, self._pending = self._pending, []
            report.weval_notices = notices + self._engine.take_notices()  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for notice in getattr(report, "weval_notices", None) or ():
            self._say(notice)

    def _say(self, line: str) -> None:
        """Once, held until a progress line ends (``pytest_runtest_logstart``), or the run does."""
        if line in self._said:
            return
        self._said.add(line)
        self._unsaid.append(line)

    def _take_pending(self) -> None:
        if self._says_here:  # a worker's travel on its reports
            notices, self._pending = self._pending, []
            for notice in notices:
                self._say(notice)

    @pytest.hookimpl(tryfirst=True)  # before pytest's reporter starts the item's progress
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self._take_pending()
        if self._unsaid and at_line_end(self._config, nodeid):
            lines, self._unsaid = self._unsaid, []
            say_between_progress_lines(self._config, "\n".join(lines))

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # after the last progress line, before anything ends
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        self._take_pending()
        lines, self._unsaid = self._unsaid, []
        if lines:
            write_lines(self._config, "\n".join(lines), yellow=True)
        return (yield)
