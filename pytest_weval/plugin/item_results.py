"""Each item's result, kept from its test report: an ``ItemResult`` rides on its report as a
JSON string (``report.weval_result``), which xdist serialises, so the controller rebuilds the
same records the workers made and every reporter runs once, on the controller, from those
records only. (A string, not nested dicts: execnet's serialiser and pydantic's dict validation
cost ten times more.)"""

from __future__ import annotations

from collections.abc import Generator, Iterable

import pytest

from pytest_weval.plugin.items import WevalItem
from pytest_weval.results import ItemResult


def carries_result(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> bool:
    """The report of ``item`` that carries its result: its call's, or its setup's when setup
    did not pass (an item whose result is an error or a skip)."""
    if not isinstance(item, WevalItem) or getattr(item, "weval_result", None) is None:
        return False
    return call.when == "call" or (call.when == "setup" and report.outcome != "passed")


class ItemResults:
    def __init__(self) -> None:
        self._results: dict[str, ItemResult] = {}  # by node id: a rerun's result replaces the earlier one
        self._reported: set[str] = set()  # node ids that reported an outcome (what an interrupt left unrun)

    @property
    def results(self) -> list[ItemResult]:
        """Every item's result, the last attempt's when an item was rerun."""
        return list(self._results.values())

    def replace(self, results: Iterable[ItemResult]) -> None:
        """Results that gained something after their item ran (the similarity rows)."""
        for result in results:
            self._results[result.nodeid] = result

    def not_run(self, collected: int) -> int:
        """How many of the ``collected`` items reported no outcome (the run was stopped)."""
        return max(0, collected - len(self._reported | set(self._results)))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        result = getattr(item, "weval_result", None)
        if isinstance(result, ItemResult) and carries_result(item, call, report):
            report.weval_result = result.model_dump_json()  # type: ignore[attr-defined]
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
