"""Number and text helpers."""

from __future__ import annotations

import pytest

from pytest_weval.report._fmt import fit_left, fmt_compare, fmt_score, js_number, shorten, utf16_key
from pytest_weval.scoring import round2


@pytest.mark.parametrize(
    "value,text",
    [
        (0, "0"),
        (1.0, "1"),
        (-2.0, "-2"),
        (0.5, "0.5"),
        (0.1, "0.1"),
        (0.7, "0.7"),
        (123.456, "123.456"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (0.00001, "0.00001"),
        (2.5e22, "2.5e+22"),
        (float("nan"), "NaN"),
    ],
)
def test_js_number(value, text):
    assert js_number(value) == text


@pytest.mark.parametrize(
    "value,rounded",
    [
        (0.125, 0.13),
        (0.4375, 0.44),
        (1.005, 1.0),
        (0.575, 0.57),
        (0.665, 0.67),
        (2 / 3, 0.67),
        (0, 0),
    ],
)
def test_round2_is_js_tofixed(value, rounded):
    # toFixed rounds the exact binary value half up: 1.005 is 1.00499..., 0.665 is 0.66500...04
    assert round2(value) == rounded


def test_fmt_score():
    assert fmt_score(None) == "—"
    assert fmt_score(1) == "1.00"
    assert fmt_score(0.125) == "0.13"


def test_fmt_compare_adds_decimals_until_visible():
    assert fmt_compare(0.42, 0.5) == ("0.42", "0.50")
    assert fmt_compare(0.4999, 0.5) == ("0.4999", "0.50")
    assert fmt_compare(0.575, 0.576) == ("0.57", "0.576")
    assert fmt_compare(0.49999999, 0.5)[0] != fmt_compare(0.49999999, 0.5)[1]


def test_text_helpers():
    assert shorten("abcdef", 4) == "abc…"
    assert shorten("abc", 4) == "abc"
    assert fit_left("evals/safety/medical/triage.yml", 12) == "…/triage.yml"
    # JavaScript sorts by UTF-16 code units: an astral character sorts before U+FF5E.
    assert sorted(["\uff5e", "\U0001f600"], key=utf16_key) == ["\U0001f600", "\uff5e"]


def test_every_html_section_escapes_through_one_helper() -> None:
    """report/html.py and report/html_history.py escape with ``_fmt.html_text``: markup and
    quotes become entities, a lone surrogate becomes U+FFFD."""
    from pytest_weval.report import html, html_history
    from pytest_weval.report._fmt import html_text

    assert html_text('<a href="x">&\ud800') == "&lt;a href=&quot;x&quot;&gt;&amp;\ufffd"
    assert html._e is html_text and html_history._e is html_text
