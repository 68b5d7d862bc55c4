"""--weval-html in a real browser: a run against the loopback fake server writes the page, and
headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by Selenium) opens it
from a file: every overview cell is there with its score, a click on a cell and then on an item
shows the detail with the answer and every point, nothing is logged to the console and nothing
is requested but the file itself. Serial, under ``-n 2``, and through the ini twin.

Without a browser these tests skip, saying what to install; on CI (``CI`` set) they fail
instead (docs/rulings.md, ruling 24). Screenshots of the overview and of a drill-down go to
``$WEVAL_SCREENSHOTS`` when set, else to the test's temporary folder.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from plugin_helpers import JUDGE_ID, MODEL_ID, Project, answer_rule, judge_rule

from tests.fakeserver import Rule

OTHER = "other-model"
OTHER_ID = f"openai:{OTHER}"
EVIL = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & more'

GREEK = "blueprints/letters/greek.yml"
NUMBERS = "blueprints/numbers.yml"
SUITE = {
    GREEK: f"""\
        title: Greek <letters>
        models: [{MODEL_ID}, {OTHER_ID}]
        ---
        - id: greek
          prompt: Say the first Greek letters.
          should:
            - $contains: alpha
            - $contains: beta
            - Mentions the Greek alphabet
        - id: evil
          prompt: Show me a script tag.
          should:
            - $contains: script
        - id: chat
          messages:
            - user: Name a Greek letter.
            - assistant: null
            - user: And the next one?
          should:
            - $contains: beta
        """,
    NUMBERS: f"""\
        title: Numbers
        models: [{MODEL_ID}, {OTHER_ID}]
        threshold: 0.8
        ---
        - id: count
          prompt: Count to three.
          should:
            - $contains: "1 2 3"
        - id: refused
          prompt: This one is refused.
          should:
            - $contains: anything
        """,
}
RULES = (
    answer_rule("Greek letters", "alpha, beta, gamma"),
    answer_rule("Greek letters", "alpha only", model=OTHER),
    answer_rule("script tag", EVIL),
    answer_rule("Name a Greek letter", "alpha"),
    answer_rule("And the next one", "beta"),
    Rule(contains="Count to three", reply="1 2 3"),
    Rule(model=OTHER, contains="This one is refused", status=401),  # errors: no score
    judge_rule("Mentions the Greek alphabet", "CLASS_EXACT", "It lists alpha and beta, so yes."),
)


# ---------------------------------------------------------------- the browser


def _no_browser(reason: str) -> None:
    message = f"{reason}: the HTML report's browser tests need Chromium and its driver (apt-get install chromium chromium-driver) and selenium (pip install -e '.[test]')"
    if os.environ.get("CI"):
        pytest.fail(message + "; CI is set, so this fails instead of skipping", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _no_browser("selenium is not installed")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        _no_browser("no chromium" if binary is None else "no chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(driver_path)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(what: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _screens(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("WEVAL_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# ---------------------------------------------------------------- the check


def _expected(project: Project) -> tuple[dict[str, Any], dict[str, Any]]:
    """What --weval-out says about the same run: summary.json, and the comparison files by path."""
    summary = project.json("out/summary.json")
    comparisons = {path: project.json(f"out/{name}") for path, name in summary["files"].items()}
    return summary, comparisons


def _check_page(project: Project, page: Path, driver: Any, shots: Path, label: str) -> None:
    from selenium.webdriver.common.by import By

    summary, comparisons = _expected(project)
    url = page.resolve().as_uri()
    driver.get(url)
    _wait(lambda: driver.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))

    # Every blueprint x model cell, with the mean summary.json gives it.
    cells = {c.get_attribute("data-weval-cell"): c for c in driver.find_elements(By.CSS_SELECTOR, "[data-weval-cell]")}
    expected = {f"{bp['path']}|{model}": tally for bp in summary["blueprints"] for model, tally in bp["models"].items()}
    assert set(cells) == set(expected) == {f"{p}|{m}" for p in (GREEK, NUMBERS) for m in (MODEL_ID, OTHER_ID)}
    for key, tally in expected.items():
        cell = cells[key]
        assert cell.is_displayed()
        assert math.isclose(float(cell.get_attribute("data-score")), tally["mean"]), key
        assert cell.text.splitlines()[0] == f"{tally['mean']:.2f}"
        assert cell.text.splitlines()[1] == f"{tally['passed']}/{tally['items'] - tally['skipped']}"
    # Items are drawn when their blueprint is opened, from its compressed block (issue 43): none
    # is in the document at load, and no answer is in the file as it was given.
    assert driver.find_elements(By.CSS_SELECTOR, "[data-weval-item], [data-weval-detail]") == []
    assert "alpha, beta, gamma" not in page.read_text(encoding="utf-8")
    title = driver.find_element(By.CSS_SELECTOR, f'tr[data-name="{GREEK}"] th a').text
    assert title == "Greek <letters>"  # escaped, shown as written
    driver.save_screenshot(str(shots / f"{label}-overview.png"))

    # Sorting by a model's column puts its best blueprint first.
    header = driver.find_element(By.CSS_SELECTOR, f'#weval-overview th[data-sort="{OTHER_ID}"] button')
    header.click()
    group = driver.find_element(By.CSS_SELECTOR, "#weval-group")
    group.click()  # one flat list, sorted
    rows = [r.get_attribute("data-name") for r in driver.find_elements(By.CSS_SELECTOR, "#weval-flat tr.bp-row")]
    by_other = sorted((bp["path"] for bp in summary["blueprints"]), key=lambda p: -expected[f"{p}|{OTHER_ID}"]["mean"])
    assert rows == by_other
    group.click()

    # A cell opens the blueprint's prompts x models grid ...
    cells[f"{GREEK}|{MODEL_ID}"].click()
    _wait(lambda: driver.find_element(By.ID, "weval-blueprint-view").is_displayed())
    items = {c.get_attribute("data-weval-item"): c for c in driver.find_elements(By.CSS_SELECTOR, "[data-weval-item]")}
    greek_items = {i["nodeid"]: i for i in summary["items"] if i["file"] == GREEK}
    assert set(items) == set(greek_items) and len(items) == 6
    for nodeid, item in greek_items.items():
        assert math.isclose(float(items[nodeid].get_attribute("data-score")), item["score"]), nodeid

    # ... and an item its detail: the conversation with the answer, and every point.
    comparison = comparisons[GREEK]
    for prompt_id in ("evil", "greek", "chat"):
        nodeid = f"{GREEK}::{prompt_id}[{MODEL_ID}]"
        driver.find_element(By.CSS_SELECTOR, f'[data-weval-item="{nodeid}"]').click()
        detail = _wait(
            lambda nodeid=nodeid: [
                d
                for d in driver.find_elements(By.CSS_SELECTOR, "[data-weval-detail]")
                if d.get_attribute("data-weval-for") == nodeid and d.is_displayed()
            ]
        )[0]
        text = driver.execute_script("return arguments[0].textContent", detail)
        effective = f"{MODEL_ID}[temp:0]" if f"{MODEL_ID}[temp:0]" in comparison["effectiveModels"] else MODEL_ID
        answer = comparison["allFinalAssistantResponses"][prompt_id][effective]
        assert answer in text
        points = comparison["evaluationResults"]["llmCoverageScores"][prompt_id][effective]["pointAssessments"]
        assert points and all(p["keyPointText"] in text for p in points)
        if prompt_id == "evil":
            assert EVIL in text  # shown as text ...
            assert driver.execute_script("return window.__pwned") is None  # ... never run
        if prompt_id == "greek":
            assert "It lists alpha and beta, so yes." in text  # the judge's reflection
            driver.save_screenshot(str(shots / f"{label}-drilldown.png"))
        if prompt_id == "chat":
            generated = detail.find_elements(By.CSS_SELECTOR, "li.generated")
            assert [g.find_element(By.TAG_NAME, "pre").text for g in generated] == ["alpha", "beta"]

    # An errored item shows its error.
    driver.get(url + "#bp=" + NUMBERS.replace("/", "%2F"))
    refused = f"{NUMBERS}::refused[{OTHER_ID}]"
    _wait(lambda: driver.find_elements(By.CSS_SELECTOR, f'[data-weval-item="{refused}"]'))[0].click()
    detail = _wait(lambda: driver.find_elements(By.CSS_SELECTOR, f'[data-weval-detail][data-weval-for="{refused}"]'))
    assert "Error:" in detail[0].text and "error" in detail[0].text

    # Back to the overview.
    driver.find_element(By.LINK_TEXT, "\u2190 Overview").click()
    _wait(lambda: driver.find_element(By.ID, "weval-overview-view").is_displayed())

    # Nothing on the console, nothing fetched but the file.
    logs = driver.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
    assert driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)") == []
    requested = {
        message["params"]["request"]["url"].split("#")[0]
        for entry in driver.get_log("performance")
        for message in [json.loads(entry["message"])["message"]]
        if message["method"] == "Network.requestWillBeSent"
    }
    assert requested == {url}, requested


def _suite(project: Project) -> None:
    for path, text in SUITE.items():
        project.write(path, text)
    project.rules(*RULES)


@pytest.mark.parametrize(
    ("label", "args", "ini", "sub"),
    [
        ("serial", ("--weval-html=report.html",), (), False),
        ("xdist", ("-n", "2", "--weval-html=report.html"), (), True),
        ("ini", (), ("weval_html = reports/report.html",), False),
    ],
    ids=["serial", "xdist", "ini"],
)
def test_the_html_report_in_a_browser(
    project: Project,
    browser: Any,
    tmp_path_factory: pytest.TempPathFactory,
    label: str,
    args: tuple[str, ...],
    ini: tuple[str, ...],
    sub: bool,
):
    _suite(project)
    project.ini(*ini)
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-out=out", "-rA", *args, sub=sub)
    result.assert_outcomes(passed=7, failed=2, errors=1)
    page = project.path / ("reports/report.html" if ini else "report.html")
    assert page.is_file()
    assert any(line.startswith("weval HTML report written to ") for line in result.outlines)
    shots = _screens(tmp_path_factory.mktemp("shots"))
    _check_page(project, page, browser, shots, label)
    assert (shots / f"{label}-overview.png").stat().st_size > 0
    assert (shots / f"{label}-drilldown.png").stat().st_size > 0


def test_a_damaged_block_is_said_and_the_rest_of_the_page_still_works(project: Project, browser: Any):
    """A blueprint's block that does not inflate (a page cut or edited by hand) shows what went
    wrong in that blueprint's view; the overview and the other blueprints work as before."""
    from selenium.webdriver.common.by import By

    _suite(project)
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-html=report.html").assert_outcomes(passed=7, failed=2, errors=1)
    text = (project.path / "report.html").read_text(encoding="utf-8")
    run = json.loads(re.search(r'<script type="application/json" id="weval-run">(.*?)</script>', text, re.S).group(1))
    damaged = re.sub(
        rf'(<script [^>]*id="{run["blueprints"][GREEK]}"[^>]*>)[^<]*',
        lambda m: m.group(1) + base64.b64encode(b"not deflated").decode(),
        text,
    )
    assert damaged != text
    page = project.path / "damaged.html"
    page.write_text(damaged, encoding="utf-8")
    url = page.resolve().as_uri()
    browser.get(url + "#bp=" + quote(GREEK, safe=""))
    _wait(lambda: browser.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))
    said = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#weval-blueprint-view .error-text"))
    assert "could not be read" in said[0].text and said[0].is_displayed()
    browser.find_element(By.LINK_TEXT, "\u2190 Overview").click()
    _wait(lambda: browser.find_element(By.ID, "weval-overview-view").is_displayed())
    browser.find_element(By.CSS_SELECTOR, f'[data-weval-cell="{NUMBERS}|{MODEL_ID}"]').click()
    items = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "[data-weval-item]"))
    assert {i.get_attribute("data-weval-item") for i in items} == {
        f"{NUMBERS}::{p}[{m}]" for p in ("count", "refused") for m in (MODEL_ID, OTHER_ID)
    }


