"""pytest-html: its report gets score, model and prompt columns for our items (empty for
ordinary tests) and each failed item's report as an extra, serial and under xdist alike."""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any

import pytest
from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule

from tests.fakeserver import Rule

BLUEPRINT = f"""\
    title: Letters
    models: [{MODEL_ID}]
    ---
    - id: greek
      prompt: Say the first Greek letters.
      should:
        - $contains: alpha
        - $contains: beta
    - id: latin
      prompt: Say the first Latin letters.
      should:
        - $contains: a b c
        - $contains: d e f
        - $contains: g h i
        - $contains: j k l
    - id: refused
      prompt: This one is refused.
      should:
        - $contains: anything
    """

ORDINARY = """\
    def test_ordinary():
        assert True
    """

PASSING = f"blueprints/letters.yml::greek[{MODEL_ID}]"
FAILING = f"blueprints/letters.yml::latin[{MODEL_ID}]"
ERRORED = f"blueprints/letters.yml::refused[{MODEL_ID}]"


def _project(project: Project) -> None:
    project.write("blueprints/letters.yml", BLUEPRINT)
    project.write("test_ordinary.py", ORDINARY)
    project.rules(
        answer_rule("Greek letters", "alpha, beta, gamma"),
        answer_rule("Latin letters", "a b c, and that is all"),
        Rule(model=MODEL, contains="This one is refused", status=401),  # the item errors, unscored
    )


def _report(project: Project) -> tuple[str, dict[str, Any]]:
    """The report's page and its test data: pytest-html 4 renders the rows in the browser from
    a JSON blob in ``data-jsonblob`` (HTML-escaped), nodeid -> rows."""
    page = (project.path / "report.html").read_text(encoding="utf-8")
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob is not None, page[:2000]
    return page, json.loads(html.unescape(blob.group(1)))["tests"]


def _extra_text(extra: dict[str, Any]) -> str:
    """A self-contained report keeps a text extra as a base64 data: URL."""
    prefix, _, data = extra["content"].partition("base64,")
    assert prefix.startswith("data:text/plain"), extra
    return base64.b64decode(data).decode("utf-8")


def _check(project: Project, result: pytest.RunResult, *, xdist: bool = False) -> None:
    result.assert_outcomes(passed=2, failed=1, errors=1)
    page, tests = _report(project)
    for title in ("Score", "Model", "Prompt"):
        assert f'data-column-type="{title.lower()}">{title}</th>' in page

    [passing] = tests[PASSING]
    assert (passing["result"], passing["score"], passing["model"], passing["prompt"]) == (
        "Passed",
        "1.00",
        f"{MODEL_ID}[temp:0]",
        "greek",
    )
    assert "No log output captured" not in passing["log"]
    assert "Score 1.00 reaches the pass mark 0.50." in passing["log"]
    assert "alpha, beta, gamma" in passing["log"]
    assert passing["extras"] == []  # nothing failed, nothing to attach

    [failing] = tests[FAILING]
    assert (failing["result"], failing["score"], failing["model"], failing["prompt"]) == (
        "Failed",
        "0.25",
        f"{MODEL_ID}[temp:0]",
        "latin",
    )
    assert "No log output captured" not in failing["log"]
    [extra] = failing["extras"]
    assert extra["name"] == "weval report" and extra["format_type"] == "text"
    text = _extra_text(extra)
    assert text.startswith("Score 0.25 is below the pass mark 0.50"), text  # no xdist worker line first
    assert "a b c, and that is all" in text and "d e f" in text
    assert "weval report" in "".join(failing["resultsTableRow"])  # the extra's link, in Links

    # an item that errored (in setup): no score, and its error report as the extra
    [errored] = tests[ERRORED]
    assert (errored["result"], errored["score"], errored["model"], errored["prompt"]) == (
        "Error",
        "",
        f"{MODEL_ID}[temp:0]",
        "refused",
    )
    [extra] = errored["extras"]
    assert _extra_text(extra).startswith("No score: The model provider's API key is missing or was refused.")

    # an ordinary test in the same run: the same columns, empty, and pytest-html's own log
    # (under xdist every report's text starts with the worker's line, so the log is that)
    [ordinary] = tests["test_ordinary.py::test_ordinary"]
    assert (ordinary["result"], ordinary["score"], ordinary["model"], ordinary["prompt"]) == ("Passed", "", "", "")
    if xdist:
        assert ordinary["log"].startswith("[gw"), ordinary["log"]
    else:
        assert ordinary["log"] == "No log output captured."
    assert len(ordinary["resultsTableRow"]) == len(passing["resultsTableRow"]) == 7


def test_html_report_has_weval_columns_and_the_failure_as_an_extra(project: Project):
    _project(project)
    result = project.run("--html=report.html", "--self-contained-html")
    _check(project, result)
    assert len(project.requests()) == 3  # one per item: the report sends nothing


def test_html_report_is_the_same_under_xdist(project: Project):
    _project(project)
    result = project.run("-n", "2", "--html=report.html", "--self-contained-html", sub=True)
    _check(project, result, xdist=True)


@pytest.mark.parametrize("args", [(), ("-p", "no:html")], ids=["no --html", "no pytest-html"])
def test_without_html_report_nothing_is_added(project: Project, args: tuple[str, ...]):
    _project(project)
    project.write(
        "conftest.py",
        """\
        def pytest_runtest_logreport(report):
            assert not hasattr(report, "extras") or report.extras == [], report.extras
        """,
    )
    result = project.run(*args)
    result.assert_outcomes(passed=2, failed=1, errors=1)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_under_tb_line_a_failure_shows_its_one_line(project: Project, xdist: tuple[str, ...]):
    """--tb=line leaves an item's longrepr empty (the terminal prints one line per failure):
    the row's log says that line rather than "No log output captured", and the extra is still
    the whole report, since the page is read later."""
    _project(project)
    project.run("--html=report.html", "--self-contained-html", "--tb=line", *xdist, sub=bool(xdist))
    _, tests = _report(project)
    [failing] = tests[FAILING]
    log = html.unescape(failing["log"]).splitlines()[0]
    assert log.startswith("blueprints/letters.yml:") and "score 0.25 < pass mark 0.50" in log, log
    [extra] = failing["extras"]
    text = _extra_text(extra)
    assert text.startswith("Score 0.25 is below the pass mark 0.50") and "What pulled the score down:" in text
