"""The history's analyses as sections of the HTML report (docs/history.md, 'In the HTML report'):
two runs into one store (SQLite, files, PostgreSQL), hand-worked so that the second has one
regression (a model lost a point), one pain point and three peers' deltas, and the page of the
second shows exactly those, as ``python -m pytest_weval history ... --json`` computes them over
the same store. The page of the first run, with no earlier run, has no such section."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule
from test_plugin_html_report import _wait, browser  # noqa: F401 - the fixture, shared

from pytest_weval.report._fmt import fmt_signed

ROOT = Path(__file__).resolve().parents[2]
OTHER, THIRD = "other-model", "third-model"
OTHER_ID, THIRD_ID = f"openai:{OTHER}", f"openai:{THIRD}"
SUITE = f"""\
title: Words
models: [{MODEL_ID}, {OTHER_ID}, {THIRD_ID}]
---
- id: q1
  prompt: Say the four words. (q1)
  should:
    - $contains: alpha
    - $contains: beta
    - $contains: gamma
    - $contains: delta
"""
# MODEL: 1.0 then 0.75 (it lost "delta": a major regression of the prompt and of that point);
# OTHER: 0.25 both times (a pain point, three points below 0.5); THIRD: 1.0 both times.
# Deltas in run 2: OTHER 0.25 - (0.75 + 1) / 2 = -0.625, MODEL 0.75 - (0.25 + 1) / 2 = +0.125,
# THIRD 1 - (0.75 + 0.25) / 2 = +0.5.
FIRST = [
    answer_rule("(q1)", "alpha beta gamma delta", model=MODEL),
    answer_rule("(q1)", "alpha", model=OTHER),
    answer_rule("(q1)", "alpha beta gamma delta", model=THIRD),
]
SECOND = [
    answer_rule("(q1)", "alpha beta gamma", model=MODEL),
    answer_rule("(q1)", "alpha", model=OTHER),
    answer_rule("(q1)", "alpha beta gamma delta", model=THIRD),
]
Q1 = "blueprints/words.yml::q1[{}]"


class _Rows(HTMLParser):
    """The page's analysis rows: each ``<tr>`` with a ``data-weval-*`` hook, its attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.sections: list[str] = []
        self._row: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "section" and found.get("id"):
            self.sections.append(str(found["id"]))
        if tag == "tr" and any(k.startswith("data-weval-") for k in found):
            self._row = {"attrs": found, "text": []}

    def handle_data(self, data: str) -> None:
        if self._row is not None:
            self._row["text"].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._row is not None:
            self._row["text"] = " ".join(t.strip() for t in self._row["text"] if t.strip())
            self.rows.append(self._row)
            self._row = None


def _page(path: Path) -> _Rows:
    parser = _Rows()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _hooked(page: _Rows, hook: str) -> list[dict[str, Any]]:
    return [r for r in page.rows if f"data-weval-{hook}" in r["attrs"]]


@pytest.fixture(scope="module")
def postgres() -> Iterator[Any]:
    sys.path.insert(0, str(ROOT))
    try:
        import psycopg  # noqa: F401

        from tests.store.pg_server import PostgresServer, find_bin
    except ImportError:
        pytest.skip("psycopg is not installed")
    if find_bin() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; CI must have it", pytrace=False)
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    with PostgresServer() as server:
        yield server


@pytest.fixture(params=["sqlite", "files", "postgres"])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        server = request.getfixturevalue("postgres")
        return str(server.create_database(f"analyses_{os.getpid()}"))
    return request.param


def _command(project: Project, store: str, *args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", store, *args, "--json"],
        cwd=project.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _two_runs(project: Project, store: str = "sqlite") -> None:
    project.write("blueprints/words.yml", SUITE)
    for n, (mode, rules) in enumerate((("rw", FIRST), ("refresh", SECOND)), start=1):
        project.rules(*rules)
        result = project.run(f"--weval-cache={mode}", f"--weval-cache-store={store}", f"--weval-html=report{n}.html")
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.outlines[-15:]


def test_the_page_shows_the_regression_pain_point_and_deltas_of_a_hand_worked_history(
    project: Project, store: str
) -> None:
    _two_runs(project, store)

    first = _page(project.path / "report1.html")
    assert "weval-analyses" not in first.sections  # no earlier run: nothing to analyse against
    page = _page(project.path / "report2.html")
    assert "weval-analyses" in page.sections

    regressions = [
        (r["attrs"]["data-weval-regression"], r["attrs"].get("data-point"), r["attrs"]["data-severity"])
        for r in _hooked(page, "regression")
    ]
    assert regressions == [
        (Q1.format(MODEL_ID), 'Function: contains("delta")', "major"),  # 1 -> 0, the largest first
        (Q1.format(MODEL_ID), None, "major"),  # the prompt: 1 -> 0.75
    ], regressions
    assert "-0.25" in _hooked(page, "regression")[1]["text"]

    [pain] = _hooked(page, "pain")
    assert pain["attrs"]["data-weval-pain"] == Q1.format(OTHER_ID)
    for word in ("beta", "gamma", "delta"):
        assert f'0.00 Function: contains("{word}")' in pain["text"], pain["text"]
    assert "alpha" not in pain["text"]

    deltas = [(r["attrs"]["data-model"], r["text"].split()[0]) for r in _hooked(page, "delta")]
    assert deltas == [(OTHER, fmt_signed(-0.625)), (MODEL, fmt_signed(0.125)), (THIRD, fmt_signed(0.5))], deltas
    assert {r["attrs"]["data-weval-delta"] for r in _hooked(page, "delta")} == {"words prompt q1"}

    # One rule, one place: the page says what the commands say over the same store.
    said = _command(project, store, "regressions")
    assert [(r["nodeid"], r.get("point"), r["severity"]) for r in said["regressions"]] == regressions
    said = _command(project, store, "pain-points")
    assert [p["nodeid"] for p in said["painPoints"]] == [Q1.format(OTHER_ID)]
    said = _command(project, store, "deltas")
    assert [d["model"] for d in said["deltas"]] == [m for m, _ in deltas]


def test_the_sections_show_in_a_browser_under_the_pages_policy(
    project: Project,
    browser: Any,  # noqa: F811 - the fixture imported above
) -> None:
    """Server-rendered, no script of their own: in Chromium the three tables are shown, with
    nothing refused by the page's content security policy."""
    from selenium.webdriver.common.by import By

    _two_runs(project)
    browser.get((project.path / "report2.html").resolve().as_uri())
    _wait(lambda: browser.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))
    for name in ("regressions", "pain-points", "deltas"):
        [table] = browser.find_elements(By.CSS_SELECTOR, f'[data-weval-analysis="{name}"]')
        assert table.is_displayed()
    row = browser.find_element(By.CSS_SELECTOR, f'[data-weval-pain="{Q1.format(OTHER_ID)}"]')
    assert row.is_displayed() and 'contains("delta")' in row.text
    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
