"""pytest-html's report: score, model and prompt columns, and the failure report as an extra.

Registered by ``pytest_configure`` only where pytest-html writes a report (``--html`` given,
not an xdist worker), so its hooks exist and the report is not changed twice. Everything is
read from the test report (the whole result from the spool its ``report.weval_spool`` names,
``report.longreprtext``), which xdist brings to the controller, so a ``-n`` run gets the same
report as a serial one.

pytest_html itself is not imported: an extra is a plain dict (``pytest_html.extras.text``
builds exactly this one), so this module loads whether or not pytest-html is installed.
Registered in every run that writes a pytest-html report (the columns are the page's, whether
or not it holds blueprint items), it loads the report's formatting and the results' model only
for a row that carries a Weval result (docs/engine.md, 'What the plugin costs a run without
blueprints').
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_weval.results import ItemResult

# pytest-html's text for a row without longrepr or captured output (basereport._process_logs).
NO_LOG = "No log output captured."
RESPONSE_CHARS = 600
COLUMNS = (("score", "Score"), ("model", "Model"), ("prompt", "Prompt"))


def _result(report: pytest.TestReport) -> ItemResult | None:
    if not (getattr(report, "weval_spool", None) or getattr(report, "weval_result", None)):
        return None  # not a Weval row: nothing of ours is loaded for it
    from pytest_weval.plugin.item_results import report_result

    return report_result(report)  # whole: the row shows the answer, the extra the reflections


def _passed_text(result: ItemResult) -> str:
    """What a passing item's row shows where pytest-html would say there is no log."""
    from pytest_weval.report._fmt import fmt_score, shorten

    lines = [
        f"Score {fmt_score(result.score)} reaches the pass mark {fmt_score(result.threshold)}.",
        f"  blueprint: {result.blueprint_path} (id {result.blueprint_id})",
        f"  prompt:    {result.prompt_id}",
        f"  model:     {result.effective_model_id}",
    ]
    if result.response:
        lines += ["", "What the model answered:", shorten(result.response, RESPONSE_CHARS)]
    return "\n".join(lines) + "\n"


def _own_text(report: pytest.TestReport) -> str:
    """``report.longreprtext`` without the "[gw0] linux -- Python ..." line that starts every
    report's text on the xdist controller (the report's ``node`` is the worker)."""
    text = report.longreprtext
    return text.partition("\n")[2] if hasattr(report, "node") else text


def _failure_text(report: pytest.TestReport) -> str:
    """A failed item's report as pytest shaped it (--tb, -v); under --tb=line, where the item
    leaves its longrepr empty, the one line the terminal prints instead."""
    text = _own_text(report)
    crash = getattr(report.longrepr, "reprcrash", None)
    if not text.strip() and crash is not None:
        text = f"{crash.path}:{crash.lineno}: {crash.message}"
    return text


class WevalHtml:
    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        # "sortable" makes pytest-html copy each cell's text into the row's data under the name
        # in its "col-<name>" class; the header's data-column-type says which name to sort by.
        cells += [f'<th class="sortable" data-column-type="{name}">{title}</th>' for name, title in COLUMNS]

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        # Every row gets the cells (empty for ordinary tests, and for an item's setup and
        # teardown rows): pytest-html matches cells to headers by position.
        result = _result(report)
        values = ("", "", "")
        if result is not None:
            from pytest_weval.report._fmt import fmt_score

            score = "" if result.score is None else fmt_score(result.score)  # sorts below 0.00
            values = (score, result.effective_model_id, result.prompt_id)
        # One line each: pytest-html reads a cell's text with a regex that stops at a newline.
        cells += [f'<td class="col-{name}">{escape(value)}</td>' for (name, _), value in zip(COLUMNS, values)]

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        # pytest-html's log is the longrepr: a failed item's report, already. A passed item has
        # none, so it would say "No log output captured" (under xdist, only name the worker):
        # say the score first. So would a failed one under --tb=line: say its one line.
        result = _result(report)
        if result is None:
            return
        if report.passed:
            said = _passed_text(result)
        elif report.failed and not _own_text(report).strip():
            said = _failure_text(report)
        else:
            return
        data[:] = [escape(said), *(line for line in data if line != NO_LOG)]

    @pytest.hookimpl(tryfirst=True)  # before pytest-html's (trylast), which turns extras into links
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = _result(report)
        if report.failed and result is not None:
            from pytest_weval.report.failure import explain_error, explain_failure

            # The whole report, whatever --tb the terminal used: the page is read later, at leisure.
            full = explain_failure(result, "full") if result.outcome == "failed" else explain_error(result, "full")
            # pytest_html.extras.text(...), without importing pytest_html
            extra = {
                "name": "weval report",
                "format_type": "text",
                "content": full,
                "mime_type": "text/plain",
                "extension": "txt",
            }
            report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]


def register(config: pytest.Config) -> None:
    """Add the columns when pytest-html writes a report in this process (as it decides; the
    process that reports, never an xdist worker)."""
    if not config.pluginmanager.hasplugin("html"):
        return
    if config.getoption("htmlpath", None):
        config.pluginmanager.register(WevalHtml(), "weval-html")
