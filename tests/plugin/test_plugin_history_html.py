"""The history in the HTML report (docs/history.md), in headless Chromium as the report's other
browser tests: three runs into one store, the third with one model better on one prompt and the
other worse on two. The page draws each model's means over the three runs (``data-points`` as
the three ``summary.json`` give them), lists exactly the items whose score changed, and a click
on one shows the previous and current answers side by side with both scores, point by point.
Without a browser these tests skip (on CI they fail), as the others do."""

from __future__ import annotations

import json
from typing import Any

import pytest
from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule
from test_plugin_html_report import _screens, _wait, browser  # noqa: F401 - the fixture, shared

OTHER = "other-model"
OTHER_ID = f"openai:{OTHER}"
SUITE = f"""\
title: Letters
models: [{MODEL_ID}, {OTHER_ID}]
---
""" + "".join(
    f"""\
- id: q{j}
  prompt: Say alpha and beta. (q{j})
  should:
    - $contains: alpha
    - $contains: beta
"""
    for j in range(1, 5)
)
BEFORE = [answer_rule("(q1)", "alpha, and <b>nothing</b> more", model=MODEL)]
AFTER = [
    answer_rule("(q1)", "alpha and beta, at last", model=MODEL),
    answer_rule("(q2)", "only alpha now", model=OTHER),
    answer_rule("(q3)", "nothing at all", model=OTHER),
]


def test_the_page_shows_trends_changes_and_both_answers(
    project: Project,
    browser: Any,  # noqa: F811 - the fixture imported above
    tmp_path_factory: pytest.TempPathFactory,
):
    from selenium.webdriver.common.by import By

    project.write("blueprints/letters.yml", SUITE)
    project.rules(*BEFORE)
    for n, (mode, rules) in enumerate((("rw", BEFORE), ("refresh", BEFORE), ("refresh", AFTER)), start=1):
        project.rules(*rules)
        result = project.run(f"--weval-cache={mode}", f"--weval-out=out{n}", "--weval-html=report.html")
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.outlines[-10:]
    summaries = [project.json(f"out{n}/summary.json") for n in (1, 2, 3)]
    changed = {c["nodeid"]: c for c in summaries[2]["changes"]["items"]}
    assert set(changed) == {
        f"blueprints/letters.yml::q1[{MODEL_ID}]",
        f"blueprints/letters.yml::q2[{OTHER_ID}]",
        f"blueprints/letters.yml::q3[{OTHER_ID}]",
    }

    url = (project.path / "report.html").resolve().as_uri()
    browser.get(url)
    _wait(lambda: browser.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))

    for model in (MODEL_ID, OTHER_ID):
        [trend] = browser.find_elements(By.CSS_SELECTOR, f'[data-weval-trend="{model}"]')
        assert json.loads(trend.get_attribute("data-points")) == [s["models"][model]["mean"] for s in summaries]
        assert trend.is_displayed() and trend.find_elements(By.CSS_SELECTOR, "svg circle")

    buttons = {
        b.get_attribute("data-weval-change"): b for b in browser.find_elements(By.CSS_SELECTOR, "[data-weval-change]")
    }
    assert set(buttons) == set(changed)  # one per changed item, and no other
    heading = browser.find_element(By.XPATH, "//h2[starts-with(., 'Changed since ')]").text
    assert summaries[2]["changes"]["previousRun"] in heading
    assert not browser.find_elements(By.CSS_SELECTOR, "[data-weval-compare]")

    q1 = f"blueprints/letters.yml::q1[{MODEL_ID}]"
    buttons[q1].click()
    panel = _wait(
        lambda: [p for p in browser.find_elements(By.CSS_SELECTOR, "[data-weval-compare]") if p.is_displayed()]
    )[0]
    assert panel.get_attribute("data-weval-for") == q1
    previous = panel.find_element(By.CSS_SELECTOR, '[data-answer="previous"]').text
    current = panel.find_element(By.CSS_SELECTOR, '[data-answer="current"]').text
    assert (previous, current) == ("alpha, and <b>nothing</b> more", "alpha and beta, at last")  # text, never markup
    said = browser.execute_script("return arguments[0].textContent", panel)  # as written, not as styled
    assert "previous: score 0.50" in said and "current: score 1.00" in said
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "weval-history"))
    browser.save_screenshot(str(_screens(tmp_path_factory.mktemp("shots")) / "history-compare.png"))
    rows = [r.text for r in panel.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert rows == ['Function: contains("alpha") 1.00 1.00', 'Function: contains("beta") 0.00 1.00'], rows

    buttons[f"blueprints/letters.yml::q3[{OTHER_ID}]"].click()
    _wait(
        lambda: (
            browser.find_element(By.CSS_SELECTOR, "[data-weval-compare]").get_attribute("data-weval-for")
            == f"blueprints/letters.yml::q3[{OTHER_ID}]"
        )
    )
    panel = browser.find_element(By.CSS_SELECTOR, "[data-weval-compare]")
    assert panel.find_element(By.CSS_SELECTOR, '[data-answer="current"]').text == "nothing at all"
    assert panel.find_element(By.CSS_SELECTOR, '[data-answer="previous"]').text.startswith(
        "echo: Say alpha and beta. (q3)"
    )

    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
    assert browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)") == []
