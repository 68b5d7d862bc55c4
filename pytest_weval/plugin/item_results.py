"""Each item's result, kept from its test report.

The process that runs an item appends its whole ``ItemResult`` to its spool
(``report/spool.py``) and keeps what the reporters read of it (``KeptResult``: no texts, in
slots). A worker puts that on the item's report (``ItemResult.without_texts``, as a JSON string
in ``report.weval_result``) with the whole result's place in the spool (``report.weval_spool``);
xdist serialises both, so the controller keeps the same small records the workers made, and
every reporter runs once, on the controller, from those records. (Strings, not nested dicts:
execnet's serialiser and pydantic's dict validation cost ten times more.) A process that keeps
its own items' records, a run without xdist, hands the record from the report's making to its
logreport as it is. The files written at the end read the texts back a blueprint at a time
(``FullResults``)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from pathlib import Path

import pytest

from pytest_weval.plugin.items import WevalItem
from pytest_weval.plugin.running import KeptSettler
from pytest_weval.report.spool import CompactRecords, FullResults, SpoolRef, SpoolWriter, read_spooled, remove_spools
from pytest_weval.results import ItemResult, KeptResult, Result


def carries_result(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> bool:
    """The report of ``item`` that carries its result: its call's, or its setup's when setup
    did not pass (an item whose result is an error or a skip)."""
    if not isinstance(item, WevalItem) or getattr(item, "weval_result", None) is None:
        return False
    return call.when == "call" or (call.when == "setup" and report.outcome != "passed")


def report_result(report: pytest.TestReport) -> ItemResult | None:
    """The whole result a report carries (texts included), read from its spool; None for a
    report that carries none."""
    ref = getattr(report, "weval_spool", None)
    if ref:
        return read_spooled(SpoolRef.parse(ref))
    data = getattr(report, "weval_result", None)
    return ItemResult.model_validate_json(data) if data else None


def spool_folder(config: pytest.Config) -> Path | None:
    """The run's temporary folder (pytest's ``--basetemp``, which xdist gives each worker below
    the controller's), where the spools wait; None without pytest's tmp_path plugin (a folder
    of its own then)."""
    factory = getattr(config, "_tmp_path_factory", None)
    return Path(factory.getbasetemp()) / "weval-spool" if factory is not None else None


class ItemResults:
    def __init__(self, spool_folder: Callable[[], Path | None] | None = None, *, worker: bool = False):
        self._results: dict[str, Result] = {}  # kept, by node id: a rerun's result replaces the earlier one
        self._spooled: dict[str, SpoolRef] = {}  # where each kept result is whole
        self._spool_paths: dict[str, str] = {}  # one string per spool file, shared by its references
        self._reported: set[str] = set()  # node ids that reported an outcome (what an interrupt left unrun)
        # The kept record and spool place of a report this process made, from its making to its
        # logreport (not on the report: plugins that serialise reports would meet them there).
        self._made_here: dict[str, tuple[KeptResult, SpoolRef]] = {}
        self._spool = SpoolWriter(spool_folder)
        self._records = CompactRecords()
        self._settler = KeptSettler()
        self._last_keywords: tuple[str, object] = ("", None)  # the item's first report's, for its others
        # An xdist worker leaves its spool to the controller, which reads it at the end, and
        # its reports as they are (xdist sends them after this concern has read them).
        self._worker = worker

    @property
    def results(self) -> list[Result]:
        """Every item's kept result (``KeptResult``), the last attempt's when an item was rerun."""
        return list(self._results.values())

    def full(self) -> FullResults:
        """The whole results of ``results``, read back from the spools when asked for."""
        return FullResults(self._spooled)

    def replace(self, results: Iterable[ItemResult]) -> None:
        """Results that gained something after their item ran (the similarity rows)."""
        for result in results:
            self._results[result.nodeid] = self._records.slim(result.compact())

    def not_run(self, collected: int) -> int:
        """How many of the ``collected`` items reported no outcome (the run was stopped)."""
        return max(0, collected - len(self._reported | set(self._results)))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, WevalItem):
            self._share_with_earlier_reports(item, report)
        result = getattr(item, "weval_result", None)
        if isinstance(result, ItemResult) and carries_result(item, call, report):
            self._attach(report, result)
        return report

    def _share_with_earlier_reports(self, item: WevalItem, report: pytest.TestReport) -> None:
        """pytest copies an item's keywords and properties into each of its three reports, and
        keeps every report till the session ends: the three share one dict of keywords and one
        list of properties (1.2 KB an item; nothing of ours changes them after the item's setup)."""
        if report.user_properties == item.user_properties:
            report.user_properties = item.user_properties
        nodeid, keywords = self._last_keywords
        if nodeid == report.nodeid and keywords == report.keywords:
            report.keywords = keywords
        else:  # the item's first report (its reports are made one after another)
            self._last_keywords = (report.nodeid, report.keywords)

    def _attach(self, report: pytest.TestReport, result: ItemResult) -> None:
        try:
            ref = self._spool.add(result)
        except OSError:  # no room for the spool: the whole result rides on the report, as it is kept
            report.weval_result = result.model_dump_json()  # type: ignore[attr-defined]
            return
        report.weval_spool = ref.text()  # type: ignore[attr-defined]
        if self._worker:
            report.weval_result = result.without_texts().model_dump_json(exclude_defaults=True)  # type: ignore[attr-defined]
        else:  # kept by this very process at the report's logreport: no JSON between the two hooks
            self._made_here[report.nodeid] = (result.compact(), ref)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            if isinstance(item, WevalItem):
                item.weval_result = None  # on its report now: the item keeps no texts till the session ends

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The result is kept before the item counts as reported: a signal between the two (its
        # KeyboardInterrupt can come at any line here) then leaves an item both kept and counted
        # as run, never counted as run without its result (``not_run`` takes both sets).
        kept_here = self._made_here.pop(report.nodeid, None)
        if kept_here is not None:
            self._keep_spooled(report, *kept_here)
            self._settler.kept()
        elif data := getattr(report, "weval_result", None):
            self._keep(report, ItemResult.model_validate_json(data))
            self._settler.kept()
        if report.when == "call" or report.outcome != "passed":
            self._reported.add(report.nodeid)

    def _keep(self, report: pytest.TestReport, result: ItemResult) -> None:
        ref = getattr(report, "weval_spool", None)
        if ref:
            self._keep_spooled(report, result.compact(), SpoolRef.parse(ref, self._spool_paths))
            if not self._worker:  # kept here now: pytest keeps every report till the session ends
                del report.weval_result
            return
        if not result.nodeid:
            result.nodeid = report.nodeid
        try:  # a whole result (its process could not spool it): spooled here
            self._spooled[result.nodeid] = self._spool.add(result)
        except OSError:  # nor here: kept whole, and written from memory
            self._spooled.pop(result.nodeid, None)
            self._results[result.nodeid] = result
            return
        self._results[result.nodeid] = self._records.slim(result.compact())

    def _keep_spooled(self, report: pytest.TestReport, compact: KeptResult, ref: SpoolRef) -> None:
        if not compact.nodeid:
            compact.nodeid = report.nodeid
        self._spooled[compact.nodeid] = ref
        self._results[compact.nodeid] = self._records.slim(compact)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self._spool.close()
        if not self._worker:
            remove_spools({ref.path for ref in self._spooled.values()} | {str(self._spool.path or "")} - {""})