def test_a_browser_without_decompression_shows_the_overview_and_says_why_a_blueprint_does_not_open(
    project: Project, browser: Any
):
    """Chromium with ``DecompressionStream`` taken away before the page's script runs (as in a
    browser older than Chrome 80 or Safari 16.4): the overview's cells are there, and opening a
    blueprint names what the browser lacks."""
    from selenium.webdriver.common.by import By

    _suite(project)
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-html=report.html").assert_outcomes(passed=7, failed=2, errors=1)
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": "delete window.DecompressionStream;"})
    browser.get((project.path / "report.html").resolve().as_uri())
    _wait(lambda: browser.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "[data-weval-cell][data-score]")) == 4
    browser.find_element(By.CSS_SELECTOR, f'[data-weval-cell="{GREEK}|{MODEL_ID}"]').click()
    said = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#weval-blueprint-view .error-text"))
    assert "this browser has no DecompressionStream" in said[0].text


def test_without_the_option_no_page_is_written(project: Project):
    _suite(project)
    project.run(f"--weval-judges={JUDGE_ID}")
    assert list(project.path.rglob("*.html")) == []


def test_the_page_shows_the_baseline_comparison(
    project: Project, browser: Any, tmp_path_factory: pytest.TempPathFactory
):
    """A second run with --weval-baseline=<the first run's --weval-out>: the other model now
    answers the Greek prompt fully, so its mean rises; the page shows each model's baseline
    mean, difference, p and verdict as summary.json gives them, and links the prompt that moved."""
    from selenium.webdriver.common.by import By

    from pytest_weval.report._fmt import fmt_p, fmt_score
    from pytest_weval.report.baseline import fmt_difference

    _suite(project)
    base = project.run(f"--weval-judges={JUDGE_ID}", "--weval-out=base", "--weval-cache=off")
    base.assert_outcomes(passed=7, failed=2, errors=1)
    better = answer_rule("Greek letters", "alpha, beta, gamma", model=OTHER)
    project.rules(*(better if r == answer_rule("Greek letters", "alpha only", model=OTHER) else r for r in RULES))
    result = project.run(
        f"--weval-judges={JUDGE_ID}",
        "--weval-baseline=base",
        "--weval-out=out",
        "--weval-cache=off",
        "--weval-html=report.html",
    )
    result.assert_outcomes(passed=7, failed=2, errors=1)  # the Greek prompt passed before, at 0.67
    compared = project.json("out/summary.json")["baseline"]
    assert compared["models"][OTHER_ID]["delta"] > 0 and compared["models"][MODEL_ID]["verdict"] == "unchanged"

    url = (project.path / "report.html").resolve().as_uri()
    browser.get(url)
    _wait(lambda: browser.execute_script("return document.documentElement.dataset.wevalReady === 'true'"))
    for model, m in compared["models"].items():
        [shown] = browser.find_elements(By.CSS_SELECTOR, f'#weval-overview th [data-weval-baseline="{model}"]')
        difference = fmt_difference(m["delta"], tuple(m["ci95"]) if m["ci95"] else None)
        assert shown.text == (
            f"baseline {fmt_score(m['baselineMean'])}, difference {difference}, p {fmt_p(m['pHolm'])}, {m['verdict']}"
        )
        row = browser.find_element(By.CSS_SELECTOR, f'#weval-baseline-models tr[data-model="{model}"]')
        assert difference in row.text and m["verdict"] in row.text
    assert "+" in browser.find_element(By.CSS_SELECTOR, f'[data-weval-baseline="{OTHER_ID}"]').text
    facts = browser.find_element(By.ID, "weval-facts").text
    assert "not paired: 0 only in this run, 0 only in the baseline, 1 without a score in one of the runs" in facts
    _shoot = _screens(tmp_path_factory.mktemp("shots")) / "baseline-overview.png"
    browser.save_screenshot(str(_shoot))

    # The prompt that moved is a link to its item.
    [moved] = compared["moved"]
    browser.find_element(By.XPATH, "//summary[starts-with(., 'Prompts that moved most')]").click()
    browser.find_element(By.CSS_SELECTOR, f'#weval-baseline a[href*="{moved["promptId"]}"]').click()
    _wait(
        lambda: [
            d
            for d in browser.find_elements(By.CSS_SELECTOR, "[data-weval-detail]")
            if d.get_attribute("data-weval-for") == moved["nodeid"] and d.is_displayed()
        ]
    )

    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
    assert browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)") == []


