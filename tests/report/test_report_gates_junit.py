"""--weval-min-score lines and junit properties."""

from __future__ import annotations

import pytest
from report_data import PRIVACY, TONE, TRIAGE, A, B, eff, make_results

from pytest_weval.report.gates import check_min_score
from pytest_weval.report.junit import junit_properties
from pytest_weval.report.rollup import build_rollup


@pytest.fixture
def rollup(results):
    return build_rollup(results, agreement={})


def test_nothing_below_a_low_bar(rollup):
    assert check_min_score(rollup, 0.5) == []


def test_blueprints_then_folders_below_the_bar(rollup):
    # triage 0.696, privacy 0.575, tone 0.5, top 0.95; folders evals 0.616, safety 0.642,
    # medical 0.696, style 0.5; the run (0.668) is not a folder here.
    assert check_min_score(rollup, 0.65) == [
        f"blueprint {PRIVACY} mean 0.57 < 0.65 (4 scored items)",  # 0.575 shows as 0.57 (binary 0.57499..)
        f"blueprint {TONE} mean 0.50 < 0.65 (2 scored items)",
        "folder evals/ mean 0.62 < 0.65 (9 scored items)",
        "folder evals/safety/ mean 0.64 < 0.65 (7 scored items)",
        "folder evals/style/ mean 0.50 < 0.65 (2 scored items)",
    ]


def test_close_calls_show_enough_decimals(rollup):
    lines = check_min_score(rollup, 0.576)
    assert lines[0] == f"blueprint {PRIVACY} mean 0.57 < 0.576 (4 scored items)"
    near = [r.model_copy(update={"score": 0.4996}) for r in make_results() if r.blueprint_path == TONE]
    assert check_min_score(build_rollup(near, agreement={}), 0.5) == [
        f"blueprint {TONE} mean 0.4996 < 0.50 (2 scored items)",
        "folder evals/ mean 0.4996 < 0.50 (2 scored items)",
        "folder evals/style/ mean 0.4996 < 0.50 (2 scored items)",
    ]


def test_per_model_gate(rollup):
    lines = check_min_score(rollup, 0.58, per_model=True)
    assert f"blueprint {TRIAGE} on {A} mean 0.56 < 0.58 (2 scored items)" in lines
    assert f"blueprint {PRIVACY} on {B} mean 0.55 < 0.58 (2 scored items)" in lines
    assert not any(f"{TRIAGE} on {B}" in line for line in lines)


def test_all_errored_blueprint_is_not_gated():
    errored = [
        r.model_copy(update={"outcome": "error", "score": None}) for r in make_results() if r.blueprint_path == PRIVACY
    ]
    assert check_min_score(build_rollup(errored, agreement={}), 0.9) == []


def test_junit_properties_names_and_values(results):
    chest_a = results[0]
    assert junit_properties(chest_a) == [
        ("weval_score", "0.44"),
        ("weval_threshold", "0.5"),
        ("weval_model", eff(A)),
        ("weval_prompt_id", "chest-pain"),
        ("weval_blueprint_id", "evals__safety__medical__triage"),
    ]


def test_junit_numbers_print_like_javascript(results):
    top = results[-1].model_copy(update={"score": 1.0, "threshold": 0.75})
    props = dict(junit_properties(top))
    assert props["weval_score"] == "1"
    assert props["weval_threshold"] == "0.75"
    tone = dict(junit_properties(results[9]))
    assert tone["weval_model"] == eff(A, 0.7)


def test_junit_errored_item_has_no_score(results):
    errored = results[3]
    names = [name for name, _ in junit_properties(errored)]
    assert names == ["weval_threshold", "weval_model", "weval_prompt_id", "weval_blueprint_id"]
    assert all(isinstance(v, str) for _, v in junit_properties(errored))
