"""pytest's terminal summary finds each failed test's teardown reports (and each passed one's,
under ``-rP``/``-rA``) by scanning every setup and teardown report of the session
(``TerminalReporter._get_teardown_reports``): failures times items, after the last test, with
nothing on the screen (pytest-dev/pytest#13360). On the configs repository under ``-n 2``
(11,343 items, 1,200 of them failing) it was 45% of the controller's CPU, 18 s of its 39 s
after the last reply; at 164,118 items with a tenth failing it would be hours.

``index_teardown_reports`` hands a run's reporter the same lookup through an index by node id:
the same reports in the same order, the index built at the first lookup and again whenever
reports were added since. A pytest whose reporter has no such method is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def index_teardown_reports(reporter: Any) -> None:
    """Give ``reporter`` (pytest's ``TerminalReporter``) a teardown lookup by node id."""
    stats = getattr(reporter, "stats", None)
    if not callable(getattr(type(reporter), "_get_teardown_reports", None)) or not isinstance(stats, dict):
        return
    reporter._get_teardown_reports = _indexed_lookup(stats)


def _indexed_lookup(stats: dict[str, list[Any]]) -> Callable[[Any], list[Any]]:
    # pytest 9 looks a test up by its structured id (``report.id``), pytest 8 by its node id string
    by_id: dict[Any, list[Any]] = {}
    by_nodeid: dict[str, list[Any]] = {}
    indexed = -1  # how many of stats[""] the index holds: pytest only ever appends to it

    def teardown_reports(node_id: Any) -> list[Any]:
        nonlocal indexed
        reports = stats.get("", ())
        if len(reports) != indexed:
            by_id.clear()
            by_nodeid.clear()
            for report in reports:
                if report.when == "teardown":
                    by_nodeid.setdefault(report.nodeid, []).append(report)
                    if hasattr(report, "id"):
                        by_id.setdefault(report.id, []).append(report)
            indexed = len(reports)
        found = by_nodeid if isinstance(node_id, str) else by_id
        # as TerminalReporter.getreports, which leaves out a report shown in pdb
        return [report for report in found.get(node_id, ()) if not hasattr(report, "_pdbshown")]

    return teardown_reports