SAMPLES_SEED = 1  # a seed under which the 3 samples of "colours" do not all score alike
TURNS_BLUEPRINT = f"""\
title: Turns
models: [{MODEL_ID}]
---
- id: canned
  prompt: What is the capital of France?
  should:
    - $icontains: paris
- id: two-users
  messages:
    - user: first
    - user: second
  should:
    - $contains: whatever
- id: colours
  prompt: Name three colours.
  should:
    - $contains: red
    - $contains: blue
"""


def test_the_detail_says_where_each_answer_came_from_and_which_sample_it_shows(project: Project, browser: Any):
    """Issue 40, item 5: a fixture's answer is labelled as the file's, an item stopped by a
    blueprint mistake shows no made-up answer turn (and never the ``<<error>>`` markers), and
    under --weval-repeat the detail names the sample whose answer and points it shows."""
    from selenium.webdriver.common.by import By

    project.write("blueprints/turns.yml", TURNS_BLUEPRINT)
    project.write("fixtures.json", json.dumps({"responses": {"canned": {"default": "Paris, of course."}}}))
    project.rules(Rule(model=MODEL_ID.split(":", 1)[1], contains="Name three colours", reply="red, green, blue",
                       flaky_term="blue", flaky_rate=0.5, flaky_seed=SAMPLES_SEED))  # fmt: skip
    result = project.run(
        "--weval-fixtures=fixtures.json", "--weval-repeat=3", "--weval-out=out", "--weval-html=report.html", "-rA"
    )
    items = {i["nodeid"]: i for i in project.json("out/summary.json")["items"]}
    colours = f"blueprints/turns.yml::colours[{MODEL_ID}]"
    samples = items[colours].get("samples")  # for the message, should the check below fail
    url = (project.path / "report.html").resolve().as_uri()

    def detail(prompt_id: str) -> Any:
        nodeid = f"blueprints/turns.yml::{prompt_id}[{MODEL_ID}]"
        browser.get(url + "#bp=" + quote("blueprints/turns.yml", safe="") + "&item=" + quote(nodeid, safe=""))
        return _wait(lambda: browser.find_elements(By.CSS_SELECTOR, f'[data-weval-detail][data-weval-for="{nodeid}"]'))[
            0
        ]

    canned = detail("canned")
    [answer] = canned.find_elements(By.CSS_SELECTOR, 'li[data-weval-turn="3"]')
    assert answer.find_element(By.TAG_NAME, "pre").text == "Paris, of course."
    assert "--weval-fixtures file" in answer.text and "generated by the model" not in canned.text

    mistaken = detail("two-users")
    assert "cannot run as written" in mistaken.find_element(By.CSS_SELECTOR, ".error-text").text
    assert "<<error>>" not in mistaken.text and "<</error>>" not in mistaken.text
    assert not mistaken.find_elements(By.CSS_SELECTOR, 'li[data-weval-turn="2"]'), "no answer turn: nothing was asked"
    assert "generation failed" not in mistaken.text

    sampled = detail("colours")
    [shown] = sampled.find_elements(By.CSS_SELECTOR, "[data-weval-shown-sample]")
    scores = [
        float(s)
        for s in sampled.find_element(By.CSS_SELECTOR, "[data-weval-samples]")
        .get_attribute("data-weval-samples")
        .split()
    ]
    assert len(scores) == 3 and len(set(scores)) > 1, (scores, samples, result.stdout.str()[-2000:])
    lowest = scores.index(min(scores)) + 1
    assert shown.get_attribute("data-weval-shown-sample") == str(lowest)
    assert f"sample {lowest}" in shown.text
    # the answer shown is that sample's: it left the flaky term out
    [answered] = sampled.find_elements(By.CSS_SELECTOR, 'li[data-weval-turn="1"]')
    assert "blue" not in answered.find_element(By.TAG_NAME, "pre").text

    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs
